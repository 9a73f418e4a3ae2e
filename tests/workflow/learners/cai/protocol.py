from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from .protocol import AgentMessage


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
        object.__setattr__(self, "messages", tuple(self.messages))
        if self.tools is not None:
            object.__setattr__(self, "tools", tuple(self.tools))


__all__.append("ToolDefinition")  # noqa: F821
