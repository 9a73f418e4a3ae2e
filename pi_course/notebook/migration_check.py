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
from .lesson import require, show_events

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

    require("5.3")  # the template reads SSE with the copy's own decoder, and the adapter is 5.2's
    model = OpenAICompatibleModel(provider="token-events", model="m", transport=make_transport(source))
    stream = model.stream(AgentContext((user_message("读取 README.md"),)))
    show_events([event async for event in stream])
    result = await stream.result()
    ok = (
        result.stop_reason == "toolUse"
        and result.content == EXPECTED_CONTENT
        and result.usage == Usage(12, 8, 20)
    )
    print("通过：与主线的 assistant 消息一致" if ok else "未通过：结果与主线不一致")
    return ok


# --- one event type at a time: a check and a hint for each --------------------------------------

#: Each event of the mainline stream, named for the learner, in order.
EVENT_LABELS = ("token", "action（第一段：带 id 和 name）", "action（续段：只有 slot 和 input）", "end")

HINTS = {
    "token": "data 的 text 就是 TextChunk 的 delta。logprob 装不下：把 'token.logprob' 记进 unexpressed。",
    "action": (
        "slot 是 Provider index，input 是 arguments_delta；id 和 name 只在第一段出现，续段里用 None。"
        "confidence 装不下：记 'action.confidence'。"
    ),
    "end": (
        "reason 要换成课程的名字：done→stop、max_tokens→length、action→tool_calls；"
        "usage 的 in、out 对应 Usage(input, output)。"
        "cached 和 cost_usd 装不下：记 'end.usage.cached'、'end.cost_usd'。"
    ),
}


def _events() -> list[bytes]:
    """The mainline stream cut into its four SSE events (each with its blank line)."""
    return [block + b"\n\n" for block in MAINLINE_TOKEN_STREAM.split(b"\n\n") if block.strip()]


async def _chunks_of(make_transport: Callable[[ByteSource], Any], body: bytes) -> tuple[list[Any], str]:
    async def source(request: ProviderRequest) -> AsyncIterator[bytes]:
        yield body

    chunks: list[Any] = []
    try:
        async for chunk in make_transport(source).stream({"model": "m", "messages": []}):
            chunks.append(chunk)
    except Exception as error:  # the learner's TODO, or a check of theirs that fires
        return chunks, f"{type(error).__name__}: {error}"
    return chunks, ""


async def check_each_event(make_transport: Callable[[ByteSource], Any]) -> bool:
    """Feed each of the four events alone to ``make_transport`` and to the reference; one line each.

    A line that differs gets the hint for its event type. Returns whether all four matched.
    """
    from ..migration import TokenEventTransport

    require("5.3")  # the reference beside it reads SSE with the copy's own decoder
    good = 0
    for label, body in zip(EVENT_LABELS, _events(), strict=True):
        wanted, _ = await _chunks_of(TokenEventTransport, body)
        got, raised = await _chunks_of(make_transport, body)
        if not raised and got == wanted:
            good += 1
            print(f"✓ {label}：{got[0]!r}")
            continue
        print(f"✗ {label}：" + (f"抛出 {raised}" if raised else f"得到 {got!r}"))
        print(f"    应当得到：{wanted!r}")
        print(f"    提示：{HINTS[label.split('（')[0]]}")
    print(f"{good}/{len(EVENT_LABELS)} 类事件翻译对了")
    return good == len(EVENT_LABELS)


async def folded_reference(make_transport: Callable[[ByteSource], Any]) -> bool:
    """The reference's event trace, folded until the learner opens it (it is the exercise's answer)."""
    import contextlib
    import html
    import io

    from IPython.display import display

    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        ok = await check_transport(make_transport)
    verdict = "参考 transport：通过" if ok else "参考 transport：没有通过"
    summary = "参考 transport 的事件轨迹（是这道练习的答案：写完你自己的再点开）"
    trace = html.escape(printed.getvalue())
    display(  # type: ignore[no-untyped-call]
        {
            "text/plain": f"{verdict}（事件轨迹折叠着，在 JupyterLab 里点开）",
            "text/html": f"<p>{verdict}</p><details><summary>{summary}</summary><pre>{trace}</pre></details>",
        },
        raw=True,
    )
    return ok
