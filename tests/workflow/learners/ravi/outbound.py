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
    wire: list[WireMessage] = []
    if context.system_prompt:
        wire.append({"role": "system", "content": context.system_prompt})
    for message in context.messages:
        wire.append(_message_to_wire(message))
    return wire


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
    calls = [block for block in content if isinstance(block, ToolCall)]
    wire: WireMessage = {"role": "assistant", "content": _joined_text(texts) if texts else None}
    if calls:
        wire["tool_calls"] = [_tool_call_to_wire(call) for call in calls]
    return wire


def _tool_call_to_wire(call: ToolCall) -> WireMessage:
    # The provider's own characters win: re-serialising a parsed object may reorder keys or change
    # spacing, and cannot represent a truncated original at all.
    if call.raw_arguments is not None:
        arguments = call.raw_arguments
    else:
        arguments = json_stringify(call.arguments if call.arguments is not None else {})
    return {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": arguments}}


def to_provider_tools(tools: Sequence[ToolDefinition] | None) -> list[WireMessage] | None:
    """Lab 5.1: Wrap each definition as ``{"type": "function", "function": ...}``; no tools → ``None``."""
    if not tools:
        return None
    return [
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


def build_request(model: str, context: AgentContext) -> dict[str, Any]:
    """Lab 5.1: The JSON-ready ``ProviderRequest``: no ``tools`` key at all when there are none."""
    request: dict[str, Any] = {"model": model, "messages": to_provider_messages(context)}
    tools = to_provider_tools(context.tools)
    if tools is not None:
        request["tools"] = tools
    return request
