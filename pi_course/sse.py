"""Practice 5.3 — bytes → SSE events → validated ``ProviderChunk``s.

Three layers, each testable alone: :func:`iter_sse_events` frames the byte stream (network reads
carry no protocol meaning), :func:`parse_payload` narrows one ``unknown`` JSON payload field by
field, and :func:`iter_provider_chunks` merges the finish reason with the trailing usage.
"""

from __future__ import annotations

import codecs
import json
import json.scanner
from collections.abc import AsyncIterable, AsyncIterator
from itertools import repeat
from operator import itemgetter
from typing import NamedTuple

from .adapter import FinishChunk, FinishReason, ProviderChunk, TextChunk, ToolChunk
from .types import Usage

DEFAULT_MAX_EVENT_SIZE = 16 * 1024 * 1024

# --- framing ------------------------------------------------------------------------------------


class SSEEvent(NamedTuple):
    """One dispatched event. A named tuple: built once per token, so it must be cheap."""

    data: str
    event: str = "message"
    id: str = ""


_new_event = tuple.__new__  # skips NamedTuple's Python-level __new__ on the hot path
_after_data = itemgetter(slice(6, None))  # "data: {...}" → "{...}"


def _data_events(blocks: list[str], last_id: str) -> list[SSEEvent]:
    """One event per ``data: `` block, built without a Python-level loop (this runs per token)."""
    fields = zip(map(_after_data, blocks), repeat("message"), repeat(last_id))
    return list(map(_new_event, repeat(SSEEvent), fields))


class SSEError(Exception):
    """The byte stream cannot be framed (an event larger than the configured bound)."""


class SSEDecoder:
    """Sans-IO WHATWG event-stream decoder: bytes in, complete events out, one read at a time.

    Lines end at CRLF, LF or a lone CR (also when CR and LF arrive in different reads); one
    leading BOM is dropped; UTF-8 is decoded incrementally with U+FFFD for invalid bytes. After
    that normalization the text only uses ``"\n"``, and an event is a block of lines ended by a
    blank line, i.e. by ``"\n\n"``. Text is kept as a list of parts until a blank line can end
    an event, so a huge event is joined once, not once per read.
    """

    def __init__(self, *, max_event_size: int = DEFAULT_MAX_EVENT_SIZE) -> None:
        self.max_event_size = max_event_size
        self.last_id = ""
        self._utf8 = codecs.getincrementaldecoder("utf-8")("replace")
        self._at_start = True
        self._held_cr = False  # a CR at the end of a read may be the first half of a CRLF
        self._parts: list[str] = []
        self._size = 0

    @property
    def pending(self) -> str:
        """The text of the event still arriving (what a line buffer would hold)."""
        return "".join(self._parts) + ("\r" if self._held_cr else "")

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        """Lab 5.3: Take one network read; return the events it completes (often none, often several)."""
        # BEGIN LAB 5.3
        text = self._utf8.decode(chunk)
        if self._at_start and text:
            self._at_start = False
            if text[0] == "\ufeff":
                text = text[1:]
        if self._held_cr:
            text = "\r" + text
            self._held_cr = False
        if "\r" in text:
            if text[-1] == "\r":
                text, self._held_cr = text[:-1], True
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        return self._frame(text)
        # END LAB 5.3

    def close(self) -> list[SSEEvent]:
        """Lab 5.3: End of input: a held CR still ends its line; an unterminated event is dropped."""
        # BEGIN LAB 5.3
        # The decoder's tail holds at most U+FFFD, never a CR; a held CR becomes its line ending.
        tail = self._utf8.decode(b"", final=True) + ("\n" if self._held_cr else "")
        self._held_cr = False
        events = self._frame(tail)
        self._parts, self._size = [], 0
        return events
        # END LAB 5.3

    def _frame(self, text: str) -> list[SSEEvent]:
        """Lab 5.3: Split normalized text into complete events; keep the unfinished rest."""
        # BEGIN LAB 5.3
        parts = self._parts
        if not text:
            return []
        if "\n\n" not in text and not (text[0] == "\n" and parts and parts[-1][-1] == "\n"):
            parts.append(text)
            self._size += len(text)
            self._check_size()
            return []
        parts.append(text)
        buffer = "".join(parts)
        blocks = buffer.split("\n\n")
        rest = blocks.pop()  # after the last blank line: the start of an event still arriving
        self._parts = [rest] if rest else []
        self._size = len(rest)
        self._check_size()
        last_id = self.last_id
        # The usual read holds only one-line `data: ` events: then the only newlines are the
        # blank-line separators and each block starts with "data: ", and no per-line rule applies.
        end, count = len(buffer) - len(rest), len(blocks)
        if (
            buffer.count("\n", 0, end) == 2 * count
            and buffer.startswith("data: ") + buffer.count("\n\ndata: ", 0, end) == count
        ):
            return _data_events(blocks, last_id)
        events: list[SSEEvent] = []
        append = events.append
        for block in blocks:
            if block.startswith("data: ") and "\n" not in block:
                append(_new_event(SSEEvent, (block[6:], "message", last_id)))
            else:
                if (event := self._block(block)) is not None:
                    append(event)
                last_id = self.last_id
        return events
        # END LAB 5.3

    def _check_size(self) -> None:
        if self._size > self.max_event_size:
            raise SSEError(f"SSE event exceeds {self.max_event_size} characters without a blank line")

    def _block(self, block: str) -> SSEEvent | None:
        """Lab 5.3: The general rules, line by line, for a block that ends with a blank line."""
        # BEGIN LAB 5.3
        data: list[str] = []
        event_type = ""
        for line in block.split("\n"):
            if not line or line[0] == ":":
                continue  # a leading blank line dispatches nothing; ":" starts a comment
            name, colon, value = line.partition(":")
            if colon and value[:1] == " ":
                value = value[1:]
            if name == "data":
                data.append(value)
            elif name == "event":
                event_type = value
            elif name == "id" and "\0" not in value:
                self.last_id = value
        if not data:
            return None
        return SSEEvent("\n".join(data), event_type or "message", self.last_id)
        # END LAB 5.3


