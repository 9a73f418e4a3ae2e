from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Literal

from .adapter import (  # given in this module
    _STOP_REASONS,
    ToolBuffer,
    _closing,
)
from .outbound import build_request
from .protocol import (
    EMPTY_USAGE,
    AbortError,
    AbortSignal,
    AgentContext,
    AssistantContent,
    AssistantMessage,
    DoneEvent,
    ErrorEvent,
    ModelEvent,
    StartEvent,
    TextContent,
    TextDeltaEvent,
    ToolCall,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
    Usage,
)
from .seam import (
    FinishChunk,
    ProviderChunk,
    ProviderRequest,
    TextChunk,
    ToolChunk,
)


class _FixedTransport:
    async def stream(
        self, request: ProviderRequest, *, signal: AbortSignal | None = None
    ) -> AsyncIterator[ProviderChunk]:
        """Lab 5.2: Yield the chunks in order, checking the signal before each one."""
        self.requests.append(request)
        for chunk in self.chunks:
            if signal is not None and signal.aborted:
                raise AbortError()
            if isinstance(chunk, BaseException):
                raise chunk
            yield chunk


class OpenAICompatibleModel:
    async def _events(self, context: AgentContext, signal: AbortSignal | None) -> AsyncIterator[ModelEvent]:
        """Lab 5.2: The state machine: ProviderChunks in, snapshot events out, one terminal event."""
        base = AssistantMessage((), self.provider, self.model, EMPTY_USAGE, "stop", self.clock())
        yield StartEvent(base)
        turn = _Turn()
        try:
            async with _closing(
                self.transport.stream(build_request(self.model, context), signal=signal)
            ) as chunks:
                async for chunk in chunks:
                    turn, event = _step(turn, chunk, base)
                    if event is not None:
                        yield event
            match turn.finish:
                case None:
                    raise _NoFinish("Provider stream ended without a finish chunk")
                case FinishChunk(reason="tool_calls"):
                    for buffer in sorted(turn.tool_buffers.values(), key=lambda b: b.content_index):
                        turn = _ended(turn, buffer)
                        yield ToolCallEndEvent(
                            buffer.content_index,
                            turn.content[buffer.content_index],
                            base.with_content(turn.content),
                        )
            reason = _STOP_REASONS[turn.finish.reason]
            yield DoneEvent(
                reason,
                replace(base, content=turn.content, usage=_normalized(turn.finish.usage), stop_reason=reason),
            )
        except Exception as error:
            kind: Literal["error", "aborted"] = "aborted" if isinstance(error, AbortError) else "error"
            yield ErrorEvent(
                kind,
                replace(
                    base,
                    content=turn.content,
                    stop_reason=kind,
                    error_message=str(error) or type(error).__name__,
                ),
            )


class _NoFinish(Exception):
    """The transport's chunks ended without a finish chunk."""


@dataclass(frozen=True)
class _Turn:
    """One stream()'s state; every step builds a new one."""

    content: tuple[AssistantContent, ...] = ()
    text_content_index: int | None = None
    tool_buffers: Mapping[int, ToolBuffer] = field(default_factory=dict)
    finish: FinishChunk | None = None


def _put(
    content: tuple[AssistantContent, ...], index: int, block: AssistantContent
) -> tuple[AssistantContent, ...]:
    return (*content[:index], block, *content[index + 1 :]) if index < len(content) else (*content, block)


def _step(turn: _Turn, chunk: ProviderChunk, base: AssistantMessage) -> tuple[_Turn, ModelEvent | None]:
    """One chunk: the next state and the event it emits (a finish emits none)."""
    match chunk:
        case TextChunk(delta=delta):
            index = len(turn.content) if turn.text_content_index is None else turn.text_content_index
            so_far = "" if turn.text_content_index is None else turn.content[index].text  # type: ignore[union-attr]
            content = _put(turn.content, index, TextContent(so_far + delta))
            return replace(turn, content=content, text_content_index=index), TextDeltaEvent(
                index, delta, base.with_content(content)
            )
        case ToolChunk(index=key, id=call_id, name=name, arguments_delta=delta):
            old = turn.tool_buffers.get(key)
            buffer = (
                ToolBuffer(call_id or "", name or "", delta or "", len(turn.content))
                if old is None
                else replace(
                    old,
                    id=old.id or call_id or "",
                    name=old.name or name or "",
                    raw_arguments=old.raw_arguments + (delta or ""),
                )
            )
            content = _put(turn.content, buffer.content_index, buffer.streaming_call())
            return replace(
                turn, content=content, tool_buffers={**turn.tool_buffers, key: buffer}
            ), ToolCallDeltaEvent(buffer.content_index, delta or "", base.with_content(content))
        case FinishChunk():
            return replace(turn, finish=chunk), None
    raise TypeError(f"not a ProviderChunk: {chunk!r}")


def _ended(turn: _Turn, buffer: ToolBuffer) -> _Turn:
    """The buffer's call with its arguments parsed (an empty text is ``{}``)."""
    try:
        arguments = json.loads(buffer.raw_arguments) if buffer.raw_arguments.strip() else {}
    except ValueError:
        raise ValueError(f'Tool call "{buffer.name}" ({buffer.id}) has invalid JSON arguments') from None
    call = ToolCall(buffer.id, buffer.name, arguments, buffer.raw_arguments)
    return replace(turn, content=_put(turn.content, buffer.content_index, call))


def _normalized(usage: Usage | None) -> Usage:
    """Lab 5.2: Missing counts are 0; a missing total is input + output."""
    match usage:
        case None:
            return EMPTY_USAGE
        case Usage(input=given, output=made, total_tokens=total):
            return Usage(given, made, total or given + made)
        case Mapping():
            given, made = usage.get("input", 0), usage.get("output", 0)
            return Usage(given, made, usage.get("total_tokens", given + made))
    raise TypeError(f"not a usage: {usage!r}")
