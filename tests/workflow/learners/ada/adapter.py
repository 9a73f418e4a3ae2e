from __future__ import annotations

import json

from .protocol import (
    EMPTY_USAGE,
    AbortError,
    AssistantMessage,
    DoneEvent,
    ErrorEvent,
    StartEvent,
    TextContent,
    TextDeltaEvent,
    ToolCall,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
    Usage,
)


async def stream(self, request, *, signal=None):
    self.requests.append(request)
    for chunk in self.chunks:
        if signal is not None and signal.aborted:
            raise AbortError()
        if isinstance(chunk, BaseException):
            raise chunk
        yield chunk


async def _events(self, context, signal):
    assembly = _Assembly(self.provider, self.model, self.clock())
    yield StartEvent(assembly.snapshot())
    try:
        request = build_request(self.model, context)  # noqa: F821
        async with _closing(self.transport.stream(request, signal=signal)) as chunks:  # noqa: F821
            async for chunk in chunks:
                if signal is not None and signal.aborted:
                    raise AbortError()
                if chunk.type == "text":
                    index = assembly.add_text(chunk.delta)
                    yield TextDeltaEvent(index, chunk.delta, assembly.snapshot())
                elif chunk.type == "tool":
                    index = assembly.add_tool(chunk)
                    yield ToolCallDeltaEvent(index, chunk.arguments_delta or "", assembly.snapshot())
                else:
                    assembly.finish = chunk
    except Exception as error:
        if isinstance(error, AbortError) or (signal is not None and signal.aborted):
            yield ErrorEvent("aborted", assembly.final("aborted", EMPTY_USAGE, "Request was aborted"))
        else:
            yield ErrorEvent(
                "error", assembly.final("error", EMPTY_USAGE, str(error) or type(error).__name__)
            )
        return

    if assembly.finish is None:
        message = "Provider stream ended without a finish chunk"
        yield ErrorEvent("error", assembly.final("error", EMPTY_USAGE, message))
        return
    usage = _normalized(assembly.finish.usage)
    if assembly.finish.reason == "tool_calls":
        for buffer in assembly.tools_in_content_order():
            try:
                arguments = json.loads(buffer["raw"]) if buffer["raw"] else {}
            except ValueError:
                message = f"Tool call {buffer['name']} ({buffer['id']}) has invalid JSON arguments"
                yield ErrorEvent("error", assembly.final("error", usage, message))
                return
            call = ToolCall(buffer["id"], buffer["name"], arguments, buffer["raw"])
            assembly.content[buffer["slot"]] = call
            yield ToolCallEndEvent(buffer["slot"], call, assembly.snapshot())
    stop_reason = {"stop": "stop", "length": "length", "tool_calls": "toolUse"}[assembly.finish.reason]
    yield DoneEvent(stop_reason, assembly.final(stop_reason, usage))


def _normalized(usage):
    if usage is None:
        return EMPTY_USAGE
    total = usage.total_tokens or usage.input + usage.output
    return Usage(usage.input, usage.output, total)


class _Assembly:
    """One request's state: the content slots and what each slot is being built from."""

    def __init__(self, provider, model, timestamp):
        self.provider = provider
        self.model = model
        self.timestamp = timestamp
        self.content = []
        self.text_slot = None
        self.text = ""
        self.tools = {}
        self.finish = None
        self.streaming = AssistantMessage((), provider, model, EMPTY_USAGE, "stop", timestamp)

    def add_text(self, delta):
        if self.text_slot is None:
            self.text_slot = len(self.content)
            self.content.append(None)
        self.text += delta
        self.content[self.text_slot] = TextContent(self.text)
        return self.text_slot

    def add_tool(self, chunk):
        buffer = self.tools.get(chunk.index)
        if buffer is None:
            buffer = {"id": "", "name": "", "raw": "", "slot": len(self.content)}
            self.tools[chunk.index] = buffer
            self.content.append(None)
        if chunk.id:
            buffer["id"] = chunk.id
        if chunk.name:
            buffer["name"] = chunk.name
        buffer["raw"] += chunk.arguments_delta or ""
        self.content[buffer["slot"]] = ToolCall(buffer["id"], buffer["name"], buffer["raw"], buffer["raw"])
        return buffer["slot"]

    def tools_in_content_order(self):
        return sorted(self.tools.values(), key=lambda buffer: buffer["slot"])

    def snapshot(self):
        # The content as it is now; later deltas change self.content, never this tuple.
        return self.streaming.with_content(tuple(self.content))

    def final(self, stop_reason, usage, error=None):
        return AssistantMessage(
            tuple(self.content), self.provider, self.model, usage, stop_reason, self.timestamp, error
        )
