"""Practice 5.2 — the adapter: validated ``ProviderChunk``s in, canonical ``ModelEvent``s out.

The adapter never sees ``choices``, SSE or HTTP; a transport hands it three kinds of chunk.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from copy import copy
from dataclasses import dataclass, replace
from typing import Literal

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
    ModelStream,
    StartEvent,
    StopReason,
    TextContent,
    TextDeltaEvent,
    ToolCall,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
    Usage,
    aclose_iterator,
    now_ms,
)
from .seam import (
    FinishChunk,
    FinishReason,
    ProviderChunk,
    ProviderRequest,
    ProviderTransport,
    ReportsUsage,
    TextChunk,
    ToolChunk,
    UsageSent,
    usage_sent_by,
)


class _FixedTransport:
    def __init__(self, chunks: Iterable[ProviderChunk | BaseException]) -> None:
        self.chunks = tuple(chunks)
        self.requests: list[ProviderRequest] = []

    async def stream(
        self, request: ProviderRequest, *, signal: AbortSignal | None = None
    ) -> AsyncIterator[ProviderChunk]:
        """Lab 5.2: Yield the chunks in order, checking the signal before each one."""
        # BEGIN LAB 5.2
        self.requests.append(request)
        for chunk in self.chunks:
            if signal is not None and signal.aborted:
                raise AbortError()
            if isinstance(chunk, BaseException):
                raise chunk
            yield chunk
        # END LAB 5.2

    def __repr__(self) -> str:
        return f"fixed_transport({len(self.chunks)} chunks)"


def fixed_transport(chunks: Iterable[ProviderChunk | BaseException]) -> _FixedTransport:
    """An offline transport yielding ``chunks`` in order (an exception in the list is raised there)."""
    return _FixedTransport(chunks)


# --- the adapter --------------------------------------------------------------------------------

_STOP_REASONS: dict[FinishReason, Literal["stop", "length", "toolUse"]] = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "toolUse",
}


@dataclass
class ToolBuffer:
    """What one provider tool index has streamed so far, and the content slot it owns."""

    id: str
    name: str
    raw_arguments: str
    content_index: int

    def streaming_call(self) -> ToolCall:
        # While streaming, both fields hold the raw text: it may not be valid JSON yet.
        return ToolCall(self.id, self.name, self.raw_arguments, self.raw_arguments)


class OpenAICompatibleModel:
    """A :class:`~pi_course.protocol.Model` over any :class:`ProviderTransport`."""

    def __init__(
        self,
        *,
        provider: str,
        model: str,
        transport: ProviderTransport,
        clock: Callable[[], int] = now_ms,
    ) -> None:
        self.provider = provider
        self.model = model
        self.transport = transport
        self.clock = clock

    def __repr__(self) -> str:
        return f"OpenAICompatibleModel(provider={self.provider!r}, model={self.model!r})"

    def stream(self, context: AgentContext, *, signal: AbortSignal | None = None) -> ModelStream:
        # Given: an error or a refusal keeps the usage the provider sent. The state machine runs over
        # this stream's own view of the transport, which notes that usage in `sent`.
        sent = UsageSent()
        one_stream = copy(self)
        if isinstance(self.transport, ReportsUsage):
            one_stream.transport = self.transport.reporting_to(sent)
        else:
            one_stream.transport = _UsageFromErrors(self.transport, sent)
        return ModelStream(
            one_stream._events(context, signal), on_error=lambda event: _keep_usage(sent, event)
        )

    async def _events(self, context: AgentContext, signal: AbortSignal | None) -> AsyncIterator[ModelEvent]:
        """Lab 5.2: The state machine: ProviderChunks in, snapshot events out, one terminal event."""
        # BEGIN LAB 5.2
        # The per-request state: it lives inside one stream() call and nowhere else.
        content: list[AssistantContent] = []
        text_content_index: int | None = None
        text = ""
        tool_buffers: dict[int, ToolBuffer] = {}
        finish: FinishChunk | None = None
        streaming = AssistantMessage((), self.provider, self.model, EMPTY_USAGE, "stop", self.clock())

        def partial() -> AssistantMessage:
            return streaming.with_content(tuple(content))

        def message(stop_reason: StopReason, usage: Usage, error: str | None = None) -> AssistantMessage:
            return replace(streaming, content=tuple(content), stop_reason=stop_reason, usage=usage,
                           error_message=error)  # fmt: skip

        yield StartEvent(partial())
        try:
            request = build_request(self.model, context)
            async with _closing(self.transport.stream(request, signal=signal)) as chunks:
                async for chunk in chunks:
                    if signal is not None and signal.aborted:
                        raise AbortError()  # even if a transport forgot to check the signal
                    match chunk:
                        case TextChunk(delta=delta):
                            if text_content_index is None:
                                text_content_index = len(content)
                                content.append(TextContent(""))
                            text += delta
                            content[text_content_index] = TextContent(text)
                            yield TextDeltaEvent(text_content_index, delta, partial())
                        case ToolChunk(index=index):
                            buffer = tool_buffers.get(index)
                            if buffer is None:
                                # The next free content slot, not the provider's index.
                                slot = len(content)
                                buffer = ToolBuffer(chunk.id or f"call-{index}", chunk.name or "", "", slot)
                                tool_buffers[index] = buffer
                                content.append(buffer.streaming_call())
                            buffer.id = chunk.id or buffer.id
                            buffer.name = chunk.name or buffer.name
                            delta = chunk.arguments_delta or ""
                            buffer.raw_arguments += delta
                            content[buffer.content_index] = buffer.streaming_call()
                            yield ToolCallDeltaEvent(buffer.content_index, delta, partial())
                        case FinishChunk():
                            finish = chunk
        except Exception as error:
            aborted = isinstance(error, AbortError) or (signal is not None and signal.aborted)
            reason: Literal["error", "aborted"] = "aborted" if aborted else "error"
            detail = "Request was aborted" if aborted else str(error) or type(error).__name__
            yield ErrorEvent(reason, message(reason, EMPTY_USAGE, detail))
            return

        if finish is None:
            failure = "Provider stream ended without a finish chunk"
            yield ErrorEvent("error", message("error", EMPTY_USAGE, failure))
            return
        usage = _normalized(finish.usage)
        stop_reason = _STOP_REASONS[finish.reason]
        if finish.reason == "tool_calls":
            # Only a tool_calls finish says the arguments are complete: parse them now.
            for buffer in sorted(tool_buffers.values(), key=lambda b: b.content_index):
                try:
                    arguments = json.loads(buffer.raw_arguments) if buffer.raw_arguments else {}
                except json.JSONDecodeError:
                    failure = f'Tool call "{buffer.name}" ({buffer.id}) has invalid JSON arguments'
                    yield ErrorEvent("error", message("error", usage, failure))
                    return
                tool_call = ToolCall(buffer.id, buffer.name, arguments, buffer.raw_arguments)
                content[buffer.content_index] = tool_call
                yield ToolCallEndEvent(buffer.content_index, tool_call, partial())
        yield DoneEvent(stop_reason, message(stop_reason, usage))
        # END LAB 5.2


@asynccontextmanager
async def _closing(chunks: AsyncIterator[ProviderChunk]) -> AsyncIterator[AsyncIterator[ProviderChunk]]:
    """Close the transport's iterator (and so its HTTP response) however the stream ends."""
    try:
        yield chunks
    finally:
        await aclose_iterator(chunks)


