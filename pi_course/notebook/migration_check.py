"""05-6's checker for the learner's migration transport: the notebook side of ``pi_course.migration``.

The lesson module holds the protocol, the reference transport and the mainline bytes; this one
runs a transport the learner wrote in the notebook through the unchanged adapter and prints the
verdict, so the lesson module stays free of printing.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

from ..adapter import OpenAICompatibleModel
from ..migration import MAINLINE_TOKEN_STREAM, ByteSource
from ..protocol import AgentContext, TextContent, ToolCall, Usage, user_message
from ..seam import ProviderRequest
from .display import describe_event

#: The chapter's assistant message for the mainline, as the token/action/end stream carries it.
EXPECTED_CONTENT = (
    TextContent("先读取文件。"),
    ToolCall("call-1", "read", {"path": "README.md"}, '{"path":"README.md"}'),
)


async def check_transport(make_transport: Callable[[ByteSource], Any], read_size: int = 7) -> bool:
    """Run the mainline token stream through ``make_transport`` and the unchanged adapter.

    The bytes arrive in reads of ``read_size``. Prints every event and a verdict line, and
    returns whether the result is the chapter's assistant message: the text, then ``read`` as
    call-1 with ``{"path": "README.md"}``, stop reason ``toolUse``, usage 12/8.
    """

    async def source(request: ProviderRequest) -> AsyncIterator[bytes]:
        for start in range(0, len(MAINLINE_TOKEN_STREAM), read_size):
            yield MAINLINE_TOKEN_STREAM[start : start + read_size]

    model = OpenAICompatibleModel(provider="token-events", model="m", transport=make_transport(source))
    stream = model.stream(AgentContext((user_message("读取 README.md"),)))
    async for event in stream:
        print(describe_event(event))
    result = await stream.result()
    ok = (
        result.stop_reason == "toolUse"
        and result.content == EXPECTED_CONTENT
        and result.usage == Usage(12, 8, 20)
    )
    print("通过：与主线的 assistant 消息一致" if ok else "未通过：结果与主线不一致")
    return ok
