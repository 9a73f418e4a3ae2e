"""Practice 5.3 — bytes → SSE events → validated ``ProviderChunk``s.

A network read is not an event (the line buffer), ``unknown`` JSON is narrowed field by field,
and the finish reason waits for the trailing usage before one finish chunk.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterable, AsyncIterator
from typing import NamedTuple, TypedDict, cast

from .payload_reading import PayloadReader, ProviderError, ProviderRefusal, parse_json
from .protocol import Usage, aclose_iterator
from .seam import (
    MAX_SAFE_INTEGER,
    FinishChunk,
    FinishReason,
    InvalidProviderChunk,
    ProviderChunk,
    TextChunk,
    ToolChunk,
    UsageSent,
    carry_usage_sent,
)
from .stream_rules import (
    DEFAULT_MAX_EVENT_SIZE,
    SSEError,
    SSEEvent,
    SSEFieldReader,
    SSETextDecoder,
    check_event_size,
)

__all__ = [
    "DEFAULT_MAX_EVENT_SIZE",
    "InvalidProviderChunk",
    "PartialUsage",
    "PayloadParts",
    "ProviderError",
    "ProviderRefusal",
    "SSEDecoder",
    "SSEError",
    "SSEEvent",
    "iter_provider_chunks",
    "iter_sse_events",
    "parse_json",
    "parse_payload",
    "read_provider_chunks",
]

# --- framing: the line buffer -------------------------------------------------------------------


class SSEDecoder:
    """Sans-IO SSE decoder: each network read in, the events it completes out (often none, or several)."""

    def __init__(self, *, max_event_size: int = DEFAULT_MAX_EVENT_SIZE) -> None:
        self.max_event_size = max_event_size
        self._text = SSETextDecoder()  # given: UTF-8, BOM, every line ending → "\n"
        self._fields = SSEFieldReader()  # given: event, id and comment lines; builds the SSEEvent
        self._buffer = ""  # the line buffer: the start of a line whose "\n" has not arrived
        self._data: list[str] = []  # the data lines of the event being collected

    @property
    def pending(self) -> str:
        """The text of the line still arriving (what the line buffer holds)."""
        return self._buffer

    @property
    def last_id(self) -> str:
        return self._fields.last_id

    def feed(self, chunk: bytes, *, final: bool = False) -> list[SSEEvent]:
        """Lab 5.3: Line buffer: _text.decode, data lines, _fields.read_line/dispatch, check_event_size"""
        # BEGIN LAB 5.3
        self._buffer += self._text.decode(chunk, final=final)
        lines = self._buffer.split("\n")
        self._buffer = lines.pop()  # no "\n" yet: the rest of this line comes with a later read
        data = self._data  # the data lines of the event being collected
        events: list[SSEEvent] = []
        for line in lines:
            if line.startswith("data:"):
                data.append(line[6:] if line.startswith("data: ") else line[5:])
            elif line:
                value = self._fields.read_line(line)  # event:, id:, a comment (a bare "data" gives "")
                if value is not None:
                    data.append(value)
            else:  # a blank line ends the event
                event = self._fields.dispatch(data)
                if event is not None:
                    events.append(event)
                data.clear()
        check_event_size(self._buffer, data, self.max_event_size)
        return events
        # END LAB 5.3

    def close(self) -> list[SSEEvent]:
        """End of input: what the decoder held back still counts; an unterminated event is dropped."""
        events = self.feed(b"", final=True)
        self._buffer, self._data = "", []
        return events


async def iter_sse_events(
    byte_chunks: AsyncIterable[bytes], *, max_event_size: int = DEFAULT_MAX_EVENT_SIZE
) -> AsyncIterator[SSEEvent]:
    """Decode any chunking of an SSE byte stream into events, by the WHATWG event-stream rules."""
    decoder = SSEDecoder(max_event_size=max_event_size)
    async for chunk in byte_chunks:
        for event in decoder.feed(chunk):
            yield event
    for event in decoder.close():
        yield event


# --- the unknown boundary -----------------------------------------------------------------------


class PartialUsage(TypedDict, total=False):
    """The chapter's ``Partial<Usage>``: only the counts a payload carried."""

    input: int
    output: int
    total_tokens: int


class PayloadParts(NamedTuple):
    """What one validated payload carries: content chunks, a finish reason, usage."""

    chunks: list[TextChunk | ToolChunk]
    finish_reason: FinishReason | None
    usage: PartialUsage | None


FINISH_REASONS = ("stop", "length", "tool_calls")


def _record(value: object, path: str) -> dict[str, object]:
    """Lab 5.3: A JSON object (a dict), or InvalidProviderChunk("{path} must be an object")."""
    # BEGIN LAB 5.3
    if not isinstance(value, dict):
        raise InvalidProviderChunk(f"{path} must be an object")
    return value
    # END LAB 5.3


def _string(value: object, path: str) -> str | None:
    """Lab 5.3: An optional string: None when absent or null, else it must be a str."""
    # BEGIN LAB 5.3
    if value is not None and not isinstance(value, str):
        raise InvalidProviderChunk(f"{path} must be a string")
    return value
    # END LAB 5.3


def _token_count(value: object, path: str) -> int:
    """Lab 5.3: A non-negative safe integer as a JSON number: 5 or 5.0 → 5; not 5.5, -1, true, 2**53."""
    # BEGIN LAB 5.3
    if isinstance(value, float) and value.is_integer():
        value = int(value)  # JSON has one number type: 5.0 is the safe integer 5
    if type(value) is not int or not 0 <= value <= MAX_SAFE_INTEGER:  # bool is not a count
        raise InvalidProviderChunk(f"{path} must be a non-negative safe integer")
    return value
    # END LAB 5.3


