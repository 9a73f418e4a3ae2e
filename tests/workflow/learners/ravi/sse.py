from __future__ import annotations

import json
from collections.abc import AsyncIterable, AsyncIterator
from typing import cast

from .payload_reading import parse_json
from .protocol import Usage, aclose_iterator
from .seam import (
    MAX_SAFE_INTEGER,
    FinishChunk,
    FinishReason,
    InvalidProviderChunk,
    ProviderChunk,
    TextChunk,
    ToolChunk,
)
from .sse import FINISH_REASONS, PartialUsage, PayloadParts  # given in this module
from .stream_rules import (
    SSEEvent,
    check_event_size,
)


class SSEDecoder:
    def feed(self, chunk: bytes, *, final: bool = False) -> list[SSEEvent]:
        """Lab 5.3: Line buffer: _text.decode, data lines, _fields.read_line/dispatch, check_event_size"""
        text = self._text.decode(chunk, final=final)
        if not text:
            return []
        # Only complete lines leave the buffer; the tail (no "\n" yet) waits for the next read.
        *lines, self._buffer = (self._buffer + text).split("\n")
        events: list[SSEEvent] = []
        for line in lines:
            if line:
                value = self._fields.read_line(line)
                if value is not None:
                    self._data.append(value)
                continue
            event = self._fields.dispatch(self._data)  # a blank line ends the event
            self._data = []
            if event is not None:
                events.append(event)
        check_event_size(self._buffer, self._data, self.max_event_size)
        return events


_USAGE_FIELDS = (
    ("prompt_tokens", "input"),
    ("completion_tokens", "output"),
    ("total_tokens", "total_tokens"),
)


def _record(value: object, path: str) -> dict[str, object]:
    """Lab 5.3: A JSON object (a dict), or InvalidProviderChunk("{path} must be an object")."""
    if not isinstance(value, dict):
        raise InvalidProviderChunk(f"{path} must be an object")
    return cast(dict[str, object], value)


def _string(value: object, path: str) -> str | None:
    """Lab 5.3: An optional string: None when absent or null, else it must be a str."""
    if value is None or isinstance(value, str):
        return value
    raise InvalidProviderChunk(f"{path} must be a string")


def _token_count(value: object, path: str) -> int:
    """Lab 5.3: A non-negative safe integer as a JSON number: 5 or 5.0 → 5; not 5.5, -1, true, 2**53."""
    # bool is an int subclass: JSON true must not pass as 1.
    if type(value) is float and value.is_integer():
        value = int(value)
    if type(value) is int and 0 <= value <= MAX_SAFE_INTEGER:
        return value
    raise InvalidProviderChunk(f"{path} must be a non-negative safe integer")


def _usage(value: object) -> PartialUsage | None:
    """Lab 5.3: usage → PartialUsage holding only the counts present (each a _token_count); None if absent."""
    if value is None:
        return None
    record = _record(value, "usage")
    usage: PartialUsage = {}
    for wire, name in _USAGE_FIELDS:
        if record.get(wire) is not None:
            usage[name] = _token_count(record[wire], f"usage.{wire}")  # type: ignore[literal-required]
    return usage


def _finish_reason(value: object) -> FinishReason | None:
    """Lab 5.3: None, or one of stop / length / tool_calls; anything else names choices[0].finish_reason."""
    if value is None:
        return None
    if isinstance(value, str) and value in FINISH_REASONS:
        return cast(FinishReason, value)
    raise InvalidProviderChunk(
        f"choices[0].finish_reason must be one of {', '.join(FINISH_REASONS)}, got {json.dumps(value)}"
    )


def _tool_chunk(item: object, path: str) -> ToolChunk:
    """Lab 5.3: One tool_calls item → ToolChunk: index a _token_count; id, function.name/arguments _string."""
    call = _record(item, path)
    index = _token_count(call.get("index"), f"{path}.index")
    call_id = _string(call.get("id"), f"{path}.id")
    function = call.get("function")
    if function is None:
        return ToolChunk(index, call_id)
    fields = _record(function, f"{path}.function")
    return ToolChunk(
        index,
        call_id,
        _string(fields.get("name"), f"{path}.function.name"),
        _string(fields.get("arguments"), f"{path}.function.arguments"),
    )


def parse_payload(raw: object) -> PayloadParts:
    """Lab 5.3: One payload → PayloadParts: one choice with a delta, or empty choices carrying usage."""
    payload = _record(raw, "payload")
    choices = payload.get("choices")
    if not isinstance(choices, list):
        raise InvalidProviderChunk("choices must be an array")
    usage = _usage(payload.get("usage"))
    if not choices:
        if usage is None:
            raise InvalidProviderChunk("choices is empty and the payload carries no usage")
        return PayloadParts([], None, usage)
    if len(choices) != 1:
        raise InvalidProviderChunk(f"choices must hold exactly one choice, got {len(choices)}")
    choice = _record(choices[0], "choices[0]")
    delta = _record(choice.get("delta"), "choices[0].delta")
    chunks: list[TextChunk | ToolChunk] = []
    content = _string(delta.get("content"), "choices[0].delta.content")
    if content is not None:
        chunks.append(TextChunk(content))
    tool_calls = delta.get("tool_calls")
    if tool_calls is not None:
        if not isinstance(tool_calls, list):
            raise InvalidProviderChunk("choices[0].delta.tool_calls must be an array")
        chunks.extend(
            _tool_chunk(item, f"choices[0].delta.tool_calls[{position}]")
            for position, item in enumerate(tool_calls)
        )
    return PayloadParts(chunks, _finish_reason(choice.get("finish_reason")), usage)


async def read_provider_chunks(events: AsyncIterable[SSEEvent]) -> AsyncIterator[ProviderChunk]:
    """Lab 5.3: Each event up to [DONE] → parse_payload(parse_json(data)); finish + usage → 1 FinishChunk."""
    finish_reason: FinishReason | None = None
    usage: PartialUsage = {}
    iterator = aiter(events)
    try:
        async for event in iterator:
            if event.data == "[DONE]":
                break
            parts = parse_payload(parse_json(event.data))
            for chunk in parts.chunks:
                yield chunk
            if parts.finish_reason is not None:
                finish_reason = parts.finish_reason  # remembered: the usage may still be on its way
            if parts.usage:
                usage.update(parts.usage)
    finally:
        await aclose_iterator(iterator)
    if finish_reason is not None:
        yield FinishChunk(finish_reason, Usage(**usage) if usage else None)
