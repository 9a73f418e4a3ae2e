from __future__ import annotations

import json

from .adapter import FinishChunk, TextChunk, ToolChunk
from .protocol import Usage
from .stream_rules import DEFAULT_MAX_EVENT_SIZE, SSEError, SSEEvent

BOM = b"\xef\xbb\xbf"
CR, LF = 0x0D, 0x0A


class SSEDecoder:
    """Sans-IO SSE decoder: bytes in, complete events out (dan's own framing, on bytes)."""

    def __init__(self, *, max_event_size=DEFAULT_MAX_EVENT_SIZE):
        self.max_event_size = max_event_size
        self._line = bytearray()  # the line still arriving, as bytes: decoded once it is complete
        self._head = bytearray()  # the first bytes of the stream, until the BOM question is settled
        self._settled = False
        self._after_cr = False  # the last byte seen was CR: a LF right after it belongs to it
        self._data = []
        self._event = ""
        self._last_id = ""

    @property
    def pending(self):
        return self._line.decode("utf-8", "ignore")

    @property
    def last_id(self):
        return self._last_id

    def feed(self, chunk, *, final=False):
        data = bytes(chunk)
        if not self._settled:
            self._head += data
            if len(self._head) < len(BOM) and BOM.startswith(bytes(self._head)) and not final:
                return []  # maybe a BOM, cut by the read: wait for more bytes
            data = bytes(self._head)
            self._head.clear()
            self._settled = True
            if data.startswith(BOM):
                data = data[len(BOM) :]
        events = []
        at = 0
        while at < len(data):
            if self._after_cr:
                self._after_cr = False
                if data[at] == LF:
                    at += 1
                    continue
            ends = [found for found in (data.find(b"\r", at), data.find(b"\n", at)) if found != -1]
            if not ends:
                self._line += data[at:]
                break
            end = min(ends)
            self._line += data[at:end]
            self._after_cr = data[end] == CR
            at = end + 1
            line = self._line.decode("utf-8", "replace")
            self._line.clear()
            match self._take(line):
                case SSEEvent() as event:
                    events.append(event)
        if len(self._line) + sum(map(len, self._data)) > self.max_event_size:
            raise SSEError(f"SSE event exceeds {self.max_event_size} characters without a blank line")
        return events

    def close(self):
        events = self.feed(b"", final=True)
        self._line.clear()
        self._data = []
        return events

    def _take(self, line):
        match line.partition(":"):
            case ("", "", ""):
                return self._dispatch()
            case ("", ":", _):
                return None  # a comment
            case (name, ":", value):
                self._field(name, value.removeprefix(" "))
            case (name, _, _):
                self._field(name, "")
        return None

    def _field(self, name, value):
        match name:
            case "data":
                self._data.append(value)
            case "event":
                self._event = value
            case "id" if "\0" not in value:
                self._last_id = value

    def _dispatch(self):
        data, self._data = self._data, []
        kind, self._event = self._event or "message", ""
        if not data:
            return None
        return SSEEvent("\n".join(data), kind, self._last_id)


def _record(value, path):
    match value:
        case dict():
            return value
    raise InvalidProviderChunk(f"{path} must be an object")  # noqa: F821


def _string(value, path):
    match value:
        case None | str():
            return value
    raise InvalidProviderChunk(f"{path} must be a string")  # noqa: F821


def _token_count(value, path):
    match value:
        case bool():
            pass
        case int() if 0 <= value <= MAX_SAFE_INTEGER:  # noqa: F821
            return value
        case float() if value.is_integer() and 0 <= value <= MAX_SAFE_INTEGER:  # noqa: F821
            return int(value)
    raise InvalidProviderChunk(f"{path} must be a non-negative safe integer")  # noqa: F821


def _usage(value):
    if value is None:
        return None
    record = _record(value, "usage")
    usage = {}
    for wire, ours in (
        ("prompt_tokens", "input"),
        ("completion_tokens", "output"),
        ("total_tokens", "total_tokens"),
    ):
        match record.get(wire):
            case None:
                pass
            case count:
                usage[ours] = _token_count(count, f"usage.{wire}")
    return usage


def _finish_reason(value):
    match value:
        case None | "stop" | "length" | "tool_calls":
            return value
    raise InvalidProviderChunk(  # noqa: F821
        f"choices[0].finish_reason {json.dumps(value, ensure_ascii=False)} is not stop, length or tool_calls"
    )


def _tool_chunk(item, path):
    call = _record(item, path)
    match call.get("function"):
        case None:
            function = {}
        case other:
            function = _record(other, f"{path}.function")
    return ToolChunk(
        _token_count(call.get("index"), f"{path}.index"),
        _string(call.get("id"), f"{path}.id"),
        _string(function.get("name"), f"{path}.function.name"),
        _string(function.get("arguments"), f"{path}.function.arguments"),
    )


def parse_payload(raw):
    payload = _record(raw, "payload")
    match payload.get("choices"):
        case list() as choices:
            pass
        case _:
            raise InvalidProviderChunk("choices must be an array")  # noqa: F821
    usage = _usage(payload.get("usage"))
    match choices:
        case [] if usage is not None:
            return PayloadParts([], None, usage)  # noqa: F821
        case []:
            raise InvalidProviderChunk("choices is empty, yet the payload carries no usage")  # noqa: F821
        case [only]:
            choice = _record(only, "choices[0]")
        case _:
            raise InvalidProviderChunk(f"choices must hold one choice, not {len(choices)}")  # noqa: F821
    delta = _record(choice.get("delta"), "choices[0].delta")
    chunks = []
    match _string(delta.get("content"), "choices[0].delta.content"):
        case str() as words if words:
            chunks.append(TextChunk(words))
    match delta.get("tool_calls"):
        case None:
            pass
        case list() as calls:
            chunks += [_tool_chunk(call, f"choices[0].delta.tool_calls[{i}]") for i, call in enumerate(calls)]
        case _:
            raise InvalidProviderChunk("choices[0].delta.tool_calls must be an array")  # noqa: F821
    return PayloadParts(chunks, _finish_reason(choice.get("finish_reason")), usage)  # noqa: F821


async def read_provider_chunks(events):
    reason = None
    counts = {}
    async for event in events:
        match event.data:
            case "[DONE]":
                break
            case data:
                parts = parse_payload(parse_json(data))  # noqa: F821
                for chunk in parts.chunks:
                    yield chunk
                reason = parts.finish_reason or reason
                counts |= parts.usage or {}
    if reason is not None:
        yield FinishChunk(reason, Usage(**counts) if counts else None)