def _usage(value: object) -> PartialUsage | None:
    """Lab 5.3: usage → PartialUsage holding only the counts present (each a _token_count); None if absent."""
    # BEGIN LAB 5.3
    if value is None:
        return None
    record = _record(value, "usage")
    usage: PartialUsage = {}
    if record.get("prompt_tokens") is not None:
        usage["input"] = _token_count(record["prompt_tokens"], "usage.prompt_tokens")
    if record.get("completion_tokens") is not None:
        usage["output"] = _token_count(record["completion_tokens"], "usage.completion_tokens")
    if record.get("total_tokens") is not None:
        usage["total_tokens"] = _token_count(record["total_tokens"], "usage.total_tokens")
    return usage
    # END LAB 5.3


def _finish_reason(value: object) -> FinishReason | None:
    """Lab 5.3: None, or one of stop / length / tool_calls; anything else names choices[0].finish_reason."""
    # BEGIN LAB 5.3
    if value is None:
        return None
    if value not in FINISH_REASONS:
        shown = json.dumps(value, ensure_ascii=False)
        raise InvalidProviderChunk(f"choices[0].finish_reason {shown} is not one of stop, length, tool_calls")
    return cast(FinishReason, value)
    # END LAB 5.3


def _tool_chunk(item: object, path: str) -> ToolChunk:
    """Lab 5.3: One tool_calls item → ToolChunk: index a _token_count; id, function.name/arguments _string."""
    # BEGIN LAB 5.3
    call = _record(item, path)
    index = _token_count(call.get("index"), f"{path}.index")
    function = call.get("function")
    fields = {} if function is None else _record(function, f"{path}.function")
    call_id = _string(call.get("id"), f"{path}.id")
    name = _string(fields.get("name"), f"{path}.function.name")
    arguments = _string(fields.get("arguments"), f"{path}.function.arguments")
    return ToolChunk(index, call_id, name, arguments)
    # END LAB 5.3


def parse_payload(raw: object) -> PayloadParts:
    """Lab 5.3: One payload → PayloadParts: one choice with a delta, or empty choices carrying usage."""
    # BEGIN LAB 5.3
    payload = _record(raw, "payload")
    choices = payload.get("choices")
    if not isinstance(choices, list):
        raise InvalidProviderChunk("choices must be an array")
    usage = _usage(payload.get("usage"))
    if not choices:  # an empty choices array carries the trailing usage
        if usage is None:
            raise InvalidProviderChunk("choices is empty and the payload carries no usage")
        return PayloadParts([], None, usage)
    if len(choices) > 1:
        raise InvalidProviderChunk(f"choices must hold exactly one choice, got {len(choices)}")
    choice = _record(choices[0], "choices[0]")
    delta = _record(choice.get("delta"), "choices[0].delta")

    chunks: list[TextChunk | ToolChunk] = []
    content = _string(delta.get("content"), "choices[0].delta.content")
    if content:
        chunks.append(TextChunk(content))
    tool_calls = delta.get("tool_calls")
    if tool_calls is not None:
        if not isinstance(tool_calls, list):
            raise InvalidProviderChunk("choices[0].delta.tool_calls must be an array")
        for i, item in enumerate(tool_calls):
            chunks.append(_tool_chunk(item, f"choices[0].delta.tool_calls[{i}]"))
    finish_reason = _finish_reason(choice.get("finish_reason"))
    return PayloadParts(chunks, finish_reason, usage)
    # END LAB 5.3


# --- finish + trailing usage --------------------------------------------------------------------


async def read_provider_chunks(events: AsyncIterable[SSEEvent]) -> AsyncIterator[ProviderChunk]:
    """Lab 5.3: Each event up to [DONE] → parse_payload(parse_json(data)); finish + usage → 1 FinishChunk."""
    # BEGIN LAB 5.3
    finish_reason: FinishReason | None = None
    usage: PartialUsage = {}
    async for event in events:
        if event.data == "[DONE]":
            break
        parts = parse_payload(parse_json(event.data))
        for chunk in parts.chunks:
            yield chunk
        if parts.finish_reason is not None:
            finish_reason = parts.finish_reason  # remembered: the usage may still be on its way
        if parts.usage is not None:
            usage.update(parts.usage)  # a later payload overrides only the counts it carries
    if finish_reason is not None:
        yield FinishChunk(finish_reason, Usage(**usage) if usage else None)
    # END LAB 5.3


def iter_provider_chunks(
    events: AsyncIterable[SSEEvent], *, strict: bool = True, usage_sent: UsageSent | None = None
) -> AsyncIterator[ProviderChunk]:
    """Given: :func:`read_provider_chunks` after the given reading of each payload (``payload_reading``).

    The reader notes the usage the provider sends in ``usage_sent``; without one, an exception out
    of the chunks carries it instead (``seam.usage_sent_by``).
    """
    reader = PayloadReader(read_quirks=not strict, usage_sent=usage_sent)
    chunks = read_provider_chunks(reader.events(events))
    return chunks if usage_sent is not None else _carrying_usage(chunks, reader.usage_sent)


async def _carrying_usage(
    chunks: AsyncIterator[ProviderChunk], sent: UsageSent
) -> AsyncIterator[ProviderChunk]:
    try:
        async for chunk in chunks:
            yield chunk
    except Exception as error:
        carry_usage_sent(error, sent)
        raise
    finally:
        await aclose_iterator(chunks)
