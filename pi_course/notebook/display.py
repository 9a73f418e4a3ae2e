"""Plain-text rendering of events and chunks, shared by ``python -m pi_course chat`` and the notebooks."""

from __future__ import annotations

from collections.abc import Iterable

from ..adapter import FinishChunk, ProviderChunk, TextChunk, ToolChunk
from ..protocol import ModelEvent


def describe_event(event: ModelEvent) -> str:
    """One terminal line per event, for ``chat`` and for notebooks."""
    match event.type:
        case "start":
            return "start"
        case "text_delta" | "toolcall_delta":
            return f"{event.type:<14} #{event.content_index} {event.delta!r}"
        case "toolcall_end":
            call = event.tool_call
            return f"toolcall_end   #{event.content_index} {call.name}({call.raw_arguments}) id={call.id}"
        case "done":
            usage = event.message.usage
            return f"done           {event.reason} (tokens in {usage.input}, out {usage.output})"
        case _:
            return f"error          {event.reason}: {event.error.error_message}"


def describe_chunk(chunk: ProviderChunk | BaseException) -> str:
    """One line per ProviderChunk (or an exception a fixture raises in its place)."""
    if isinstance(chunk, BaseException):
        return f"raise  {type(chunk).__name__}({str(chunk)!r})"
    match chunk:
        case TextChunk(delta=delta):
            return f"text   delta={delta!r}"
        case ToolChunk():
            parts = [f"index={chunk.index}"]
            parts += [
                f"{name}={value!r}" for name, value in (("id", chunk.id), ("name", chunk.name)) if value
            ]
            return f"tool   {' '.join(parts)} arguments_delta={chunk.arguments_delta!r}"
        case FinishChunk(reason=reason, usage=usage):
            return f"finish reason={reason!r} usage={usage}"
    return repr(chunk)


def chunk_table(chunks: Iterable[ProviderChunk | BaseException]) -> str:
    """The fixture a replay is about to read, numbered from 1."""
    return "\n".join(
        f"chunk {number}  {describe_chunk(chunk)}" for number, chunk in enumerate(chunks, start=1)
    )
