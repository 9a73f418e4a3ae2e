from __future__ import annotations

from .protocol import Usage
from .seam import FinishChunk, TextChunk, ToolChunk
from .stream_rules import check_event_size


def feed(self, chunk, *, final=False):
    pieces = [self._buffer, self._text.decode(chunk, final=final)]
    text = "".join(pieces)
    events = []
    while "\n" in text:
        line, text = text.split("\n", 1)
        if line == "":
            event = self._fields.dispatch(self._data)
            self._data = []
            if event is not None:
                events.append(event)
        elif line.startswith("data:"):
            value = line[len("data:") :]
            if value.startswith(" "):
                value = value[1:]
            self._data.append(value)
        else:
            value = self._fields.read_line(line)
            if value is not None:
                self._data.append(value)
    self._buffer = text
    check_event_size(self._buffer, self._data, self.max_event_size)
    return events


def _record(value, path):
    if isinstance(value, dict):
        return value
    raise InvalidProviderChunk(path + " must be an object")  # noqa: F821


def _string(value, path):
    if value is None or isinstance(value, str):
        return value
    raise InvalidProviderChunk(path + " must be a string")  # noqa: F821


def _token_count(value, path):
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidProviderChunk(path + " must be a non-negative safe integer")  # noqa: F821
    if value != value or value in (float("inf"), float("-inf")) or value != int(value):
        raise InvalidProviderChunk(path + " must be a non-negative safe integer")  # noqa: F821
    if value < 0 or value > 2**53 - 1:
        raise InvalidProviderChunk(path + " must be a non-negative safe integer")  # noqa: F821
    return int(value)


def _usage(value):
    if value is None:
        return None
    record = _record(value, "usage")
    usage = {}
    if record.get("prompt_tokens") is not None:
        usage["input"] = _token_count(record["prompt_tokens"], "usage.prompt_tokens")
    if record.get("completion_tokens") is not None:
        usage["output"] = _token_count(record["completion_tokens"], "usage.completion_tokens")
    if record.get("total_tokens") is not None:
        usage["total_tokens"] = _token_count(record["total_tokens"], "usage.total_tokens")
    return usage


def _finish_reason(value):
    if value is None:
        return None
    if value in ("stop", "length", "tool_calls"):
        return value
    raise InvalidProviderChunk(f"choices[0].finish_reason must be stop, length or tool_calls, got {value!r}")  # noqa: F821


def _tool_chunk(item, path):
    call = _record(item, path)
    index = _token_count(call.get("index"), path + ".index")
    call_id = _string(call.get("id"), path + ".id")
    function = call.get("function")
    name = arguments = None
    if function is not None:
        function = _record(function, path + ".function")
        name = _string(function.get("name"), path + ".function.name")
        arguments = _string(function.get("arguments"), path + ".function.arguments")
    return ToolChunk(index, call_id, name, arguments)


def parse_payload(raw):
    raw_chunk = _record(raw, "payload")
    choices = raw_chunk.get("choices")
    if not isinstance(choices, list):
        raise InvalidProviderChunk("choices must be an array")  # noqa: F821
    usage = _usage(raw_chunk.get("usage"))
    if len(choices) == 0:
        if usage is None:
            raise InvalidProviderChunk("choices is empty but carries no usage")  # noqa: F821
        return PayloadParts([], None, usage)  # noqa: F821
    if len(choices) != 1:
        raise InvalidProviderChunk("choices must hold exactly 1 choice")  # noqa: F821
    choice = _record(choices[0], "choices[0]")
    delta = _record(choice.get("delta"), "choices[0].delta")
    chunks = []
    content = _string(delta.get("content"), "choices[0].delta.content")
    if content:
        chunks.append(TextChunk(content))
    tool_calls = delta.get("tool_calls")
    if tool_calls is not None:
        if not isinstance(tool_calls, list):
            raise InvalidProviderChunk("choices[0].delta.tool_calls must be an array")  # noqa: F821
        for position in range(len(tool_calls)):
            chunks.append(_tool_chunk(tool_calls[position], f"choices[0].delta.tool_calls[{position}]"))
    return PayloadParts(chunks, _finish_reason(choice.get("finish_reason")), usage)  # noqa: F821


async def read_provider_chunks(events):
    reason = None
    usage = {}
    async for event in events:
        if event.data == "[DONE]":
            break
        parts = parse_payload(parse_json(event.data))  # noqa: F821
        for chunk in parts.chunks:
            yield chunk
        if parts.finish_reason is not None:
            reason = parts.finish_reason
        if parts.usage is not None:
            usage = {**usage, **parts.usage}
    if reason is not None:
        yield FinishChunk(reason, Usage(**usage) if usage else None)
