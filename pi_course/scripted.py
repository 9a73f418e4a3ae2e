"""Chapter 04's offline model: replays scripted assistant turns over the same ``Model`` protocol."""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator, Sequence
from typing import Literal

from .protocol import (
    EMPTY_USAGE,
    AbortSignal,
    AgentContext,
    AssistantContent,
    AssistantMessage,
    DoneEvent,
    ErrorEvent,
    ModelEvent,
    ModelStream,
    StartEvent,
    TextContent,
    TextDeltaEvent,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
    json_stringify,
    now_ms,
)


class ScriptedModel:
    """Plays ``turns`` in order, one per ``stream()`` call, and records every request context."""

    provider = "scripted"
    model = "scripted-v1"

    def __init__(self, turns: Sequence[AssistantMessage]) -> None:
        self._turns = list(turns)
        self.requests: list[AgentContext] = []

    def stream(self, context: AgentContext, *, signal: AbortSignal | None = None) -> ModelStream:
        # A deep copy, so a caller mutating a tool schema later cannot rewrite history.
        self.requests.append(copy.deepcopy(context))
        return ModelStream(self._play(signal))

    async def _play(self, signal: AbortSignal | None) -> AsyncIterator[ModelEvent]:
        if signal is not None and signal.aborted:
            yield ErrorEvent("aborted", self._failure("aborted", "Request was aborted"))
            return
        if not self._turns:
            message = f"ScriptedModel has no turn left for request {len(self.requests)}"
            yield ErrorEvent("error", self._failure("error", message))
            return
        turn = self._turns.pop(0)

        def snapshot(content: list[AssistantContent]) -> AssistantMessage:
            return AssistantMessage(
                tuple(content), turn.provider, turn.model, EMPTY_USAGE, "stop", turn.timestamp
            )

        content: list[AssistantContent] = []
        yield StartEvent(snapshot(content))
        for index, block in enumerate(turn.content):
            content.append(block)
            if isinstance(block, TextContent):
                yield TextDeltaEvent(index, block.text, snapshot(content))
            else:
                delta = block.raw_arguments or json_stringify(block.arguments or {})
                yield ToolCallDeltaEvent(index, delta, snapshot(content))
                yield ToolCallEndEvent(index, block, snapshot(content))
        match turn.stop_reason:
            case "error" | "aborted" as reason:
                yield ErrorEvent(reason, turn)
            case "stop" | "length" | "toolUse" as reason:
                yield DoneEvent(reason, turn)

    def _failure(self, reason: Literal["error", "aborted"], message: str) -> AssistantMessage:
        return AssistantMessage((), self.provider, self.model, EMPTY_USAGE, reason, now_ms(), message)
