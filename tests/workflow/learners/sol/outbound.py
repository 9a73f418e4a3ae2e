from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .outbound import WireMessage, _joined_text, _plain_copy  # given in this module
from .protocol import (
    AgentContext,
    AssistantMessage,
    TextContent,
    ToolCall,
    ToolDefinition,
    ToolResultMessage,
    UserMessage,
    json_stringify,
)


def to_provider_messages(context: AgentContext) -> list[WireMessage]:
    """Lab 5.1: System prompt first, then one wire message per canonical message."""
    system = (
        [{"role": "system", "content": context.system_prompt}] if context.system_prompt is not None else []
    )
    return [*system, *map(_message_to_wire, context.messages)]


def _message_to_wire(message: UserMessage | AssistantMessage | ToolResultMessage) -> WireMessage:
    match message:
        case UserMessage(content=blocks):
            return {"role": "user", "content": _joined_text(blocks)}
        case AssistantMessage(content=blocks):
            return _assistant_to_wire(blocks)
        case ToolResultMessage(tool_call_id=call_id, tool_name=name, content=blocks):
            return {"role": "tool", "tool_call_id": call_id, "name": name, "content": _joined_text(blocks)}
    raise TypeError(f"not a canonical message: {message!r}")


def _assistant_to_wire(content: Sequence[TextContent | ToolCall]) -> WireMessage:
    """Lab 5.1: Text (or ``None``) plus ``tool_calls``; arguments prefer the provider's own raw text."""
    texts = [block for block in content if isinstance(block, TextContent)]
    calls = [
        {
            "id": call.id,
            "type": "function",
            "function": {
                "name": call.name,
                "arguments": call.raw_arguments
                if call.raw_arguments is not None
                else json_stringify(call.arguments if call.arguments is not None else {}),
            },
        }
        for call in content
        if isinstance(call, ToolCall)
    ]
    return {
        "role": "assistant",
        "content": _joined_text(texts) if texts else None,
        **({"tool_calls": calls} if calls else {}),
    }


def to_provider_tools(tools: Sequence[ToolDefinition] | None) -> list[WireMessage] | None:
    """Lab 5.1: Wrap each definition as ``{"type": "function", "function": ...}``; no tools → ``None``."""
    return (
        [
            {
                "type": "function",
                "function": {
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": _plain_copy(tool.parameters),
                },
            }
            for tool in tools
        ]
        if tools
        else None
    )


def build_request(model: str, context: AgentContext) -> dict[str, Any]:
    """Lab 5.1: The JSON-ready ``ProviderRequest``: no ``tools`` key at all when there are none."""
    tools = to_provider_tools(context.tools)
    return {
        "model": model,
        "messages": to_provider_messages(context),
        **({"tools": tools} if tools is not None else {}),
    }
