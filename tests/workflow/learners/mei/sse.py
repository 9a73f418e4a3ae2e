from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator

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
from .sse import PartialUsage, PayloadParts  # given in this module
from .stream_rules import (
    SSEEvent,
    check_event_size,
)


class SSEDecoder:
    def feed(self, chunk: bytes, *, final: bool = False) -> list[SSEEvent]:
        """Lab 5.3: Line buffer: _text.decode, data lines, _fields.read_line/dispatch, check_event_size"""
        events = []
        self._buffer = self._buffer + self._text.decode(chunk, final=final)
        while "\n" in self._buffer:
            line, self._buffer = self._buffer.split("\n", 1)
            if line == "":
                # a blank line ends the event
                event = self._fields.dispatch(self._data)
                self._data = []
                if event is not None:
                    events.append(event)
            else:
                value = self._fields.read_line(line)
                if value is not None:
                    self._data.append(value)
        check_event_size(self._buffer, self._data, self.max_event_size)
        return events


def _record(value: object, path: str) -> dict[str, object]:
    """Lab 5.3: A JSON object (a dict), or InvalidProviderChunk("{path} must be an object")."""
    if not isinstance(value, dict):
        raise InvalidProviderChunk(f"{path} must be an object")
    return value


def _string(value: object, path: str) -> str | None:
    """Lab 5.3: An optional string: None when absent or null, else it must be a str."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidProviderChunk(f"{path} must be a string")
    return value


def _token_count(value: object, path: str) -> int:
    """Lab 5.3: A non-negative safe integer as a JSON number: 5 or 5.0 → 5; not 5.5, -1, true, 2**53."""
    message = f"{path} must be a non-negative safe integer"
    if isinstance(value, bool):
        raise InvalidProviderChunk(message)
    if isinstance(value, float):
        if not value.is_integer():
            raise InvalidProviderChunk(message)
        value = int(value)
    if not isinstance(value, int):
        raise InvalidProviderChunk(message)
    if value < 0 or value > MAX_SAFE_INTEGER:
        raise InvalidProviderChunk(message)
    return value


def _usage(value: object) -> PartialUsage | None:
    """Lab 5.3: usage → PartialUsage holding only the counts present (each a _token_count); None if absent."""
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


def _finish_reason(value: object) -> FinishReason | None:
    """Lab 5.3: None, or one of stop / length / tool_calls; anything else names choices[0].finish_reason."""
    if value is None:
        return None
    if value == "stop":
        return "stop"
    elif value == "length":
        return "length"
    elif value == "tool_calls":
        return "tool_calls"
    else:
        raise InvalidProviderChunk(
            f"choices[0].finish_reason must be stop, length or tool_calls, not {value}"
        )


def _tool_chunk(item: object, path: str) -> ToolChunk:
    """Lab 5.3: One tool_calls item → ToolChunk: index a _token_count; id, function.name/arguments _string."""
    call = _record(item, path)
    index = _token_count(call.get("index"), path + ".index")
    tool_id = _string(call.get("id"), path + ".id")
    name = None
    arguments = None
    if call.get("function") is not None:
        function = _record(call["function"], path + ".function")
        name = _string(function.get("name"), path + ".function.name")
        arguments = _string(function.get("arguments"), path + ".function.arguments")
    return ToolChunk(index=index, id=tool_id, name=name, arguments_delta=arguments)


def parse_payload(raw: object) -> PayloadParts:
    """Lab 5.3: One payload → PayloadParts: one choice with a delta, or empty choices carrying usage."""
    payload = _record(raw, "payload")
    choices = payload.get("choices")
    if not isinstance(choices, list):
        raise InvalidProviderChunk("choices must be an array")
    usage = _usage(payload.get("usage"))
    if len(choices) == 0:
        # empty choices only carry the trailing usage
        if usage is None:
            raise InvalidProviderChunk("choices is empty and the payload carries no usage")
        return PayloadParts([], None, usage)
    if len(choices) != 1:
        raise InvalidProviderChunk("choices must hold exactly one choice")
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
        for number, item in enumerate(tool_calls):
            chunks.append(_tool_chunk(item, f"choices[0].delta.tool_calls[{number}]"))
    finish_reason = _finish_reason(choice.get("finish_reason"))
    return PayloadParts(chunks, finish_reason, usage)


async def read_provider_chunks(events: AsyncIterable[SSEEvent]) -> AsyncIterator[ProviderChunk]:
    """Lab 5.3: Each event up to [DONE] → parse_payload(parse_json(data)); finish + usage → 1 FinishChunk."""
    finish_reason = None
    usage: PartialUsage | None = None
    async for event in events:
        if event.data == "[DONE]":
            break
        parts = parse_payload(parse_json(event.data))
        for chunk in parts.chunks:
            yield chunk
        if parts.finish_reason is not None:
            finish_reason = parts.finish_reason  # remember it, the usage may still come
        if parts.usage is not None:
            if usage is None:
                usage = {}
            usage.update(parts.usage)
    if finish_reason is not None:
        if usage is None:
            yield FinishChunk(finish_reason)
        else:
            yield FinishChunk(finish_reason, Usage(**usage))
