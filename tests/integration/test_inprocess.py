"""The in-process provider (the browser edition's) against the loopback one, on CPython.

In Pyodide ``local_model()`` runs the provider's starlette app in process
(``pi_course.provider.inprocess``). Here both paths run side by side: every script, the faults
and an abort mid-stream must give the same events and the same final message, and the body must
really stream (a chunk reaches the reader while the app is still writing the next).
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from pi_course import (
    AbortController,
    AgentContext,
    OpenAICompatibleModel,
    OpenAICompatibleTransport,
    ToolResultMessage,
    text,
    user_message,
)
from pi_course.chapter.fixtures import READ_TOOL
from pi_course.provider import connect as connect_module
from pi_course.provider.inprocess import IN_PROCESS_BASE_URL, InProcessTransport, local_client
from pi_course.provider.server import SCRIPTS, LocalProvider

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def provider() -> Iterator[LocalProvider]:
    with LocalProvider() as running:
        yield running


def loopback(provider: LocalProvider, script: str) -> OpenAICompatibleModel:
    transport = OpenAICompatibleTransport(base_url=provider.base_url, api_key="local")
    return OpenAICompatibleModel(provider="local", model=script, transport=transport)


def in_process(script: str) -> OpenAICompatibleModel:
    transport = OpenAICompatibleTransport(
        base_url=IN_PROCESS_BASE_URL, api_key="local", client=local_client()
    )
    return OpenAICompatibleModel(provider="local", model=script, transport=transport)


def event_facts(event: Any) -> tuple[object, ...]:
    """What a consumer reads from an event (the partial/final message included)."""
    message = (
        getattr(event, "partial", None) or getattr(event, "message", None) or getattr(event, "error", None)
    )
    return (
        event.type,
        getattr(event, "content_index", None),
        getattr(event, "delta", None),
        getattr(event, "reason", None),
        getattr(event, "tool_call", None),
        message,
    )


async def run_turn(
    model: OpenAICompatibleModel, context: AgentContext, abort_after: int | None = None
) -> list[tuple[object, ...]]:
    controller = AbortController()
    facts = []
    try:
        async for event in model.stream(context, signal=controller.signal):
            facts.append(event_facts(event))
            if abort_after is not None and event.type == "text_delta":
                abort_after -= 1
                if abort_after == 0:
                    controller.abort()
    finally:
        await model.transport.aclose()  # type: ignore[attr-defined]
    return facts


def normalized(facts: list[tuple[object, ...]]) -> list[tuple[object, ...]]:
    """Timestamps differ between two runs; everything else must not."""
    out = []
    for fact in facts:
        message = fact[-1]
        if message is not None:
            message = (message.content, message.stop_reason, message.usage, message.error_message)
        out.append((*fact[:-1], message))
    return out


FIRST = AgentContext((user_message("读取 README.md", timestamp=1),), tools=(READ_TOOL,))


@pytest.mark.parametrize("script", sorted(SCRIPTS))
async def test_every_script_gives_the_same_events_in_process_as_over_loopback(
    provider: LocalProvider, script: str
) -> None:
    over_loopback = await run_turn(loopback(provider, script), FIRST)
    in_the_process = await run_turn(in_process(script), FIRST)
    assert normalized(in_the_process) == normalized(over_loopback)
    assert [fact[0] for fact in in_the_process].count("done") + [fact[0] for fact in in_the_process].count(
        "error"
    ) == 1


async def test_mainline_second_turn_and_a_recording_match(provider: LocalProvider) -> None:
    first = await run_turn(in_process("mainline"), FIRST)
    call_turn = first[-1][-1]
    result = ToolResultMessage("call-1", "read", (text("# Project"),), False, timestamp=2)
    second = AgentContext((*FIRST.messages, call_turn, result), tools=(READ_TOOL,))  # type: ignore[arg-type]
    assert normalized(await run_turn(in_process("mainline"), second)) == normalized(
        await run_turn(loopback(provider, "mainline"), second)
    )
    recorded = "recorded/ollama-parallel-tool-calls"
    assert normalized(await run_turn(in_process(recorded), FIRST)) == normalized(
        await run_turn(loopback(provider, recorded), FIRST)
    )


async def test_abort_mid_stream_gives_the_same_aborted_message(provider: LocalProvider) -> None:
    over_loopback = await run_turn(loopback(provider, "slow"), FIRST, abort_after=2)
    in_the_process = await run_turn(in_process("slow"), FIRST, abort_after=2)
    assert normalized(in_the_process) == normalized(over_loopback)
    last = in_the_process[-1]
    assert (last[0], last[3]) == ("error", "aborted")
    assert last[-1].content == (text("一二"),)  # type: ignore[attr-defined]


def gated_app(gate: asyncio.Event, finished: list[str]) -> Any:
    """An ASGI app that sends one chunk, then waits for ``gate`` before the rest."""

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await receive()
        await send(
            {"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]}
        )
        try:
            await send({"type": "http.response.body", "body": b"first", "more_body": True})
            await gate.wait()
            await send({"type": "http.response.body", "body": b"second", "more_body": False})
            finished.append("complete")
        except asyncio.CancelledError:
            finished.append("cancelled")
            raise

    return app


async def test_the_body_streams_a_chunk_arrives_while_the_app_still_writes() -> None:
    gate, finished = asyncio.Event(), []
    async with httpx.AsyncClient(transport=InProcessTransport(gated_app(gate, finished))) as client:
        async with asyncio.timeout(5):  # a transport that buffers the whole body would hang here
            async with client.stream("GET", "http://app.local/") as response:
                chunks = response.aiter_bytes()
                assert await anext(chunks) == b"first"
                assert finished == []
                gate.set()
                assert [chunk async for chunk in chunks] == [b"second"]
    assert finished == ["complete"]


async def test_closing_the_response_early_cancels_the_app() -> None:
    gate, finished = asyncio.Event(), []
    client = httpx.AsyncClient(transport=InProcessTransport(gated_app(gate, finished)))
    async with client, client.stream("GET", "http://app.local/") as response:
        assert await anext(response.aiter_bytes()) == b"first"
    assert finished == ["cancelled"]


async def test_an_app_that_fails_before_answering_is_an_http_500() -> None:
    async def broken(scope: Any, receive: Any, send: Any) -> None:
        raise RuntimeError("boom")

    async with httpx.AsyncClient(transport=InProcessTransport(broken)) as client:
        response = await client.get("http://app.local/")
    assert (response.status_code, response.text) == (500, "Internal Server Error")


async def test_the_request_reaches_the_app_as_sent() -> None:
    seen: dict[str, Any] = {}

    async def echo(scope: Any, receive: Any, send: Any) -> None:
        seen.update(scope=scope, body=(await receive())["body"])
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    async with httpx.AsyncClient(transport=InProcessTransport(echo)) as client:
        response = await client.post("http://app.local:8080/v1/x?a=1", content=b"{}", headers={"X-K": "v"})
    assert response.status_code == 204
    scope = seen["scope"]
    assert (scope["method"], scope["path"], scope["query_string"], scope["server"]) == (
        "POST", "/v1/x", b"a=1", ("app.local", 8080)
    )  # fmt: skip
    assert (b"x-k", b"v") in scope["headers"] and seen["body"] == b"{}"


async def test_local_model_uses_the_in_process_provider_in_a_browser(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "platform", "emscripten")  # pi_course_here.in_a_tab() reads it

    def no_loopback() -> str:
        raise AssertionError("a browser has no loopback server")

    monkeypatch.setattr(connect_module, "local_provider_url", no_loopback)
    model = connect_module.local_model("mainline")
    assert model.transport.url == IN_PROCESS_BASE_URL + "/chat/completions"  # type: ignore[attr-defined]
    facts = await run_turn(model, FIRST)
    assert facts[-1][0] == "done" and facts[-1][3] == "toolUse"
