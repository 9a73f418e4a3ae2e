from __future__ import annotations

import math

from .protocol import Usage
from .seam import FinishChunk, TextChunk, ToolChunk
from .stream_rules import check_event_size

USAGE_FIELDS = {"prompt_tokens": "input", "completion_tokens": "output", "total_tokens": "total_tokens"}


def feed(self, chunk, *, final=False):
    lines = (self._buffer + self._text.decode(chunk, final=final)).split("\n")
    self._buffer = lines.pop()  # the last piece has no "\n" yet: it is still arriving
    dispatched = []
    for line in lines:
        if line:
            value = self._fields.read_line(line)
            if value is not None:
                self._data.append(value)
            continue
        event = self._fields.dispatch(self._data)
        self._data = []
        if event:
            dispatched.append(event)
    check_event_size(self._buffer, self._data, self.max_event_size)
    return dispatched


def _record(value, path):
    if isinstance(value, dict):
        return value
    raise InvalidProviderChunk(path + " must be an object")  # noqa: F821


def _string(value, path):
    if value is None or isinstance(value, str):
        return value
    raise InvalidProviderChunk(path + " must be a string")  # noqa: F821


def _token_count(value, path):
    ok = (
        not isinstance(value, bool)
        and isinstance(value, int | float)
        and math.isfinite(value)
        and value == int(value)
        and 0 <= value <= MAX_SAFE_INTEGER  # noqa: F821
    )
    if not ok:
        raise InvalidProviderChunk(path + " must be a non-negative safe integer")  # noqa: F821
    return int(value)


def _usage(value):
    if value is None:
        return None
    usage = _record(value, "usage")
    return {
        ours: _token_count(usage[theirs], "usage." + theirs)
        for theirs, ours in USAGE_FIELDS.items()
        if usage.get(theirs) is not None
    }


def _finish_reason(value):
    if value is not None and value not in ("stop", "length", "tool_calls"):
        raise InvalidProviderChunk(f"choices[0].finish_reason {value!r} is not stop, length or tool_calls")  # noqa: F821
    return value


def _tool_chunk(item, path):
    item = _record(item, path)
    index = _token_count(item.get("index"), path + ".index")
    call_id = _string(item.get("id"), path + ".id")
    function = {} if item.get("function") is None else _record(item["function"], path + ".function")
    name = _string(function.get("name"), path + ".function.name")
    arguments = _string(function.get("arguments"), path + ".function.arguments")
    return ToolChunk(index=index, id=call_id, name=name, arguments_delta=arguments)


def parse_payload(raw):
    raw = _record(raw, "payload")
    if not isinstance(raw.get("choices"), list):
        raise InvalidProviderChunk("choices must be an array")  # noqa: F821
    choices = raw["choices"]
    usage = _usage(raw.get("usage"))
    if not choices:
        if usage is None:
            raise InvalidProviderChunk("choices is empty without usage")  # noqa: F821
        return PayloadParts([], None, usage)  # noqa: F821
    if len(choices) != 1:
        raise InvalidProviderChunk("choices must have exactly one element")  # noqa: F821
    choice = _record(choices[0], "choices[0]")
    reason = _finish_reason(choice.get("finish_reason"))
    delta = _record(choice.get("delta"), "choices[0].delta")
    text = _string(delta.get("content"), "choices[0].delta.content")
    calls = delta.get("tool_calls")
    if calls is not None and not isinstance(calls, list):
        raise InvalidProviderChunk("choices[0].delta.tool_calls must be an array")  # noqa: F821
    chunks = [TextChunk(text)] if text else []
    chunks += [_tool_chunk(call, f"choices[0].delta.tool_calls[{i}]") for i, call in enumerate(calls or [])]
    return PayloadParts(chunks, reason, usage)  # noqa: F821


async def read_provider_chunks(events):
    reason = None
    usage = None
    async for event in events:
        data = event.data
        if data == "[DONE]":
            break
        parts = parse_payload(parse_json(data))  # noqa: F821
        for chunk in parts.chunks:
            yield chunk
        reason = parts.finish_reason or reason
        if parts.usage is not None:
            usage = dict(usage or {}) | parts.usage
    if reason:
        yield FinishChunk(reason, Usage(**usage) if usage is not None else None)
