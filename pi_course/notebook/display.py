"""Plain-text rendering of events and chunks for the notebooks.

``describe_event`` lives in :mod:`pi_course.course.describe` (``chat`` prints it too) and is
re-exported here, where notebooks import it.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..course.describe import describe_event
from ..seam import FinishChunk, ProviderChunk, TextChunk, ToolChunk

__all__ = ["chunk_table", "describe_chunk", "describe_event"]


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
