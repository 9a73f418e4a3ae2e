"""Learner-style adapters with the chapter's deliberate bug, written independently of the reference.

Shared by the stepper tests (model and HTML): two shapes of ``content_index = chunk.index``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class AppendThenEmit:
    """The chapter's deliberate bug (content_index = chunk.index) in a learner's own adapter that
    appends the new call first, then emits its event naming the recorded slot."""

    transport: Any
    events: list[Any] = field(default_factory=list)

    def stream(self, context: Any) -> Any:
        return self._events()

    async def _events(self) -> Any:
        from pi_course.protocol import (
            AssistantMessage,
            ErrorEvent,
            StartEvent,
            TextContent,
            TextDeltaEvent,
            ToolCall,
            ToolCallDeltaEvent,
            Usage,
        )

        content: list[Any] = []
        text_slot: int | None = None
        slots: dict[int, int] = {}
        raw: dict[int, str] = {}

        def message(error: str | None = None) -> AssistantMessage:
            reason = "error" if error else "stop"
            return AssistantMessage(tuple(content), "p", "m", Usage(), reason, 0, error)

        yield StartEvent(message())
        try:
            async for chunk in self.transport.stream({}):
                if chunk.type == "text":
                    if text_slot is None:
                        text_slot = len(content)
                        content.append(TextContent(""))
                    content[text_slot] = TextContent(content[text_slot].text + chunk.delta)
                    yield TextDeltaEvent(text_slot, chunk.delta, message())
                elif chunk.type == "tool":
                    first = chunk.index not in slots
                    if first:
                        slots[chunk.index] = chunk.index  # the bug
                    raw[chunk.index] = raw.get(chunk.index, "") + (chunk.arguments_delta or "")
                    call = ToolCall(chunk.id or "", chunk.name or "", raw[chunk.index], raw[chunk.index])
                    if first:
                        content.append(call)
                    else:
                        content[slots[chunk.index]] = call
                    yield ToolCallDeltaEvent(slots[chunk.index], chunk.arguments_delta or "", message())
        except Exception as error:
            yield ErrorEvent("error", message(str(error)))


@dataclass
class WriteThenEmit:
    """The reference's shape with the bug: a placeholder is appended, then content[slot] written."""

    transport: Any

    def stream(self, context: Any) -> Any:
        return self._events()

    async def _events(self) -> Any:
        from pi_course.protocol import AssistantMessage, ErrorEvent, StartEvent, ToolCall, Usage

        blocks: list[Any] = []
        slots: dict[int, int] = {}

        def snapshot(error: str | None = None) -> AssistantMessage:
            return AssistantMessage(tuple(blocks), "p", "m", Usage(), "error" if error else "stop", 0, error)

        yield StartEvent(snapshot())
        try:
            async for chunk in self.transport.stream({}):
                if chunk.type == "tool":
                    if chunk.index not in slots:
                        slots[chunk.index] = chunk.index  # the bug
                        blocks.append(ToolCall(f"tmp-{chunk.index}", "", "", ""))
                    blocks[slots[chunk.index]] = ToolCall(chunk.id or "", chunk.name or "", "", "")
        except Exception as error:
            yield ErrorEvent("error", snapshot(str(error)))
