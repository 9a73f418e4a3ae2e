from __future__ import annotations

import copy
import json

from .protocol import AssistantMessage, TextContent, ToolCall, ToolResultMessage, UserMessage


def to_provider_messages(context):
    wire = []
    if context.system_prompt:
        wire.append({"role": "system", "content": context.system_prompt})
    for message in context.messages:
        match message:
            case UserMessage(content=blocks):
                wire.append({"role": "user", "content": _words(blocks)})
            case AssistantMessage(content=blocks):
                wire.append(_assistant_to_wire(blocks))
            case ToolResultMessage(tool_call_id=call_id, tool_name=name, content=blocks):
                wire.append(
                    {"role": "tool", "tool_call_id": call_id, "name": name, "content": _words(blocks)}
                )
    return wire


def _assistant_to_wire(content):
    words = [block for block in content if isinstance(block, TextContent)]
    wire = {"role": "assistant", "content": _words(words) if words else None}
    calls = []
    for block in content:
        match block:
            case ToolCall(id=call_id, name=name, raw_arguments=str() as raw):
                calls.append(_wire_call(call_id, name, raw))
            case ToolCall(id=call_id, name=name, arguments=arguments):
                calls.append(
                    _wire_call(
                        call_id, name, json.dumps(arguments or {}, separators=(",", ":"), ensure_ascii=False)
                    )
                )
    if calls:
        wire["tool_calls"] = calls
    return wire


def to_provider_tools(tools):
    match tools:
        case None | () | []:
            return None
    return [
        {
            "type": "function",
            "function": {
                "name": tool.name,
                "description": tool.description,
                "parameters": copy.deepcopy(dict(tool.parameters)),
            },
        }
        for tool in tools
    ]


def build_request(model, context):
    request = {"model": model, "messages": to_provider_messages(context)}
    if (tools := to_provider_tools(context.tools)) is not None:
        request["tools"] = tools
    return request


def _wire_call(call_id, name, arguments):
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def _words(blocks):
    return "".join(block.text for block in blocks)
