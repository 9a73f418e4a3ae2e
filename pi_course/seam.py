"""The seam between transport and adapter: three kinds of ``ProviderChunk`` and the transport.

The transport yields chunks, the adapter turns them into ``ModelEvent``s; this is all they share.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, Protocol, TypeAlias, runtime_checkable

from .protocol import AbortSignal, Usage

# JSON has one number type; a count or an index must be an integer it holds exactly.
MAX_SAFE_INTEGER = 2**53 - 1


@dataclass(frozen=True, slots=True)
class TextChunk:
    delta: str
    type: ClassVar[Literal["text"]] = "text"


@dataclass(frozen=True, slots=True)
class ToolChunk:
    index: int
    id: str | None = None
    name: str | None = None
    arguments_delta: str | None = None
    type: ClassVar[Literal["tool"]] = "tool"


FinishReason: TypeAlias = Literal["stop", "length", "tool_calls"]


@dataclass(frozen=True, slots=True)
class FinishChunk:
    reason: FinishReason
    usage: Usage | None = None
    type: ClassVar[Literal["finish"]] = "finish"


ProviderChunk: TypeAlias = TextChunk | ToolChunk | FinishChunk
ProviderRequest: TypeAlias = dict[str, Any]


class ProviderTransport(Protocol):
    def stream(
        self, request: ProviderRequest, *, signal: AbortSignal | None = None
    ) -> AsyncIterator[ProviderChunk]: ...


class InvalidProviderChunk(ValueError):
    """A payload that does not have the shape the course relies on; the message names the path."""

    def __init__(self, detail: str) -> None:
        super().__init__(f"Invalid provider chunk: {detail}")


# --- given: the usage a stream's provider sent, kept when the stream fails ----------------------


class UsageSent:
    """The token counts one stream's provider has sent so far (``input``, ``output``, ``total_tokens``)."""

    __slots__ = ("counts",)

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}

    def usage(self) -> Usage | None:
        return Usage(**self.counts) if self.counts else None


def carry_usage_sent(error: BaseException, sent: UsageSent) -> None:
    """Let an exception out of a stream's chunks say what usage the provider had sent by then."""
    error.usage_sent = sent  # type: ignore[attr-defined]


def usage_sent_by(error: BaseException) -> UsageSent | None:
    """The usage an exception out of a stream's chunks carries (see :func:`carry_usage_sent`)."""
    sent = getattr(error, "usage_sent", None)
    return sent if isinstance(sent, UsageSent) else None


@runtime_checkable
class ReportsUsage(Protocol):
    """A transport that, for one stream, notes in a :class:`UsageSent` the usage its provider sent."""

    def reporting_to(self, sent: UsageSent) -> ProviderTransport: ...
