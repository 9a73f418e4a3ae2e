"""The course's canonical protocol: messages, events, streams and abort signals.

Everything is a frozen dataclass holding tuples. Immutability is what makes every emitted
``partial`` a snapshot: a later delta builds new objects and never changes one already emitted,
so the chapter's ``structuredClone`` is not needed.
"""

from __future__ import annotations

import asyncio
import functools
import json
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import MISSING, dataclass, fields
from typing import Any, ClassVar, Literal, Protocol, TypeAlias, TypeVar

StopReason: TypeAlias = Literal["stop", "length", "toolUse", "error", "aborted"]


def now_ms() -> int:
    """Integer milliseconds since the epoch, the course's timestamp unit."""
    return time.time_ns() // 1_000_000


def _frozen_tuple(obj: object, name: str) -> None:
    value = getattr(obj, name)
    if type(value) is not tuple:
        object.__setattr__(obj, name, tuple(value))


T = TypeVar("T")


def _writes_its_dict(cls: type[T]) -> type[T]:
    """A speed trick for the classes built once per streamed token (``make bench`` section 4).

    A frozen dataclass's ``__init__`` sets each field through ``object.__setattr__``; this one has
    the same signature and writes the instance dict. The dataclass's own is its ``__wrapped__``.
    """
    assert not hasattr(cls, "__post_init__"), cls
    names = [field.name for field in fields(cls)]  # type: ignore[arg-type]
    defaults = {f"_{f.name}": f.default for f in fields(cls) if f.default is not MISSING}  # type: ignore[arg-type]
    params = ", ".join(f"{name}=_{name}" if f"_{name}" in defaults else name for name in names)
    body = "".join(f"    d[{name!r}] = {name}\n" for name in names)
    namespace: dict[str, Any] = {}
    exec(f"def __init__(self, {params}):\n    d = self.__dict__\n{body}", defaults, namespace)
    setattr(cls, "__init__", functools.update_wrapper(namespace["__init__"], cls.__init__))  # noqa: B010
    return cls


# --- content blocks -----------------------------------------------------------------------------


@_writes_its_dict
@dataclass(frozen=True)
class TextContent:
    text: str
    type: ClassVar[Literal["text"]] = "text"


@_writes_its_dict
@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: object
    raw_arguments: str | None = None
    type: ClassVar[Literal["toolCall"]] = "toolCall"


@dataclass(frozen=True)
class Usage:
    input: int = 0
    output: int = 0
    total_tokens: int = 0


EMPTY_USAGE = Usage()

AssistantContent: TypeAlias = TextContent | ToolCall


# --- messages -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class UserMessage:
    content: tuple[TextContent, ...]
    timestamp: int
    role: ClassVar[Literal["user"]] = "user"

    def __post_init__(self) -> None:
        _frozen_tuple(self, "content")


@dataclass(frozen=True)
class AssistantMessage:
    content: tuple[AssistantContent, ...]
    provider: str
    model: str
    usage: Usage
    stop_reason: StopReason
    timestamp: int
    error_message: str | None = None
    role: ClassVar[Literal["assistant"]] = "assistant"

    def __post_init__(self) -> None:
        _frozen_tuple(self, "content")

    def with_content(self, content: tuple[AssistantContent, ...]) -> AssistantMessage:
        """``dataclasses.replace(self, content=content)``: this message with other content.

        An adapter builds one per event, for its ``partial``. A speed trick, kept because it
        pays: copying the instance dict skips the frozen dataclass's ``__init__`` and
        ``__post_init__``. With the plain constructor instead, the adapter over a fixed transport
        takes about a fifth longer, and bytes → final message 5–10% (``make bench``, section 4).
        """
        snapshot = object.__new__(AssistantMessage)
        snapshot.__dict__.update(self.__dict__)
        snapshot.__dict__["content"] = content
        return snapshot


