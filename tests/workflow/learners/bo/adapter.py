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
    position = 0
    while position < len(self.chunks):
        if signal and signal.aborted:
            raise AbortError()
        item = self.chunks[position]
        position += 1
        if isinstance(item, BaseException):
            raise item
        yield item


async def _events(self, context, signal):
    slots = []  # one mutable dict per content block, in order of first appearance
    slot_of_tool = {}  # provider tool index -> slot number
    text_slot = None
    finish = None
    started = self.clock()

    def message(stop_reason="stop", usage=EMPTY_USAGE, error=None):
        return AssistantMessage(_freeze(slots), self.provider, self.model, usage, stop_reason, started, error)

    yield StartEvent(message())
    chunks = self.transport.stream(build_request(self.model, context), signal=signal)  # noqa: F821
    try:
        async for chunk in chunks:
            if signal and signal.aborted:
                raise AbortError()
            if isinstance(chunk, TextChunk):  # noqa: F821
                if text_slot is None:
                    text_slot = len(slots)
                    slots.append({"kind": "text", "text": ""})
                slots[text_slot]["text"] += chunk.delta
                yield TextDeltaEvent(text_slot, chunk.delta, message())
            elif isinstance(chunk, ToolChunk):  # noqa: F821
                if chunk.index not in slot_of_tool:
                    slot_of_tool[chunk.index] = len(slots)
                    slots.append({"kind": "tool", "id": "", "name": "", "raw": "", "arguments": None})
                slot = slots[slot_of_tool[chunk.index]]
                slot["id"] = chunk.id or slot["id"]
                slot["name"] = chunk.name or slot["name"]
                slot["raw"] += chunk.arguments_delta or ""
                yield ToolCallDeltaEvent(slot_of_tool[chunk.index], chunk.arguments_delta or "", message())
            else:
                finish = chunk
    except Exception as error:
        reason = "aborted" if isinstance(error, AbortError) or (signal and signal.aborted) else "error"
        text = "Request was aborted" if reason == "aborted" else (str(error) or repr(error))
        yield ErrorEvent(reason, message(reason, EMPTY_USAGE, text))
        return
    finally:
        closer = getattr(chunks, "aclose", None)
        if closer is not None:
            await closer()

    if finish is None:
        yield ErrorEvent(
            "error", message("error", EMPTY_USAGE, "Provider stream ended without a finish chunk")
        )
        return
    usage = _normalized(finish.usage)
    if finish.reason == "tool_calls":
        for number, slot in enumerate(slots):
            if slot["kind"] != "tool":
                continue
            try:
                slot["arguments"] = json.loads(slot["raw"] or "{}")
            except json.JSONDecodeError as problem:
                text = f"Invalid JSON arguments for tool {slot['name']}: {problem}"
                yield ErrorEvent("error", message("error", usage, text))
                return
            frozen = _freeze(slots)
            yield ToolCallEndEvent(number, frozen[number], message())
    reason = "toolUse" if finish.reason == "tool_calls" else finish.reason
    yield DoneEvent(reason, message(reason, usage))


def _normalized(usage):
    if usage is None:
        return Usage()
    return Usage(
        usage.input, usage.output, usage.total_tokens if usage.total_tokens else usage.input + usage.output
    )


def _freeze(slots):
    """The immutable content blocks for the slots as they are now."""
    blocks = []
    for slot in slots:
        if slot["kind"] == "text":
            blocks.append(TextContent(slot["text"]))
        elif slot["arguments"] is None:
            blocks.append(ToolCall(slot["id"], slot["name"], slot["raw"], slot["raw"]))
        else:
            blocks.append(ToolCall(slot["id"], slot["name"], slot["arguments"], slot["raw"]))
    return tuple(blocks)