class _UsageFromErrors:
    """One stream's view of a transport: an exception out of its chunks may carry the usage sent."""

    def __init__(self, transport: ProviderTransport, sent: UsageSent) -> None:
        self.transport = transport
        self.sent = sent

    async def stream(
        self, request: ProviderRequest, *, signal: AbortSignal | None = None
    ) -> AsyncIterator[ProviderChunk]:
        chunks = self.transport.stream(request, signal=signal)
        try:
            async for chunk in chunks:
                yield chunk
        except Exception as error:
            carried = usage_sent_by(error)
            if carried is not None:
                self.sent.counts.update(carried.counts)
            raise
        finally:
            await aclose_iterator(chunks)


def _keep_usage(sent: UsageSent, event: ErrorEvent) -> ErrorEvent:
    """An error built without usage gets the usage the provider sent."""
    if event.error.usage == EMPTY_USAGE and sent.counts:
        return ErrorEvent(event.reason, replace(event.error, usage=_normalized(sent.usage())))
    return event


def _normalized(usage: Usage | None) -> Usage:
    """Lab 5.2: Missing counts are 0; a missing total is input + output."""
    # BEGIN LAB 5.2
    if usage is None:
        return EMPTY_USAGE
    if usage.total_tokens:
        return usage
    return Usage(usage.input, usage.output, usage.input + usage.output)
    # END LAB 5.2
