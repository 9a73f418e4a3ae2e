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
    for item in self.chunks:
        if signal and signal.aborted:
            raise AbortError()
        match item:
            case BaseException():
                raise item
            case _:
                yield item


async def _events(self, context, signal):
    # One request's state: the content slots, where the text lives, the tool buffers, the finish.
    content = []
    text_content_index = None
    tool_buffers = {}  # provider index -> [id, name, raw arguments, content slot]
    finish = None
    started = self.clock()

    def message(stop_reason="stop", usage=EMPTY_USAGE, error=None):
        return AssistantMessage(tuple(content), self.provider, self.model, usage, stop_reason, started, error)

    yield StartEvent(message())
    try:
        chunks = self.transport.stream(build_request(self.model, context), signal=signal)  # noqa: F821
        try:
            async for chunk in chunks:
                if signal is not None and signal.aborted:  # checked after every chunk too
                    raise AbortError()
                match chunk:
                    case TextChunk(delta=delta):  # noqa: F821
                        if text_content_index is None:
                            text_content_index = len(content)
                            content.append(TextContent(""))
                        content[text_content_index] = TextContent(content[text_content_index].text + delta)
                        yield TextDeltaEvent(text_content_index, delta, message())
                    case ToolChunk(index=index, id=call_id, name=name, arguments_delta=piece):  # noqa: F821
                        if index not in tool_buffers:
                            tool_buffers[index] = [f"call-{index}", "", "", len(content)]
                            content.append(None)
                        buffer = tool_buffers[index]
                        buffer[0] = call_id or buffer[0]
                        buffer[1] = name or buffer[1]
                        buffer[2] += piece or ""
                        content[buffer[3]] = ToolCall(buffer[0], buffer[1], buffer[2], buffer[2])
                        yield ToolCallDeltaEvent(buffer[3], piece or "", message())
                    case FinishChunk():  # noqa: F821
                        finish = chunk
        finally:
            if hasattr(chunks, "aclose"):
                await chunks.aclose()  # the response is closed before the terminal event goes out
    except Exception as error:
        match error:
            case AbortError():
                yield ErrorEvent("aborted", message("aborted", EMPTY_USAGE, "Request was aborted"))
            case _ if signal is not None and signal.aborted:
                yield ErrorEvent("aborted", message("aborted", EMPTY_USAGE, "Request was aborted"))
            case _:
                yield ErrorEvent("error", message("error", EMPTY_USAGE, str(error) or type(error).__name__))
        return

    if finish is None:
        yield ErrorEvent(
            "error", message("error", EMPTY_USAGE, "Provider stream ended without a finish chunk")
        )
        return
    usage = _normalized(finish.usage)
    match finish.reason:
        case "tool_calls":
            for call_id, name, raw, slot in sorted(tool_buffers.values(), key=lambda buffer: buffer[3]):
                try:
                    arguments = json.loads(raw) if raw else {}
                except ValueError:
                    failure = f"arguments of {name} ({call_id}) are not JSON"
                    yield ErrorEvent("error", message("error", usage, failure))
                    return  # one terminal event, and nothing after it
                content[slot] = ToolCall(call_id, name, arguments, raw)
                yield ToolCallEndEvent(slot, content[slot], message())
            yield DoneEvent("toolUse", message("toolUse", usage))
        case "length":
            yield DoneEvent("length", message("length", usage))
        case _:
            yield DoneEvent("stop", message("stop", usage))


def _normalized(usage):
    match usage:
        case None:
            return EMPTY_USAGE
        case Usage(input=given_input, output=given_output, total_tokens=0):
            return Usage(given_input, given_output, given_input + given_output)
        case _:
            return usage
