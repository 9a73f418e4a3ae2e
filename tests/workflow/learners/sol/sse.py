from __future__ import annotations

import json
from collections.abc import AsyncIterable, AsyncIterator
from typing import cast

from .payload_reading import parse_json
from .protocol import Usage
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
        *lines, self._buffer = (self._buffer + self._text.decode(chunk, final=final)).split("\n")
        events = [event for line in lines if (event := self._line(line)) is not None]
        check_event_size(self._buffer, self._data, self.max_event_size)
        return events

    def _line(self, line: str) -> SSEEvent | None:
        """One complete line: a blank one dispatches the data collected, any other may add a data line."""
        if not line:
            data, self._data = self._data, []
            return self._fields.dispatch(data)
        value = self._fields.read_line(line)
        if value is not None:
            self._data.append(value)
        return None


_USAGE_FIELDS = (
    ("prompt_tokens", "input"),
    ("completion_tokens", "output"),
    ("total_tokens", "total_tokens"),
)


DONE = "[DONE]"


def _record(value: object, path: str) -> dict[str, object]:
    """Lab 5.3: A JSON object (a dict), or InvalidProviderChunk("{path} must be an object")."""
    if isinstance(value, dict):
        return cast(dict[str, object], value)
    raise InvalidProviderChunk(f"{path} must be an object")


def _string(value: object, path: str) -> str | None:
    """Lab 5.3: An optional string: None when absent or null, else it must be a str."""
    match value:
        case None | str():
            return value
    raise InvalidProviderChunk(f"{path} must be a string")


def _token_count(value: object, path: str) -> int:
    """Lab 5.3: A non-negative safe integer as a JSON number: 5 or 5.0 → 5; not 5.5, -1, true, 2**53."""
    match value:
        case float() if value.is_integer() and 0 <= value <= MAX_SAFE_INTEGER:
            return int(value)
        case int() if type(value) is int and 0 <= value <= MAX_SAFE_INTEGER:
            return value
    raise InvalidProviderChunk(f"{path} must be a non-negative safe integer")


def _usage(value: object) -> PartialUsage | None:
    """Lab 5.3: usage → PartialUsage holding only the counts present (each a _token_count); None if absent."""
    if value is None:
        return None
    usage = _record(value, "usage")
    return cast(
        PartialUsage,
        {
            name: _token_count(usage[wire], f"usage.{wire}")
            for wire, name in _USAGE_FIELDS
            if usage.get(wire) is not None
        },
    )


def _finish_reason(value: object) -> FinishReason | None:
    """Lab 5.3: None, or one of stop / length / tool_calls; anything else names choices[0].finish_reason."""
    if value is None or value in FINISH_REASONS:
        return cast(FinishReason | None, value)
    raise InvalidProviderChunk(
        f"choices[0].finish_reason must be one of stop, length, tool_calls (got {json.dumps(value, ensure_ascii=False)})"
    )


def _tool_chunk(item: object, path: str) -> ToolChunk:
    """Lab 5.3: One tool_calls item → ToolChunk: index a _token_count; id, function.name/arguments _string."""
    call = _record(item, path)
    function = {} if call.get("function") is None else _record(call["function"], f"{path}.function")
    return ToolChunk(
        _token_count(call.get("index"), f"{path}.index"),
        _string(call.get("id"), f"{path}.id"),
        _string(function.get("name"), f"{path}.function.name"),
        _string(function.get("arguments"), f"{path}.function.arguments"),
    )


def parse_payload(raw: object) -> PayloadParts:
    """Lab 5.3: One payload → PayloadParts: one choice with a delta, or empty choices carrying usage."""
    payload = _record(raw, "payload")
    choices = payload.get("choices")
    if not isinstance(choices, list):
        raise InvalidProviderChunk("choices must be an array")
    usage = _usage(payload.get("usage"))
    match choices:
        case []:
            if usage is None:
                raise InvalidProviderChunk("choices is empty and the payload carries no usage")
            return PayloadParts([], None, usage)
        case [only]:
            choice = _record(only, "choices[0]")
        case _:
            raise InvalidProviderChunk(f"choices must hold exactly one choice, not {len(choices)}")
    delta = _record(choice.get("delta"), "choices[0].delta")
    content = _string(delta.get("content"), "choices[0].delta.content")
    tool_calls = delta.get("tool_calls")
    if tool_calls is not None and not isinstance(tool_calls, list):
        raise InvalidProviderChunk("choices[0].delta.tool_calls must be an array")
    return PayloadParts(
        [
            *([TextChunk(content)] if content else []),
            *(
                _tool_chunk(item, f"choices[0].delta.tool_calls[{i}]")
                for i, item in enumerate(tool_calls or [])
            ),
        ],
        _finish_reason(choice.get("finish_reason")),
        usage,
    )


async def read_provider_chunks(events: AsyncIterable[SSEEvent]) -> AsyncIterator[ProviderChunk]:
    """Lab 5.3: Each event up to [DONE] → parse_payload(parse_json(data)); finish + usage → 1 FinishChunk."""
    reason: FinishReason | None = None
    usage: PartialUsage = {}
    async for event in events:
        if event.data == DONE:
            break
        parts = parse_payload(parse_json(event.data))
        for chunk in parts.chunks:
            yield chunk
        reason = parts.finish_reason or reason
        usage = {**usage, **(parts.usage or {})}
    if reason is not None:
        yield FinishChunk(reason, Usage(**usage) if usage else None)
