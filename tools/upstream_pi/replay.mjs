// Replay every recorded stream through upstream Pi's reader (pi-ai's openai-completions provider).
//
// A tiny HTTP server on loopback answers each POST with one recording's bytes, exactly as stored;
// pi-ai's baseUrl points at it, so nothing leaves the machine. Prints (or, with --write, stores)
// what pi-ai made of each stream: pi_course/provider/upstream_pi.json.
import { readFile, writeFile } from "node:fs/promises";
import { createServer } from "node:http";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { stream } from "@mariozechner/pi-ai";

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, "..", "..");
const recordings = join(root, "pi_course", "provider", "recordings");
const output = join(root, "pi_course", "provider", "upstream_pi.json");
const piAi = JSON.parse(
  await readFile(join(here, "node_modules", "@mariozechner", "pi-ai", "package.json"), "utf8"),
);

const index = JSON.parse(await readFile(join(recordings, "index.json"), "utf8"));
let current = null; // the bytes the next POST gets

const server = createServer((request, response) => {
  request.resume();
  request.on("end", () => {
    response.writeHead(200, { "content-type": "text/event-stream" });
    response.end(current);
  });
});
await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
const baseUrl = `http://127.0.0.1:${server.address().port}/v1`;

const model = {
  id: "recorded",
  name: "recorded",
  api: "openai-completions",
  provider: "replay",
  baseUrl,
  reasoning: false,
  input: ["text"],
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
  contextWindow: 128000,
  maxTokens: 4096,
};
const context = { messages: [{ role: "user", content: "x", timestamp: 0 }] };

/** pi-ai's final message in the shape the course's index uses for its own readings. */
function reading(message) {
  const text = message.content.filter((b) => b.type === "text").map((b) => b.text).join("");
  const thinking = message.content.filter((b) => b.type === "thinking").map((b) => b.thinking).join("");
  const calls = message.content
    .filter((b) => b.type === "toolCall")
    .map((b) => ({ id: b.id, name: b.name, arguments: JSON.stringify(b.arguments) }));
  const { input, output, cacheRead, totalTokens } = message.usage;
  const usage = { input, output, total_tokens: totalTokens, cache_read: cacheRead };
  const result = { stop_reason: message.stopReason, text, thinking, tool_calls: calls, usage };
  if (message.errorMessage !== undefined) result.error = message.errorMessage;
  return result;
}

const readings = {};
for (const entry of index.recordings) {
  current = await readFile(join(recordings, entry.file));
  let final = null;
  for await (const event of stream(model, context, { apiKey: "sk-replay", maxRetries: 0 })) {
    if (event.type === "done") final = event.message;
    if (event.type === "error") final = event.error;
  }
  readings[entry.name] = reading(final);
}
server.close();

const stored = { pi_ai: piAi.version, provider: "openai-completions", readings };
const text = JSON.stringify(stored, null, 1) + "\n";
if (process.argv.includes("--write")) await writeFile(output, text);
else process.stdout.write(text);
