"""Practice 5.1 — the outbound conversion: canonical context → OpenAI wire messages and tools.

Both functions are pure: they read the context and build new ``dict``/``list`` values.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .protocol import (
    AgentContext,
    AssistantMessage,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    json_stringify,
)

if TYPE_CHECKING:  # only an annotation here; a practice copy starts without ToolDefinition
    from .protocol import ToolDefinition

WireMessage = dict[str, Any]


def to_provider_messages(context: AgentContext) -> list[WireMessage]:
    """Lab 5.1: System prompt first, then one wire message per canonical message."""
    # BEGIN LAB 5.1
    messages: list[WireMessage] = []
    if context.system_prompt:
        messages.append({"role": "system", "content": context.system_prompt})
    for message in context.messages:
        match message:
            case UserMessage(content=content):
                messages.append({"role": "user", "content": _joined_text(content)})
            case AssistantMessage(content=content):
                messages.append(_assistant_to_wire(content))
            case ToolResultMessage():
                messages.append(
                    {
                        "role": "tool",
                        "tool_call_id": message.tool_call_id,
                        "name": message.tool_name,
                        "content": _joined_text(message.content),
                    }
                )
    return messages
    # END LAB 5.1


def _assistant_to_wire(content: Sequence[TextContent | ToolCall]) -> WireMessage:
    """Lab 5.1: Text (or ``None``) plus ``tool_calls``; arguments prefer the provider's own raw text."""
    # BEGIN LAB 5.1
    texts = [block for block in content if isinstance(block, TextContent)]
    calls = [block for block in content if isinstance(block, ToolCall)]
    wire: WireMessage = {"role": "assistant", "content": _joined_text(texts) if texts else None}
    if calls:
        wire["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {
                    "name": call.name,
                    # Re-serializing parsed arguments could reorder keys or lose a truncated
                    # original, so the raw string wins whenever the provider gave one.
                    "arguments": call.raw_arguments
                    if call.raw_arguments is not None
                    else json_stringify(call.arguments if call.arguments is not None else {}),
                },
            }
            for call in calls
        ]
    return wire
    # END LAB 5.1


def _joined_text(blocks: Sequence[TextContent]) -> str:
    return "\n".join(block.text for block in blocks)


def to_provider_tools(tools: Sequence[ToolDefinition] | None) -> list[WireMessage] | None:
    """Lab 5.1: Wrap each definition as ``{"type": "function", "function": ...}``; no tools → ``None``."""
    # BEGIN LAB 5.1
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
    # END LAB 5.1


def _plain_copy(value: object) -> Any:
    """A JSON-shaped deep copy, so mutating the request never reaches the caller's schema."""
    if isinstance(value, Mapping):
        return {str(key): _plain_copy(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain_copy(item) for item in value]
    return value


def build_request(model: str, context: AgentContext) -> dict[str, Any]:
    """Lab 5.1: The JSON-ready ``ProviderRequest``: no ``tools`` key at all when there are none."""
    # BEGIN LAB 5.1
    request: dict[str, Any] = {"model": model, "messages": to_provider_messages(context)}
    tools = to_provider_tools(context.tools)
    if tools is not None:
        request["tools"] = tools
    return request
    # END LAB 5.1
