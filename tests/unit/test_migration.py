"""The migration exercise's reference transport, through the unchanged adapter."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from pi_course import AgentContext, OpenAICompatibleModel, TextContent, ToolCall, Usage, user_message
from pi_course.migration import MAINLINE_TOKEN_STREAM, UNEXPRESSED, TokenEventTransport

pytestmark = pytest.mark.anyio


def reads_of(raw: bytes, size: int):  # type: ignore[no-untyped-def]
    async def source(request: object) -> AsyncIterator[bytes]:
        for start in range(0, len(raw), size):
            yield raw[start : start + size]

    return source


@pytest.mark.parametrize("size", [1, 7, 4096])
async def test_the_mainline_in_another_protocol_ends_in_the_same_assistant_message(size: int) -> None:
    transport = TokenEventTransport(reads_of(MAINLINE_TOKEN_STREAM, size))
    model = OpenAICompatibleModel(provider="token-events", model="m", transport=transport)
    result = await model.stream(AgentContext((user_message("读取 README.md"),))).result()

    assert result.stop_reason == "toolUse"
    assert result.content == (
        TextContent("先读取文件。"),
        ToolCall("call-1", "read", {"path": "README.md"}, '{"path":"README.md"}'),
    )
    assert result.usage == Usage(12, 8, 20)
    assert transport.unexpressed == set(UNEXPRESSED)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b"event: ping\ndata: {}\n\n", "unknown event type 'ping'"),
        (b'event: token\ndata: {"text": 1}\n\n', "token.text must be a string"),
        (b'event: action\ndata: {"slot": -1}\n\n', "action.slot must be a non-negative integer"),
        (b'event: end\ndata: {"reason": "halt"}\n\n', "end.reason 'halt' is not one of"),
        (b"event: token\ndata: nope\n\n", "token data is not valid JSON"),
    ],
)
async def test_bad_events_end_in_one_error_naming_the_field(raw: bytes, message: str) -> None:
    model = OpenAICompatibleModel(provider="t", model="m", transport=TokenEventTransport(reads_of(raw, 5)))
    events = [event async for event in model.stream(AgentContext(()))]
    assert [e.type for e in events] == ["start", "error"]
    assert message in (events[-1].error.error_message or "")


async def test_check_transport_accepts_the_reference_and_rejects_a_stub(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from pi_course.notebook.migration_check import check_transport

    class Stub:
        def __init__(self, source: object) -> None:
            pass

        async def stream(self, request: object, *, signal: object = None) -> AsyncIterator[object]:
            raise NotImplementedError("TODO")
            yield

    assert await check_transport(TokenEventTransport)
    assert not await check_transport(Stub)
    printed = capsys.readouterr().out
    assert "error          error: TODO" in printed
    assert printed.count("通过：与主线的 assistant 消息一致") == 1 and "未通过：结果与主线不一致" in printed


def test_the_lesson_module_prints_nothing_and_holds_no_checker() -> None:
    import pi_course.migration as migration

    assert not hasattr(migration, "check_transport")
    source = Path(migration.__file__).read_text(encoding="utf-8")
    assert "print(" not in source and "notebook" not in source.split('"""', 2)[2]