@dataclass(frozen=True)
class ToolResultMessage:
    tool_call_id: str
    tool_name: str
    content: tuple[TextContent, ...]
    is_error: bool
    timestamp: int
    details: object = None
    role: ClassVar[Literal["toolResult"]] = "toolResult"

    def __post_init__(self) -> None:
        _frozen_tuple(self, "content")


AgentMessage: TypeAlias = UserMessage | AssistantMessage | ToolResultMessage


# --- chapter 05: tools and the context ---------------------------------------------------------


# BEGIN LAB 5.1 REMOVE
@dataclass(frozen=True)
class ToolDefinition:
    """A tool the model may call: its name, a description and a JSON Schema for its arguments."""

    name: str
    description: str
    parameters: Mapping[str, object]


# END LAB 5.1 REMOVE


@dataclass(frozen=True)
class AgentContext:
    messages: tuple[AgentMessage, ...]
    system_prompt: str | None = None
    # BEGIN LAB 5.1 REMOVE
    tools: tuple[ToolDefinition, ...] | None = None
    # END LAB 5.1 REMOVE

    def __post_init__(self) -> None:
        _frozen_tuple(self, "messages")
        # BEGIN LAB 5.1 REMOVE
        if self.tools is not None:
            _frozen_tuple(self, "tools")
        # END LAB 5.1 REMOVE


# --- events -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StartEvent:
    partial: AssistantMessage
    type: ClassVar[Literal["start"]] = "start"


@_writes_its_dict
@dataclass(frozen=True)
class TextDeltaEvent:
    content_index: int
    delta: str
    partial: AssistantMessage
    type: ClassVar[Literal["text_delta"]] = "text_delta"


@_writes_its_dict
@dataclass(frozen=True)
class ToolCallDeltaEvent:
    content_index: int
    delta: str
    partial: AssistantMessage
    type: ClassVar[Literal["toolcall_delta"]] = "toolcall_delta"


@_writes_its_dict
@dataclass(frozen=True)
class ToolCallEndEvent:
    content_index: int
    tool_call: ToolCall
    partial: AssistantMessage
    type: ClassVar[Literal["toolcall_end"]] = "toolcall_end"


@dataclass(frozen=True)
class DoneEvent:
    reason: Literal["stop", "length", "toolUse"]
    message: AssistantMessage
    type: ClassVar[Literal["done"]] = "done"


@dataclass(frozen=True)
class ErrorEvent:
    reason: Literal["error", "aborted"]
    error: AssistantMessage
    type: ClassVar[Literal["error"]] = "error"


ModelEvent: TypeAlias = (
    StartEvent | TextDeltaEvent | ToolCallDeltaEvent | ToolCallEndEvent | DoneEvent | ErrorEvent
)


# --- abort --------------------------------------------------------------------------------------


class AbortError(Exception):
    """Raised by a transport when its signal fired; the adapter turns it into ``error(aborted)``."""

    def __init__(self, message: str = "Request was aborted") -> None:
        super().__init__(message)


