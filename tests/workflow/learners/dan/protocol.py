from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from .protocol import AgentMessage, _frozen_tuple


@dataclass(frozen=True)
class ToolDefinition:
    name: str
    description: str
    parameters: Mapping[str, object]


@dataclass(frozen=True)
class AgentContext:
    messages: tuple[AgentMessage, ...]
    system_prompt: str | None = None
    tools: tuple[ToolDefinition, ...] | None = None

    def __post_init__(self) -> None:
        _frozen_tuple(self, "messages")
        match self.tools:
            case None | tuple():
                pass
            case other:
                object.__setattr__(self, "tools", tuple(other))
