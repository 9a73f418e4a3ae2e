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
    messages = []
    if context.system_prompt:
        messages.append({"role": "system", "content": context.system_prompt})
    for message in context.messages:
        if isinstance(message, UserMessage):
            messages.append({"role": "user", "content": _joined_text(message.content)})
        elif isinstance(message, AssistantMessage):
            messages.append(_assistant_to_wire(message.content))
        elif isinstance(message, ToolResultMessage):
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": message.tool_call_id,
                    "name": message.tool_name,
                    "content": _joined_text(message.content),
                }
            )
    return messages


def _assistant_to_wire(content: Sequence[TextContent | ToolCall]) -> WireMessage:
    """Lab 5.1: Text (or ``None``) plus ``tool_calls``; arguments prefer the provider's own raw text."""
    texts = []
    tool_calls = []
    for block in content:
        if isinstance(block, TextContent):
            texts.append(block)
        elif isinstance(block, ToolCall):
            # call.rawArguments ?? JSON.stringify(call.arguments ?? {})
            if block.raw_arguments is not None:
                arguments = block.raw_arguments
            elif block.arguments is not None:
                arguments = json_stringify(block.arguments)
            else:
                arguments = json_stringify({})
            tool_calls.append(
                {
                    "id": block.id,
                    "type": "function",
                    "function": {"name": block.name, "arguments": arguments},
                }
            )
    wire = {"role": "assistant"}
    if len(texts) > 0:
        wire["content"] = _joined_text(texts)
    else:
        wire["content"] = None
    if len(tool_calls) > 0:
        wire["tool_calls"] = tool_calls
    return wire


def to_provider_tools(tools: Sequence[ToolDefinition] | None) -> list[WireMessage] | None:
    """Lab 5.1: Wrap each definition as ``{"type": "function", "function": ...}``; no tools → ``None``."""
    if tools is None or len(tools) == 0:
        return None
    result = []
    for tool in tools:
        result.append(
            {
                "type": "function",
                "function": {
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": _plain_copy(tool.parameters),
                },
            }
        )
    return result


def build_request(model: str, context: AgentContext) -> dict[str, Any]:
    """Lab 5.1: The JSON-ready ``ProviderRequest``: no ``tools`` key at all when there are none."""
    request = {"model": model, "messages": to_provider_messages(context)}
    tools = to_provider_tools(context.tools)
    if tools is not None:
        request["tools"] = tools
    return request
