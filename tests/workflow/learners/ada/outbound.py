from __future__ import annotations

import copy
import json


def to_provider_messages(context):
    wire = []
    if context.system_prompt:
        wire.append({"role": "system", "content": context.system_prompt})
    for message in context.messages:
        if message.role == "user":
            wire.append({"role": "user", "content": "\n".join(part.text for part in message.content)})
        elif message.role == "assistant":
            wire.append(_assistant_to_wire(message.content))
        elif message.role == "toolResult":
            wire.append(
                {
                    "role": "tool",
                    "tool_call_id": message.tool_call_id,
                    "name": message.tool_name,
                    "content": "\n".join(part.text for part in message.content),
                }
            )
    return wire


def _assistant_to_wire(content):
    texts = []
    calls = []
    for block in content:
        if block.type == "text":
            texts.append(block.text)
        else:
            if block.raw_arguments is None:
                arguments = json.dumps(block.arguments or {}, separators=(",", ":"), ensure_ascii=False)
            else:
                arguments = block.raw_arguments
            calls.append(
                {"id": block.id, "type": "function", "function": {"name": block.name, "arguments": arguments}}
            )
    wire = {"role": "assistant", "content": "\n".join(texts) if texts else None}
    if calls:
        wire["tool_calls"] = calls
    return wire


def to_provider_tools(tools):
    if tools is None or len(tools) == 0:
        return None
    result = []
    for tool in tools:
        function = {
            "name": tool.name,
            "description": tool.description,
            "parameters": copy.deepcopy(dict(tool.parameters)),
        }
        result.append({"type": "function", "function": function})
    return result


def build_request(model, context):
    request = {"model": model, "messages": to_provider_messages(context)}
    tools = to_provider_tools(context.tools)
    if tools is not None:
        request["tools"] = tools
    return request
