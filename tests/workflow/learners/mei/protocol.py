from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .protocol import AgentMessage, _frozen_tuple  # given in this module


@dataclass(frozen=True)
class ToolDefinition:
    name: str
    description: str
    parameters: dict[str, Any]


@dataclass(frozen=True)
class AgentContext:
    messages: tuple[AgentMessage, ...]
    system_prompt: str | None = None
    tools: tuple[ToolDefinition, ...] | None = None

    def __post_init__(self) -> None:
        _frozen_tuple(self, "messages")
        if self.tools is not None:
            _frozen_tuple(self, "tools")


__all__.append("ToolDefinition")  # noqa: F821
