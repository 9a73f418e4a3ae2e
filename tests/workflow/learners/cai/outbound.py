from __future__ import annotations

import json

from .protocol import ToolCall, json_stringify


def to_provider_messages(context):
    wire = []
    if context.system_prompt is not None:
        wire.append({"role": "system", "content": context.system_prompt})
    for message in context.messages:
        wire.append(_WRITERS[message.role](message))
    return wire


def _user(message):
    return {"role": "user", "content": "\n".join(block.text for block in message.content)}


def _tool_result(message):
    return {
        "role": "tool",
        "tool_call_id": message.tool_call_id,
        "name": message.tool_name,
        "content": "\n".join(block.text for block in message.content),
    }


def _assistant(message):
    return _assistant_to_wire(message.content)


_WRITERS = {"user": _user, "assistant": _assistant, "toolResult": _tool_result}


def _assistant_to_wire(content):
    texts = [block.text for block in content if block.type == "text"]
    calls = [block for block in content if isinstance(block, ToolCall)]
    wire = {"role": "assistant", "content": "\n".join(texts) if texts else None}
    if calls:
        wire["tool_calls"] = []
        for call in calls:
            if call.raw_arguments is not None:
                arguments = call.raw_arguments
            else:
                arguments = json_stringify(call.arguments if call.arguments is not None else {})
            wire["tool_calls"].append(
                {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": arguments}}
            )
    return wire


def to_provider_tools(tools):
    if not tools:
        return None
    return [
        {
            "type": "function",
            "function": {
                "name": tool.name,
                "description": tool.description,
                "parameters": json.loads(json.dumps(tool.parameters)),
            },
        }
        for tool in tools
    ]


def build_request(model, context):
    request = {"model": model, "messages": to_provider_messages(context)}
    tools = to_provider_tools(context.tools)
    if tools is not None:
        request["tools"] = tools
    return request
