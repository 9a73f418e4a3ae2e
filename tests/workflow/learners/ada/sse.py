from __future__ import annotations

from .protocol import Usage
from .seam import FinishChunk, TextChunk, ToolChunk
from .stream_rules import check_event_size


def feed(self, chunk, *, final=False):
    self._buffer += self._text.decode(chunk, final=final)
    events = []
    start = 0
    while True:
        end = self._buffer.find("\n", start)
        if end == -1:
            break
        line = self._buffer[start:end]
        start = end + 1
        if line == "":
            event = self._fields.dispatch(self._data)
            self._data = []
            if event is not None:
                events.append(event)
        elif line.startswith("data:"):
            value = line[5:]
            self._data.append(value[1:] if value.startswith(" ") else value)
        else:
            value = self._fields.read_line(line)
            if value is not None:
                self._data.append(value)
    self._buffer = self._buffer[start:]
    check_event_size(self._buffer, self._data, self.max_event_size)
    return events


def _record(value, path):
    if type(value) is not dict:
        raise InvalidProviderChunk(f"{path} must be an object")  # noqa: F821
    return value


def _string(value, path):
    if value is not None and type(value) is not str:
        raise InvalidProviderChunk(f"{path} must be a string")  # noqa: F821
    return value


def _token_count(value, path):
    number = value
    if type(number) is float and number.is_integer():
        number = int(number)
    if type(number) is not int or not 0 <= number <= MAX_SAFE_INTEGER:  # noqa: F821
        raise InvalidProviderChunk(f"{path} must be a non-negative safe integer")  # noqa: F821
    return number


def _usage(value):
    if value is None:
        return None
    record = _record(value, "usage")
    usage = {}
    for wire_name, name in (
        ("prompt_tokens", "input"),
        ("completion_tokens", "output"),
        ("total_tokens", "total_tokens"),
    ):
        if record.get(wire_name) is not None:
            usage[name] = _token_count(record[wire_name], f"usage.{wire_name}")
    return usage


def _finish_reason(value):
    if value is None or value in FINISH_REASONS:  # noqa: F821
        return value
    raise InvalidProviderChunk(  # noqa: F821
        f"choices[0].finish_reason must be stop, length or tool_calls, not {value!r}"
    )


def _tool_chunk(item, path):
    call = _record(item, path)
    function = call.get("function")
    function = {} if function is None else _record(function, f"{path}.function")
    return ToolChunk(
        _token_count(call.get("index"), f"{path}.index"),
        _string(call.get("id"), f"{path}.id"),
        _string(function.get("name"), f"{path}.function.name"),
        _string(function.get("arguments"), f"{path}.function.arguments"),
    )


def parse_payload(raw):
    payload = _record(raw, "payload")
    choices = payload.get("choices")
    if type(choices) is not list:
        raise InvalidProviderChunk("choices must be an array")  # noqa: F821
    usage = _usage(payload.get("usage"))
    if len(choices) == 0:
        if usage is None:
            raise InvalidProviderChunk("choices is empty and the payload has no usage")  # noqa: F821
        return PayloadParts([], None, usage)  # noqa: F821
    if len(choices) > 1:
        raise InvalidProviderChunk(f"choices must hold one choice, not {len(choices)}")  # noqa: F821
    choice = _record(choices[0], "choices[0]")
    finish_reason = _finish_reason(choice.get("finish_reason"))
    delta = _record(choice.get("delta"), "choices[0].delta")
    chunks = []
    content = _string(delta.get("content"), "choices[0].delta.content")
    if content:
        chunks.append(TextChunk(content))
    tool_calls = delta.get("tool_calls")
    if tool_calls is not None:
        if type(tool_calls) is not list:
            raise InvalidProviderChunk("choices[0].delta.tool_calls must be an array")  # noqa: F821
        for number, item in enumerate(tool_calls):
            chunks.append(_tool_chunk(item, f"choices[0].delta.tool_calls[{number}]"))
    return PayloadParts(chunks, finish_reason, usage)  # noqa: F821


async def read_provider_chunks(events):
    finish = _Finish()
    async for event in events:
        if event.data == "[DONE]":
            break
        parts = parse_payload(parse_json(event.data))  # noqa: F821
        for chunk in parts.chunks:
            yield chunk
        finish.remember(parts.finish_reason, parts.usage)
    if finish.reason is not None:
        yield finish.chunk()


class _Finish:
    """The finish reason and the trailing usage, which may arrive in different payloads."""

    def __init__(self):
        self.reason = None
        self.usage = None

    def remember(self, reason, usage):
        if reason is not None:
            self.reason = reason
        if usage is not None:
            self.usage = {**(self.usage or {}), **usage}

    def chunk(self):
        return FinishChunk(self.reason, None if self.usage is None else Usage(**self.usage))
