from __future__ import annotations

from .protocol import AssistantMessage, ToolCall, ToolResultMessage, UserMessage, json_stringify


def to_provider_messages(context):
    out = [{"role": "system", "content": context.system_prompt}] if context.system_prompt else []
    for message in context.messages:
        match message:
            case UserMessage():
                out.append({"role": "user", "content": _text_of_blocks(message.content)})
            case AssistantMessage():
                out.append(_assistant_to_wire(message.content))
            case ToolResultMessage():
                out.append(
                    {
                        "role": "tool",
                        "tool_call_id": message.tool_call_id,
                        "name": message.tool_name,
                        "content": _text_of_blocks(message.content),
                    }
                )
    return out


def _assistant_to_wire(content):
    text_blocks = [block for block in content if not isinstance(block, ToolCall)]
    wire = {"role": "assistant", "content": _text_of_blocks(text_blocks) if text_blocks else None}
    tool_calls = [_wire_call(block) for block in content if isinstance(block, ToolCall)]
    if tool_calls:
        wire["tool_calls"] = tool_calls
    return wire


def to_provider_tools(tools):
    if not tools:
        return None
    return [
        {
            "type": "function",
            "function": {"name": t.name, "description": t.description, "parameters": dict(t.parameters)},
        }
        for t in tools
    ]


def build_request(model, context):
    tools = to_provider_tools(context.tools)
    return {"model": model, "messages": to_provider_messages(context)} | ({"tools": tools} if tools else {})


def _text_of_blocks(blocks):
    return "\n".join(block.text for block in blocks)


def _wire_call(call):
    raw = call.raw_arguments
    arguments = (
        raw if raw is not None else json_stringify(call.arguments if call.arguments is not None else {})
    )
    return {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": arguments}}