async def iter_sse_events(
    byte_chunks: AsyncIterable[bytes], *, max_event_size: int = DEFAULT_MAX_EVENT_SIZE
) -> AsyncIterator[SSEEvent]:
    """Decode any chunking of an SSE byte stream into events (see :class:`SSEDecoder`).

    A network read carries no protocol meaning: events are dispatched only at a blank line,
    so an unterminated last event is dropped.
    """
    decoder = SSEDecoder(max_event_size=max_event_size)
    async for chunk in byte_chunks:
        for event in decoder.feed(chunk):
            yield event
    for event in decoder.close():
        yield event


# --- the unknown boundary -----------------------------------------------------------------------


class InvalidProviderChunk(ValueError):
    """A payload that does not have the shape the course relies on; the message names the path."""

    def __init__(self, detail: str) -> None:
        super().__init__(f"Invalid provider chunk: {detail}")


class ProviderError(Exception):
    """The provider reported an error inside the stream (a payload with an ``error`` field)."""


class PayloadParts(NamedTuple):
    """What one validated payload carries: content chunks, maybe a finish reason, maybe usage."""

    chunks: list[TextChunk | ToolChunk]
    finish_reason: FinishReason | None
    usage: Usage | None


_FINISH_REASONS = ("stop", "length", "tool_calls")


def parse_payload(raw: object) -> PayloadParts:
    """Lab 5.3: Narrow one decoded JSON payload from ``unknown`` to :class:`PayloadParts`."""
    # BEGIN LAB 5.3
    if not isinstance(raw, dict):
        raise InvalidProviderChunk("payload must be an object")
    if raw.get("error") is not None:
        raise ProviderError(_provider_error_message(raw["error"]))
    choices = raw.get("choices")
    if not isinstance(choices, list):
        raise InvalidProviderChunk("choices must be an array")
    usage = raw.get("usage")
    if usage is not None:
        usage = _usage(usage)
    if not choices:
        if usage is None:
            raise InvalidProviderChunk("choices is empty and the payload carries no usage")
        return PayloadParts([], None, usage)
    if len(choices) > 1:
        raise InvalidProviderChunk(f"choices must hold one choice, got {len(choices)}")
    choice = choices[0]
    if not isinstance(choice, dict):
        raise InvalidProviderChunk("choices[0] must be an object")
    if "index" in choice:
        _index(choice["index"], "choices[0].index")
    delta = choice.get("delta")
    if not isinstance(delta, dict):
        raise InvalidProviderChunk("choices[0].delta must be an object")

    chunks: list[TextChunk | ToolChunk] = []
    content = delta.get("content")
    if content is not None:
        if not isinstance(content, str):
            raise InvalidProviderChunk("choices[0].delta.content must be a string")
        if content:
            chunks.append(TextChunk(content))
    tool_calls = delta.get("tool_calls")
    if tool_calls is not None:
        if not isinstance(tool_calls, list):
            raise InvalidProviderChunk("choices[0].delta.tool_calls must be an array")
        for i, item in enumerate(tool_calls):
            chunks.append(_tool_chunk(item, f"choices[0].delta.tool_calls[{i}]"))
    finish_reason = choice.get("finish_reason")
    if finish_reason is not None and finish_reason not in _FINISH_REASONS:
        shown = json.dumps(finish_reason, ensure_ascii=False)
        raise InvalidProviderChunk(f"choices[0].finish_reason {shown} is not one of stop, length, tool_calls")
    return PayloadParts(chunks, finish_reason, usage)
    # END LAB 5.3


