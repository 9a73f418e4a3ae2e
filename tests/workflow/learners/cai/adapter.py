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
        if isinstance(chunk, Exception):
            raise chunk
        yield chunk


async def _events(self, context, signal):
    content = []
    text_content_index = None
    tool_buffers = {}
    finish = None
    timestamp = self.clock()

    def snapshot(stop_reason="stop", usage=EMPTY_USAGE, error=None):
        return AssistantMessage(
            tuple(content), self.provider, self.model, usage, stop_reason, timestamp, error
        )

    yield StartEvent(snapshot())
    try:
        request = build_request(self.model, context)  # noqa: F821
        chunks = self.transport.stream(request, signal=signal)
        try:
            async for chunk in chunks:
                if signal is not None and signal.aborted:
                    raise AbortError()
                if chunk.type == "text":
                    if text_content_index is None:
                        text_content_index = len(content)
                        content.append(TextContent(""))
                    content[text_content_index] = TextContent(content[text_content_index].text + chunk.delta)
                    yield TextDeltaEvent(text_content_index, chunk.delta, snapshot())
                elif chunk.type == "tool":
                    if chunk.index not in tool_buffers:
                        tool_buffers[chunk.index] = ToolBuffer(  # noqa: F821
                            id=f"call-{chunk.index}", name="", raw_arguments="", content_index=len(content)
                        )
                        content.append(None)
                    buffer = tool_buffers[chunk.index]
                    if chunk.id:
                        buffer.id = chunk.id
                    if chunk.name:
                        buffer.name = chunk.name
                    if chunk.arguments_delta:
                        buffer.raw_arguments += chunk.arguments_delta
                    content[buffer.content_index] = ToolCall(
                        buffer.id, buffer.name, buffer.raw_arguments, buffer.raw_arguments
                    )
                    yield ToolCallDeltaEvent(buffer.content_index, chunk.arguments_delta or "", snapshot())
                elif chunk.type == "finish":
                    finish = chunk
        finally:
            close = getattr(chunks, "aclose", None)
            if close is not None:
                await close()
    except Exception as error:
        if isinstance(error, AbortError) or (signal is not None and signal.aborted):
            yield ErrorEvent("aborted", snapshot("aborted", EMPTY_USAGE, "Request was aborted"))
        else:
            yield ErrorEvent("error", snapshot("error", EMPTY_USAGE, str(error) or type(error).__name__))
        return

    if finish is None:
        yield ErrorEvent(
            "error", snapshot("error", EMPTY_USAGE, "Provider stream ended without a finish chunk")
        )
        return
    usage = _normalized(finish.usage)
    if finish.reason == "tool_calls":
        for buffer in sorted(tool_buffers.values(), key=lambda b: b.content_index):
            try:
                arguments = json.loads(buffer.raw_arguments or "{}")
            except ValueError:
                message = f"Tool call {buffer.name} ({buffer.id}) has arguments that are not JSON"
                yield ErrorEvent("error", snapshot("error", usage, message))
                return
            call = ToolCall(buffer.id, buffer.name, arguments, buffer.raw_arguments)
            content[buffer.content_index] = call
            yield ToolCallEndEvent(buffer.content_index, call, snapshot())
    stop_reason = {"stop": "stop", "length": "length", "tool_calls": "toolUse"}[finish.reason]
    yield DoneEvent(stop_reason, snapshot(stop_reason, usage))


def _normalized(usage):
    if usage is None:
        return EMPTY_USAGE
    total = usage.total_tokens or usage.input + usage.output
    return Usage(usage.input, usage.output, total)
