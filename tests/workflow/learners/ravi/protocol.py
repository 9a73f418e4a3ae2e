from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from .protocol import AgentMessage, _frozen_tuple  # given in this module


@dataclass(frozen=True)
class ToolDefinition:
    """A tool the model may call: its name, what it does, and the JSON Schema of its arguments.

    The schema only goes into the request here; chapter 06 adds a runtime validator for it.
    """

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
        if self.tools is not None:
            _frozen_tuple(self, "tools")


__all__.append("ToolDefinition")  # noqa: F821