def _tool_chunk(item: object, path: str) -> ToolChunk:
    """Lab 5.3: Narrow one ``tool_calls`` item to a ToolChunk."""
    # BEGIN LAB 5.3
    if not isinstance(item, dict):
        raise InvalidProviderChunk(f"{path} must be an object")
    index = _index(item.get("index"), f"{path}.index")
    if item.get("type") not in (None, "function"):
        raise InvalidProviderChunk(f'{path}.type must be "function"')
    function = item.get("function")
    if function is None:
        function = {}
    elif not isinstance(function, dict):
        raise InvalidProviderChunk(f"{path}.function must be an object")
    call_id = _optional_str(item.get("id"), f"{path}.id")
    name = _optional_str(function.get("name"), f"{path}.function.name")
    arguments = _optional_str(function.get("arguments"), f"{path}.function.arguments")
    if call_id is None and name is None and arguments is None:
        raise InvalidProviderChunk(f"{path} carries no id, function.name or function.arguments")
    return ToolChunk(index, call_id, name, arguments)
    # END LAB 5.3


def _usage(value: object) -> Usage | None:
    """Lab 5.3: Narrow ``usage`` to Usage: an object of non-negative integer token counts."""
    # BEGIN LAB 5.3
    if value is None:
        return None
    if not isinstance(value, dict):
        raise InvalidProviderChunk("usage must be an object")
    counts = [
        _count(value.get(name), f"usage.{name}")
        for name in ("prompt_tokens", "completion_tokens", "total_tokens")
    ]
    return Usage(*counts)
    # END LAB 5.3


def _index(value: object, path: str) -> int:
    if type(value) is not int or value < 0:  # bool is a subclass of int, and not an index
        raise InvalidProviderChunk(f"{path} must be a non-negative integer")
    return value


def _count(value: object, path: str) -> int:
    return 0 if value is None else _index(value, path)


def _optional_str(value: object, path: str) -> str | None:
    if value is not None and not isinstance(value, str):
        raise InvalidProviderChunk(f"{path} must be a string")
    return value


def _provider_error_message(error: object) -> str:
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return str(error["message"])
    return error if isinstance(error, str) else json.dumps(error, ensure_ascii=False)


_scan_once = json.scanner.make_scanner(json.JSONDecoder())  # type: ignore[arg-type]


def _loads(data: str) -> object:
    """``json.loads`` for one payload, minus its per-call whitespace regexes on the common case."""
    try:
        value, end = _scan_once(data, 0)
        if end == len(data):
            return value
    except (StopIteration, ValueError):
        pass
    try:  # surrounding whitespace, or not JSON at all: the full parser decides
        return json.loads(data)
    except ValueError:
        raise InvalidProviderChunk("data is not valid JSON") from None


# --- finish + trailing usage --------------------------------------------------------------------


async def iter_provider_chunks(events: AsyncIterable[SSEEvent]) -> AsyncIterator[ProviderChunk]:
    """Lab 5.3: Validated chunks from SSE events, ending in one :class:`FinishChunk` when a reason came.

    The finish reason and the usage may arrive in different payloads: remember the reason, keep
    reading, and synthesize the single finish chunk at ``[DONE]`` or at the end of input.
    """
    # BEGIN LAB 5.3
    finish_reason: FinishReason | None = None
    usage: Usage | None = None
    async for event in events:
        if event.data == "[DONE]":
            break
        parts = parse_payload(_loads(event.data))
        if parts.chunks and finish_reason is not None:
            raise InvalidProviderChunk(f"content arrived after finish_reason {finish_reason!r}")
        for chunk in parts.chunks:
            yield chunk
        if parts.finish_reason is not None:
            if finish_reason not in (None, parts.finish_reason):
                raise InvalidProviderChunk(
                    f"finish_reason changed from {finish_reason!r} to {parts.finish_reason!r}"
                )
            finish_reason = parts.finish_reason
        usage = parts.usage or usage
    if finish_reason is not None:
        yield FinishChunk(finish_reason, usage)
    # END LAB 5.3
