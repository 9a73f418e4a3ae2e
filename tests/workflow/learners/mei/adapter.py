from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import replace

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
        # the state of this one request
        content: list[AssistantContent] = []
        text_content_index = None
        tool_buffers: dict[int, ToolBuffer] = {}
        finish = None

        base = AssistantMessage(
            content=(),
            provider=self.provider,
            model=self.model,
            usage=EMPTY_USAGE,
            stop_reason="stop",
            timestamp=self.clock(),
        )
        yield StartEvent(base)

        request = build_request(self.model, context)
        try:
            async with _closing(self.transport.stream(request, signal=signal)) as chunks:
                async for chunk in chunks:
                    if isinstance(chunk, TextChunk):
                        if text_content_index is None:
                            text_content_index = len(content)
                            content.append(TextContent(chunk.delta))
                        else:
                            old_text = content[text_content_index].text
                            content[text_content_index] = TextContent(old_text + chunk.delta)
                        partial = base.with_content(tuple(content))
                        yield TextDeltaEvent(text_content_index, chunk.delta, partial)
                    elif isinstance(chunk, ToolChunk):
                        delta = chunk.arguments_delta
                        if delta is None:
                            delta = ""
                        if chunk.index not in tool_buffers:
                            tool_id = chunk.id
                            if tool_id is None:
                                tool_id = ""
                            tool_name = chunk.name
                            if tool_name is None:
                                tool_name = ""
                            buffer = ToolBuffer(tool_id, tool_name, delta, len(content))
                            tool_buffers[chunk.index] = buffer
                            content.append(buffer.streaming_call())
                        else:
                            buffer = tool_buffers[chunk.index]
                            # an id or name that arrives late is taken into the buffer
                            if chunk.id:
                                buffer.id = chunk.id
                            if chunk.name:
                                buffer.name = chunk.name
                            buffer.raw_arguments = buffer.raw_arguments + delta
                            content[buffer.content_index] = buffer.streaming_call()
                        partial = base.with_content(tuple(content))
                        yield ToolCallDeltaEvent(buffer.content_index, delta, partial)
                    elif isinstance(chunk, FinishChunk):
                        finish = chunk
        except AbortError as error:
            message = replace(base, content=tuple(content), stop_reason="aborted", error_message=str(error))
            yield ErrorEvent("aborted", message)
            return
        except Exception as error:
            message = replace(base, content=tuple(content), stop_reason="error", error_message=str(error))
            yield ErrorEvent("error", message)
            return

        if finish is None:
            message = replace(
                base,
                content=tuple(content),
                stop_reason="error",
                error_message="Provider stream ended without a finish chunk",
            )
            yield ErrorEvent("error", message)
            return

        usage = _normalized(finish.usage)
        if finish.reason == "tool_calls":
            # the tools in the order of their content slots
            buffers = sorted(tool_buffers.values(), key=lambda b: b.content_index)
            for buffer in buffers:
                raw = buffer.raw_arguments
                try:
                    if raw == "":  # noqa: SIM108 (the learner's own style)
                        arguments = {}
                    else:
                        arguments = json.loads(raw)
                except json.JSONDecodeError:
                    message = replace(
                        base,
                        content=tuple(content),
                        usage=usage,
                        stop_reason="error",
                        error_message=f'Tool call "{buffer.name}" ({buffer.id}) has invalid JSON arguments',
                    )
                    yield ErrorEvent("error", message)
                    return
                call = ToolCall(buffer.id, buffer.name, arguments, raw)
                content[buffer.content_index] = call
                partial = base.with_content(tuple(content))
                yield ToolCallEndEvent(buffer.content_index, call, partial)

        stop_reason = _STOP_REASONS[finish.reason]
        final = replace(base, content=tuple(content), usage=usage, stop_reason=stop_reason)
        yield DoneEvent(stop_reason, final)


def _normalized(usage: Usage | None) -> Usage:
    """Lab 5.2: Missing counts are 0; a missing total is input + output."""
    if usage is None:
        return EMPTY_USAGE
    input_tokens = usage.input
    if input_tokens is None:
        input_tokens = 0
    output_tokens = usage.output
    if output_tokens is None:
        output_tokens = 0
    total = usage.total_tokens
    if total is None or total == 0:
        total = input_tokens + output_tokens
    return Usage(input_tokens, output_tokens, total)
