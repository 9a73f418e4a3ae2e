from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from dataclasses import replace
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
        for item in self.chunks:
            if signal is not None and signal.aborted:
                raise AbortError()
            if isinstance(item, BaseException):
                raise item
            yield item


class OpenAICompatibleModel:
    async def _events(self, context: AgentContext, signal: AbortSignal | None) -> AsyncIterator[ModelEvent]:
        """Lab 5.2: The state machine: ProviderChunks in, snapshot events out, one terminal event."""
        state = _StreamState(
            AssistantMessage((), self.provider, self.model, EMPTY_USAGE, "stop", self.clock())
        )
        yield StartEvent(state.partial())
        try:
            async with _closing(
                self.transport.stream(build_request(self.model, context), signal=signal)
            ) as chunks:
                async for chunk in chunks:
                    event = state.apply(chunk)
                    if event is not None:
                        yield event
            for end in state.finish_tools():
                yield end
        except AbortError as error:
            yield ErrorEvent("aborted", state.failed("aborted", error))
            return
        except Exception as error:  # a transport, protocol or argument failure: the partial is kept
            yield ErrorEvent("error", state.failed("error", error))
            return
        yield state.done()


class IncompleteStream(Exception):
    """The transport ended without a finish chunk: the output may be incomplete."""


class InvalidToolArguments(ValueError):
    """A finished tool call whose raw arguments are not JSON."""


def _reject_constant(name: str) -> object:
    raise ValueError(f"{name} is not JSON")  # JSON.parse refuses NaN and Infinity; so do we


def _parse_arguments(call: ToolBuffer) -> object:
    try:
        return json.loads(call.raw_arguments or "{}", parse_constant=_reject_constant)
    except ValueError as error:
        raise InvalidToolArguments(
            f'Tool call "{call.name}" ({call.id}) has invalid JSON arguments'
        ) from error


class _StreamState:
    """Everything one ``stream()`` call accumulates.

    Invariants: ``content`` holds one slot per text run / provider tool index, in order of first
    appearance; ``text_content_index`` and every ``ToolBuffer.content_index`` point into it; the
    provider's tool index is only a key of ``tool_buffers``, never a slot.
    """

    def __init__(self, template: AssistantMessage) -> None:
        self.template = template
        self.content: list[AssistantContent] = []
        self.text_content_index: int | None = None
        self.tool_buffers: dict[int, ToolBuffer] = {}
        self.finish: FinishChunk | None = None

    def partial(self) -> AssistantMessage:
        # Frozen blocks in a fresh tuple: a snapshot no later delta can reach.
        return self.template.with_content(tuple(self.content))

    def apply(self, chunk: ProviderChunk) -> ModelEvent | None:
        match chunk:
            case TextChunk(delta=delta):
                return self._text(delta)
            case ToolChunk():
                return self._tool(chunk)
            case FinishChunk():
                self.finish = chunk
                return None
        raise TypeError(f"not a ProviderChunk: {chunk!r}")

    def _text(self, delta: str) -> TextDeltaEvent:
        if self.text_content_index is None:
            self.text_content_index = len(self.content)
            self.content.append(TextContent(""))
        slot = self.text_content_index
        previous = self.content[slot]
        assert isinstance(previous, TextContent)
        self.content[slot] = TextContent(previous.text + delta)
        return TextDeltaEvent(slot, delta, self.partial())

    def _tool(self, chunk: ToolChunk) -> ToolCallDeltaEvent:
        buffer = self.tool_buffers.get(chunk.index)
        if buffer is None:
            buffer = ToolBuffer(chunk.id or "", chunk.name or "", "", len(self.content))
            self.tool_buffers[chunk.index] = buffer
            self.content.append(buffer.streaming_call())
        else:  # later fragments normally carry only arguments; fill in what was missing
            buffer.id = buffer.id or chunk.id or ""
            buffer.name = buffer.name or chunk.name or ""
        delta = chunk.arguments_delta or ""
        buffer.raw_arguments += delta
        self.content[buffer.content_index] = buffer.streaming_call()
        return ToolCallDeltaEvent(buffer.content_index, delta, self.partial())

    def finish_tools(self) -> Iterator[ToolCallEndEvent]:
        """At the finish: ``tool_calls`` parses every buffered call, in slot order, one end each."""
        if self.finish is None:
            raise IncompleteStream("Provider stream ended without a finish chunk")
        if self.finish.reason != "tool_calls":
            return  # stop / length: raw text stays in both fields, nothing is executed
        for buffer in sorted(self.tool_buffers.values(), key=lambda b: b.content_index):
            call = ToolCall(buffer.id, buffer.name, _parse_arguments(buffer), buffer.raw_arguments)
            self.content[buffer.content_index] = call
            yield ToolCallEndEvent(buffer.content_index, call, self.partial())

    def done(self) -> DoneEvent:
        assert self.finish is not None
        reason = _STOP_REASONS[self.finish.reason]
        message = replace(self.partial(), usage=_normalized(self.finish.usage), stop_reason=reason)
        return DoneEvent(reason, message)

    def failed(self, reason: Literal["error", "aborted"], error: BaseException) -> AssistantMessage:
        text = str(error) or type(error).__name__
        return replace(self.partial(), stop_reason=reason, error_message=text)


def _normalized(usage: Usage | None) -> Usage:
    """Lab 5.2: Missing counts are 0; a missing total is input + output."""
    if usage is None:
        return EMPTY_USAGE
    total = usage.total_tokens or usage.input + usage.output
    return Usage(usage.input, usage.output, total)
