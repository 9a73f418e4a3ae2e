"""The chapter's fixtures, shared by the notebooks, the widgets, the checks and the local provider.

The focused tests keep their own literal copies on purpose: a checkpoint must not pass because
a fixture it imports was edited.
"""

from __future__ import annotations

from ..protocol import (
    AgentContext,
    ToolCall,
    ToolDefinition,
    ToolResultMessage,
    Usage,
    assistant_message,
    text,
    user_message,
)
from ..seam import FinishChunk, ProviderChunk, TextChunk, ToolChunk

MAINLINE_PROMPT = "读取 README.md"

#: The chapter's mainline: ``read`` as call-1 at provider index 0, arguments in two fragments.
MAINLINE_CHUNKS: tuple[ProviderChunk, ...] = (
    ToolChunk(0, id="call-1", name="read", arguments_delta='{"path":'),
    ToolChunk(0, arguments_delta='"README.md"}'),
    FinishChunk("tool_calls", Usage(output=2)),
)

#: The text-only partial fixture: two text deltas, then ``stop``.
TEXT_CHUNKS: tuple[ProviderChunk, ...] = (
    TextChunk("正在"),
    TextChunk("读取"),
    FinishChunk("stop", Usage(output=2)),
)


def interleaved_chunks(first: int, second: int) -> tuple[ProviderChunk, ...]:
    """Text between two tools at provider indexes ``first`` and ``second``, their arguments interleaved."""
    return (
        ToolChunk(first, id="call-read", name="read", arguments_delta='{"path":'),
        TextChunk("先读"),
        ToolChunk(second, id="call-search", name="search", arguments_delta='{"query":'),
        ToolChunk(first, arguments_delta='"README.md"}'),
        TextChunk("，再查"),
        ToolChunk(second, arguments_delta='"pi"}'),
        FinishChunk("tool_calls", Usage(input=10, output=6)),
    )


#: The 4/2 diagnostic fixture: non-contiguous provider indexes (the local provider's
#: ``interleaved-4-2`` script sends these chunks; ``interleaved`` the same at 0/1).
DIAGNOSTIC_4_2_CHUNKS = interleaved_chunks(4, 2)

READ_TOOL = ToolDefinition(
    name="read",
    description="Read a UTF-8 text file from the workspace.",
    parameters={
        "type": "object",
        "properties": {"path": {"type": "string", "description": "Path relative to the workspace"}},
        "required": ["path"],
    },
)


def mainline_context() -> AgentContext:
    """The first request of the mainline: the user asks to read README.md, with the read tool."""
    return AgentContext(
        messages=(user_message(MAINLINE_PROMPT, timestamp=1),),
        system_prompt="回答要简洁。",
        tools=(READ_TOOL,),
    )


def outbound_context() -> AgentContext:
    """The chapter's four-role context from "把消息写成 Provider 请求"."""
    return AgentContext(
        system_prompt="回答要简洁。",
        messages=(
            user_message(MAINLINE_PROMPT, timestamp=1),
            assistant_message(
                [ToolCall("call-1", "read", {"path": "README.md"}, '{"path":"README.md"}')],
                "toolUse",
                timestamp=1,
            ),
            ToolResultMessage("call-1", "read", (text("# Project"),), is_error=False, timestamp=1),
        ),
    )
