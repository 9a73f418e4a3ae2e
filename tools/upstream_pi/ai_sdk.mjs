// Drive the course's embedded provider with the Vercel AI SDK (`ai` + `@ai-sdk/openai-compatible`).
//
// Usage: node ai_sdk.mjs BASE_URL MODEL...  Prints, per model, what the SDK made of the stream:
// the text, the tool calls, the finish reason, the usage and any error, as one JSON object.
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { jsonSchema, streamText, tool } from "ai";

const [baseURL, ...models] = process.argv.slice(2);
const provider = createOpenAICompatible({
  name: "pi-course-local",
  baseURL,
  apiKey: "pi-course-local-key",
  includeUsage: true,
});
const tools = {
  read: tool({
    description: "Read a file",
    inputSchema: jsonSchema({ type: "object", properties: { path: { type: "string" } } }),
  }),
  search: tool({
    description: "Search the files",
    inputSchema: jsonSchema({ type: "object", properties: { query: { type: "string" } } }),
  }),
};

async function read(model) {
  const seen = { text: "", tool_calls: [], finish_reason: null, usage: null, errors: [], parts: [] };
  const result = streamText({
    model: provider.chatModel(model),
    prompt: "读取 README.md",
    tools,
    maxRetries: 0,
    onError: () => {}, // errors are read from the stream's parts below
  });
  try {
    for await (const part of result.fullStream) {
      if (!seen.parts.includes(part.type)) seen.parts.push(part.type);
      if (part.type === "text-delta") seen.text += part.text;
      if (part.type === "tool-call") seen.tool_calls.push({ id: part.toolCallId, name: part.toolName, input: part.input });
      if (part.type === "finish") {
        seen.finish_reason = part.finishReason;
        seen.usage = { input: part.totalUsage.inputTokens ?? null, output: part.totalUsage.outputTokens ?? null };
      }
      if (part.type === "error") seen.errors.push(describe(part.error));
    }
  } catch (error) {
    seen.errors.push(describe(error));
  }
  return seen;
}

function describe(error) {
  const status = error?.statusCode ? `HTTP ${error.statusCode}: ` : "";
  const message = `${error?.message ?? String(error)}`.split("\n")[0];
  return `${status}${message}`;
}

const readings = {};
for (const model of models) readings[model] = await read(model);
process.stdout.write(JSON.stringify(readings, null, 1) + "\n");
