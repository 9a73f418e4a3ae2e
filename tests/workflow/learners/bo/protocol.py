from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from .protocol import AgentMessage, _frozen_tuple


@dataclass(frozen=True)
class AgentContext:
    messages: tuple[AgentMessage, ...]
    system_prompt: str | None = None
    tools: tuple[ToolDefinition, ...] | None = None

    def __post_init__(self) -> None:
        _frozen_tuple(self, "messages")
        if self.tools is not None and not isinstance(self.tools, tuple):
            object.__setattr__(self, "tools", tuple(self.tools))


@dataclass(frozen=True)
class ToolDefinition:
    """A tool the model may call, with the JSON Schema of its arguments."""

    name: str
    description: str
    parameters: Mapping[str, object]


__all__ += ["ToolDefinition"]  # noqa: F821