class AbortSignal:
    """Read side of an :class:`AbortController`. Needs no event loop until someone waits on it."""

    def __init__(self) -> None:
        self._aborted = False
        self._callbacks: list[Callable[[], None]] = []

    @property
    def aborted(self) -> bool:
        return self._aborted

    def add_callback(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call ``callback`` once on abort (at once if already aborted); returns a remover."""
        if self._aborted:
            callback()
            return lambda: None
        self._callbacks.append(callback)
        return lambda: self._callbacks.remove(callback) if callback in self._callbacks else None

    async def wait(self) -> None:
        """Return once the signal is aborted; safe to race against a blocked read."""
        if self._aborted:
            return
        loop = asyncio.get_running_loop()
        fired = loop.create_future()

        def resolve() -> None:
            if not fired.done():
                fired.set_result(None)

        def wake() -> None:  # abort() may run in another thread: hop onto this loop first
            loop.call_soon_threadsafe(resolve)

        remove = self.add_callback(wake)
        try:
            await fired
        finally:
            remove()

    def _fire(self) -> None:
        if self._aborted:
            return
        self._aborted = True
        callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback()

    def __repr__(self) -> str:
        return f"AbortSignal(aborted={self._aborted})"


class AbortController:
    """Create anywhere (a notebook cell, module level); ``abort()`` from any task or thread."""

    def __init__(self) -> None:
        self.signal = AbortSignal()

    def abort(self) -> None:
        self.signal._fire()

    def __repr__(self) -> str:
        return f"AbortController(aborted={self.signal.aborted})"


# --- streams and models -------------------------------------------------------------------------


class ModelStream:
    """A lazily pulled stream of :data:`ModelEvent` ending in exactly one ``done``/``error``.

    There is no background task: the consumer's ``async for`` drives the generator underneath.
    ``await result()`` drains whatever is left and returns the terminal event's message object.
    """

    def __init__(
        self,
        events: AsyncIterator[ModelEvent],
        *,
        on_error: Callable[[ErrorEvent], ErrorEvent] | None = None,
    ) -> None:
        self._events = events
        self._on_error = on_error  # may complete the terminal error event (the adapter's usage)
        self._final: AssistantMessage | None = None

    def __aiter__(self) -> ModelStream:
        return self

    async def __anext__(self) -> ModelEvent:
        if self._final is not None:
            raise StopAsyncIteration
        event = await self._events.__anext__()
        if type(event) is DoneEvent:
            self._final = event.message
        elif type(event) is ErrorEvent:
            if self._on_error is not None:
                event = self._on_error(event)
            self._final = event.error
        return event

    async def result(self) -> AssistantMessage:
        async for _ in self:
            pass
        if self._final is None:
            raise RuntimeError("model stream ended without a terminal event")
        return self._final

    async def aclose(self) -> None:
        """Stop early and release the transport (its response is closed)."""
        await aclose_iterator(self._events)

    async def __aenter__(self) -> ModelStream:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


async def aclose_iterator(iterator: object) -> None:
    """Close an async iterator that can be closed (an async generator); leave others alone."""
    aclose = getattr(iterator, "aclose", None)
    if aclose is not None:
        await aclose()


class Model(Protocol):
    def stream(self, context: AgentContext, *, signal: AbortSignal | None = None) -> ModelStream: ...


# --- helpers ------------------------------------------------------------------------------------


def text(value: str) -> TextContent:
    return TextContent(value)


def user_message(value: str, *, timestamp: int | None = None) -> UserMessage:
    return UserMessage((TextContent(value),), now_ms() if timestamp is None else timestamp)


def assistant_message(
    content: Sequence[AssistantContent], stop_reason: StopReason = "stop", **overrides: Any
) -> AssistantMessage:
    fields: dict[str, Any] = {
        "provider": "scripted",
        "model": "scripted-v1",
        "usage": EMPTY_USAGE,
        "timestamp": now_ms(),
        **overrides,
    }
    return AssistantMessage(content=tuple(content), stop_reason=stop_reason, **fields)


def text_of(message: AgentMessage) -> str:
    """The message's text blocks joined with a newline (tool calls are skipped)."""
    return "\n".join(block.text for block in message.content if isinstance(block, TextContent))


def json_stringify(value: object) -> str:
    """``JSON.stringify`` compatible output: no spaces, non-ASCII kept as is."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


__all__ = [
    "EMPTY_USAGE",
    "AbortController",
    "AbortError",
    "AbortSignal",
    "AgentContext",
    "AgentMessage",
    "AssistantContent",
    "AssistantMessage",
    "DoneEvent",
    "ErrorEvent",
    "Model",
    "ModelEvent",
    "ModelStream",
    "StartEvent",
    "StopReason",
    "TextContent",
    "TextDeltaEvent",
    "ToolCall",
    "ToolCallDeltaEvent",
    "ToolCallEndEvent",
    # BEGIN LAB 5.1 REMOVE
    "ToolDefinition",
    # END LAB 5.1 REMOVE
    "ToolResultMessage",
    "Usage",
    "UserMessage",
    "assistant_message",
    "json_stringify",
    "now_ms",
    "text",
    "text_of",
    "user_message",
]
