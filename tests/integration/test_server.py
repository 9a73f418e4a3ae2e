"""Integration over real loopback: the embedded provider, pi_course's transport, and oracles.

The official openai-python package is the oracle for the wire format: if its client and its own
stream accumulator read the local server's bytes the same way pi_course does, both speak it.
"""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Iterator

import httpx
import openai
import pytest
from openai._streaming import SSEDecoder
from openai.lib.streaming.chat import ChatCompletionStreamState
from openai.types.chat import ChatCompletionChunk

from pi_course import (
    AgentContext,
    AssistantMessage,
    OpenAICompatibleModel,
    OpenAICompatibleTransport,
    TextContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    text,
    user_message,
)
from pi_course.chapter.fixtures import READ_TOOL
from pi_course.chapter.wire import choice_payload, usage_payload
from pi_course.provider.connect import connect
from pi_course.provider.server import (
    SCRIPTS,
    LocalProvider,
    Pause,
    recorded_models,
    recording_bytes,
    recordings_index,
)

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def provider() -> Iterator[LocalProvider]:
    with LocalProvider() as running:
        yield running


def open_connections(provider: LocalProvider) -> int:
    return len(provider._server.server_state.connections)


async def settle(provider: LocalProvider) -> int:
    for _ in range(100):
        if open_connections(provider) == 0:
            break
        await asyncio.sleep(0.02)
    return open_connections(provider)


async def turn(provider: LocalProvider, model: str, context: AgentContext) -> tuple[list, AssistantMessage]:  # type: ignore[type-arg]
    async with OpenAICompatibleTransport(base_url=provider.base_url, api_key="local") as transport:
        llm = OpenAICompatibleModel(provider="local", model=model, transport=transport)
        stream = llm.stream(context)
        events = [event async for event in stream]
        return events, await stream.result()


async def test_mainline_end_to_end_over_loopback(provider: LocalProvider) -> None:
    first = AgentContext((user_message("读取 README.md", timestamp=1),), tools=(READ_TOOL,))
    events, call_turn = await turn(provider, "mainline", first)
    assert [(e.type, getattr(e, "delta", None)) for e in events[:3]] == [
        ("start", None),
        ("toolcall_delta", '{"path":'),
        ("toolcall_delta", '"README.md"}'),
    ]
    [call] = call_turn.content
    assert call == ToolCall("call-1", "read", {"path": "README.md"}, '{"path":"README.md"}')
    assert (call_turn.stop_reason, call_turn.usage) == ("toolUse", Usage(30, 2, 32))

    result = ToolResultMessage("call-1", "read", (text("# Project"),), False, timestamp=2)
    second = AgentContext((*first.messages, call_turn, result), tools=(READ_TOOL,))
    _, answer = await turn(provider, "mainline", second)
    assert answer.content == (TextContent("README.md 的第一行是 # Project。"),)
    assert answer.stop_reason == "stop"
    assert await settle(provider) == 0


class SeenGate(Pause):
    """A pause in a script that lasts until the client has seen the delta sent before it."""

    def __init__(self) -> None:
        object.__setattr__(self, "seen", threading.Event())
        object.__setattr__(self, "waited_in_vain", False)

    @property
    def seconds(self) -> float:
        # Read by the provider's thread after it wrote the delta; a client that buffered the reply
        # would never see it, so the wait is bounded (a hang bound, far above any machine's load).
        if not self.seen.wait(30):
            object.__setattr__(self, "waited_in_vain", True)
        return 0.0


async def test_events_are_delivered_incrementally(
    provider: LocalProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each delta must reach the client before the provider sends the next one: the provider waits
    # for it, so the order is asserted, not a timing that a busy machine could blur.
    pieces = ("一", "二", "三", "四", "五")
    gates = [SeenGate() for _ in pieces]
    steps: list[object] = []
    for piece, gate in zip(pieces, gates, strict=True):
        steps += [choice_payload({"content": piece}), gate]
    steps += [choice_payload({}, "stop"), usage_payload(5, 5)]
    monkeypatch.setitem(SCRIPTS, "gated", lambda messages: steps)
    seen: list[str] = []
    async with OpenAICompatibleTransport(base_url=provider.base_url, api_key="local") as transport:
        llm = OpenAICompatibleModel(provider="local", model="gated", transport=transport)
        async for event in llm.stream(AgentContext((user_message("数到五"),))):
            if event.type == "text_delta":
                seen.append(event.delta)
                gates[len(seen) - 1].seen.set()
    assert seen == list(pieces)
    assert [gate.waited_in_vain for gate in gates] == [False] * 5


FAULTS = {
    "fault-401": ("error", "Provider returned HTTP 401: Incorrect API key provided.", ()),
    "fault-429": ("error", "Provider returned HTTP 429: Rate limit reached, retry later.", ()),
    "fault-500": ("error", "Provider returned HTTP 500: The server had an error.", ()),
    "fault-stream-error": ("error", "The model is overloaded.", (TextContent("正在"),)),
    "fault-drop": ("error", "Provider connection broke off", (TextContent("正在"),)),
    "fault-missing-finish": (
        "error",
        "Provider stream ended without a finish chunk",
        (TextContent("正在读取"),),
    ),
    "fault-invalid-chunk": (
        "error",
        "Invalid provider chunk: choices[0].delta.content must be a string",
        (TextContent("正在"),),
    ),
}


@pytest.mark.parametrize("script", list(FAULTS))
async def test_every_fault_script_ends_in_one_terminal_error(provider: LocalProvider, script: str) -> None:
    reason, message, content = FAULTS[script]
    events, result = await turn(provider, script, AgentContext((user_message("x"),)))
    assert [e.type for e in events].count("error") == 1 and events[-1].type == "error"
    assert (events[-1].reason, result.stop_reason) == (reason, reason)
    assert result.error_message is not None and result.error_message.startswith(message)
    assert result.content == content
    assert await settle(provider) == 0


def test_every_script_is_listed_and_covered() -> None:
    assert set(SCRIPTS) == {"mainline", "interleaved-4-2", "interleaved", "slow", *FAULTS}


async def test_models_endpoint_lists_scripts(provider: LocalProvider) -> None:
    async with httpx.AsyncClient() as client:
        listing = (await client.get(f"{provider.base_url}/models")).json()
    assert [model["id"] for model in listing["data"]] == [*SCRIPTS, *recorded_models()]
    assert len(recorded_models()) >= 25 and all(name.startswith("recorded/") for name in recorded_models())


async def test_connect_uses_the_environment_or_falls_back_to_the_local_provider() -> None:
    configured = connect(
        env={
            "PI_COURSE_BASE_URL": "https://api.example.invalid/v1",
            "PI_COURSE_API_KEY": "sk-x",
            "PI_COURSE_MODEL": "gpt-x",
        }
    )
    assert (configured.provider, configured.model) == ("api.example.invalid", "gpt-x")
    assert "sk-x" not in repr(configured.transport)
    await configured.transport.aclose()
    with pytest.raises(ValueError, match="PI_COURSE_MODEL"):
        connect(env={"PI_COURSE_BASE_URL": "https://api.example.invalid/v1"})

    local = connect(env={})
    result = await local.stream(AgentContext((user_message("读取 README.md"),))).result()
    assert (local.provider, local.model, result.stop_reason) == ("pi-course-local", "mainline", "toolUse")
    await local.transport.aclose()


# --- oracles ------------------------------------------------------------------------------------


async def test_the_official_openai_client_reads_the_local_stream(provider: LocalProvider) -> None:
    async with openai.AsyncOpenAI(base_url=provider.base_url, api_key="local") as client:
        stream = await client.chat.completions.create(
            model="interleaved",  # openai-python's accumulator needs contiguous tool indexes
            messages=[{"role": "user", "content": "读取 README.md"}],
            stream=True,
            stream_options={"include_usage": True},
        )
        state = ChatCompletionStreamState()
        async for chunk in stream:
            state.handle_chunk(chunk)
        completion = state.get_final_completion()
        whole = await client.chat.completions.create(
            model="interleaved", messages=[{"role": "user", "content": "x"}]
        )
    for message in (completion.choices[0].message, whole.choices[0].message):
        assert message.content == "先读，再查"
        assert [(c.id, c.function.name, c.function.arguments) for c in message.tool_calls or []] == [
            ("call-read", "read", '{"path":"README.md"}'),
            ("call-search", "search", '{"query":"pi"}'),
        ]
    assert completion.choices[0].finish_reason == whole.choices[0].finish_reason == "tool_calls"
    assert completion.usage is not None and completion.usage.total_tokens == 16


async def recorded(provider: LocalProvider, model: str) -> bytes:
    body = {"model": model, "messages": [{"role": "user", "content": "x"}], "stream": True,
            "stream_options": {"include_usage": True}}  # fmt: skip
    async with httpx.AsyncClient() as client:
        response = await client.post(f"{provider.base_url}/chat/completions", json=body)
    return response.content


async def split(raw: bytes, size: int) -> AsyncIterator[bytes]:
    for start in range(0, len(raw), size):
        yield raw[start : start + size]


@pytest.mark.parametrize("script", ["mainline", "interleaved", "slow"])
async def test_recorded_bytes_read_the_same_through_pi_course_and_openai_python(
    provider: LocalProvider, script: str
) -> None:
    raw = await recorded(provider, script)
    state = ChatCompletionStreamState()
    async for sse in SSEDecoder().aiter_bytes(split(raw, 7)):
        if sse.data != "[DONE]":
            state.handle_chunk(ChatCompletionChunk.model_validate(sse.json()))
    oracle = state.get_final_completion()
    choice = oracle.choices[0]

    def replay(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=_Pieces(raw, 7))

    client = httpx.AsyncClient(transport=httpx.MockTransport(replay))
    transport = OpenAICompatibleTransport(base_url="http://replay.invalid/v1", api_key="k", client=client)
    ours = (
        await OpenAICompatibleModel(provider="p", model=script, transport=transport)
        .stream(AgentContext(()))
        .result()
    )

    texts = [block.text for block in ours.content if isinstance(block, TextContent)]
    calls = [(c.id, c.name, c.raw_arguments) for c in ours.content if isinstance(c, ToolCall)]
    assert "".join(texts) == (choice.message.content or "")
    assert calls == [(c.id, c.function.name, c.function.arguments) for c in choice.message.tool_calls or []]
    assert {"tool_calls": "toolUse", "stop": "stop", "length": "length"}[
        choice.finish_reason
    ] == ours.stop_reason
    assert oracle.usage is not None
    assert ours.usage == Usage(
        oracle.usage.prompt_tokens, oracle.usage.completion_tokens, oracle.usage.total_tokens
    )


class _Pieces(httpx.AsyncByteStream):
    def __init__(self, raw: bytes, size: int) -> None:
        self.raw, self.size = raw, size

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for piece in split(self.raw, self.size):
            yield piece


# --- the real command ---------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.slow
async def test_serve_command_speaks_to_the_chat_command() -> None:
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "pi_course", "serve", "--port", str(port)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        async with httpx.AsyncClient() as client:
            for _ in range(200):
                try:
                    await client.get(f"http://127.0.0.1:{port}/v1/models")
                    break
                except httpx.TransportError:
                    await asyncio.sleep(0.05)
        env = {
            **os.environ,
            "PI_COURSE_BASE_URL": f"http://127.0.0.1:{port}/v1",
            "PI_COURSE_MODEL": "mainline",
        }
        chat = subprocess.run(
            [sys.executable, "-m", "pi_course", "chat", "读取 README.md"],
            env=env, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
    finally:
        server.terminate()
        server.wait(timeout=10)
    assert chat.returncode == 0, chat.stderr
    assert chat.stdout.splitlines() == [
        "start",
        "toolcall_delta #0 '{\"path\":'",
        "toolcall_delta #0 '\"README.md\"}'",
        'toolcall_end   #0 read({"path":"README.md"}) id=call-1',
        "done           toolUse (tokens in 30, out 2)",
    ]


async def test_the_4_2_diagnostic_over_loopback_orders_content_by_first_appearance(
    provider: LocalProvider,
) -> None:
    events, result = await turn(provider, "interleaved-4-2", AgentContext((user_message("x"),)))
    assert [(e.type, e.content_index) for e in events if e.type.endswith("_delta")][:3] == [
        ("toolcall_delta", 0),
        ("text_delta", 1),
        ("toolcall_delta", 2),
    ]
    assert [getattr(block, "id", "text") for block in result.content] == ["call-read", "text", "call-search"]


@pytest.mark.parametrize("script", ["fault-drop", "fault-stream-error", "fault-401"])
async def test_non_streaming_requests_for_failing_scripts_are_http_errors(
    provider: LocalProvider, script: str
) -> None:
    async with httpx.AsyncClient() as client:
        response = await client.post(
            f"{provider.base_url}/chat/completions", json={"model": script, "messages": []}
        )
    assert response.status_code in (401, 500)
    assert isinstance(response.json()["error"]["message"], str)


# --- recorded streams from real providers ---------------------------------------------------------


@pytest.mark.parametrize("name", ["openai-parallel-tool-calls", "azure-async-filter", "openrouter-reasoning"])
async def test_a_recorded_stream_is_replayed_byte_for_byte(provider: LocalProvider, name: str) -> None:
    body = {"model": f"recorded/{name}", "messages": [], "stream": True}
    async with httpx.AsyncClient() as client:
        response = await client.post(f"{provider.base_url}/chat/completions", json=body)
    assert response.headers["content-type"].startswith("text/event-stream")
    assert response.content == recording_bytes(name)


@pytest.mark.parametrize(("name", "strict"), [("azure-prompt-filter", True), ("azure-prompt-filter", False),
                                              ("vllm-tool-call", True), ("groq-error-after-text", True)])  # fmt: skip
async def test_recorded_streams_read_over_loopback_as_the_index_says(
    provider: LocalProvider, name: str, strict: bool
) -> None:
    expected = recordings_index()[name]["expected"]["strict" if strict else "non_strict"]
    transport = OpenAICompatibleTransport(base_url=provider.base_url, api_key="local", strict=strict)
    async with transport:
        llm = OpenAICompatibleModel(provider="local", model=f"recorded/{name}", transport=transport)
        result = await llm.stream(AgentContext((user_message("x"),))).result()
    if expected["outcome"] == "accepted":
        assert result.stop_reason == expected["stop_reason"]
        assert "".join(b.text for b in result.content if isinstance(b, TextContent)) == expected["text"]
    else:
        assert (result.stop_reason, result.error_message) == ("error", expected["error"])
    assert await settle(provider) == 0


async def test_recorded_models_need_streaming_and_an_existing_name(provider: LocalProvider) -> None:
    async with httpx.AsyncClient() as client:
        whole = await client.post(
            f"{provider.base_url}/chat/completions", json={"model": "recorded/openai-text", "messages": []}
        )
        missing = await client.post(
            f"{provider.base_url}/chat/completions",
            json={"model": "recorded/no-such-stream", "messages": [], "stream": True},
        )
    assert whole.status_code == 400 and "stream: true" in whole.json()["error"]["message"]
    assert missing.status_code == 404 and "no-such-stream" in missing.json()["error"]["message"]


async def test_an_unknown_model_is_a_404_naming_it_as_a_real_provider_answers(
    provider: LocalProvider,
) -> None:
    messages = [{"role": "user", "content": "x"}]
    async with httpx.AsyncClient() as client:
        for stream in (True, False):
            response = await client.post(
                f"{provider.base_url}/chat/completions",
                json={"model": "nope", "messages": messages, "stream": stream},
            )
            assert response.status_code == 404
            error = response.json()["error"]
            assert (error["type"], error["code"]) == ("invalid_request_error", "model_not_found")
            assert error["message"].startswith(
                "The model `nope` does not exist. Available models: mainline, "
            )
            assert all(name in error["message"] for name in SCRIPTS) and "recorded/<name>" in error["message"]
    # The official client sees OpenAI's own error; pi_course ends the turn in one error event.
    async with openai.AsyncOpenAI(base_url=provider.base_url, api_key="local") as oai:
        with pytest.raises(openai.NotFoundError) as raised:
            await oai.chat.completions.create(model="nope", messages=messages)  # type: ignore[arg-type]
    assert raised.value.code == "model_not_found"
    events, result = await turn(provider, "nope", AgentContext((user_message("x"),)))
    assert [e.type for e in events] == ["start", "error"]
    assert (result.error_message or "").startswith(
        "Provider returned HTTP 404: The model `nope` does not exist."
    )


# --- answering as OpenAI does (real clients: openai-python, httpx) ---------------------------------


def openai_client(provider: LocalProvider, key: str = "sk-anything") -> openai.OpenAI:
    return openai.OpenAI(base_url=provider.base_url, api_key=key, max_retries=0)


def test_models_retrieve_works_for_every_listed_model(provider: LocalProvider) -> None:
    client = openai_client(provider)
    listed = [model.id for model in client.models.list()]
    assert "mainline" in listed and any(name.startswith("recorded/") for name in listed)
    for name in (listed[0], "mainline", next(n for n in listed if n.startswith("recorded/"))):
        assert client.models.retrieve(name).id == name
    with pytest.raises(openai.NotFoundError) as caught:
        client.models.retrieve("no-such-model")
    assert caught.value.code == "model_not_found"


@pytest.mark.parametrize(
    ("method", "path", "status", "code"),
    [
        ("GET", "/v1/nothing-here", 404, "unknown_url"),
        ("GET", "/", 404, "unknown_url"),
        ("DELETE", "/v1/models", 405, "method_not_allowed"),
        ("GET", "/v1/chat/completions", 405, "method_not_allowed"),
        ("PUT", "/v1/models/mainline", 405, "method_not_allowed"),
    ],
)
async def test_every_error_on_every_route_and_method_is_openai_json(
    provider: LocalProvider, method: str, path: str, status: int, code: str
) -> None:
    async with httpx.AsyncClient() as client:
        response = await client.request(method, f"http://{provider.host}:{provider.port}{path}")
    assert response.status_code == status
    assert response.headers["content-type"].startswith("application/json")
    error = response.json()["error"]
    assert error["code"] == code and isinstance(error["message"], str) and error["type"]


def test_non_streaming_faults_answer_as_the_faults(provider: LocalProvider) -> None:
    async def post(model: str) -> httpx.Response:
        async with httpx.AsyncClient() as client:
            body = {"model": model, "messages": [{"role": "user", "content": "x"}]}
            return await client.post(f"{provider.base_url}/chat/completions", json=body)

    invalid = asyncio.run(post("fault-invalid-chunk"))
    assert invalid.status_code == 200, invalid.text
    assert invalid.json()["choices"][0]["message"]["content"] == 42  # the invalid chunk's content, as sent
    missing = asyncio.run(post("fault-missing-finish"))
    choice = missing.json()["choices"][0]
    assert (choice["finish_reason"], missing.json()["usage"]) == (None, None)
    assert choice["message"]["content"] == "正在读取"
    # openai-python reads them as they are (it validates loosely): the fault is visible, not hidden
    client = openai_client(provider)
    completion = client.chat.completions.create(
        model="fault-missing-finish", messages=[{"role": "user", "content": "x"}]
    )
    assert completion.choices[0].finish_reason is None


def test_an_api_key_set_on_the_provider_is_checked_as_openai_does() -> None:
    with LocalProvider(api_key="sk-right") as keyed:
        right = openai_client(keyed, "sk-right")
        assert right.models.retrieve("mainline").id == "mainline"
        stream = right.chat.completions.create(
            model="mainline", messages=[{"role": "user", "content": "x"}], stream=True
        )
        assert [chunk for chunk in stream]
        with pytest.raises(openai.AuthenticationError) as caught:
            openai_client(keyed, "sk-wrong").models.list()
        assert caught.value.status_code == 401 and caught.value.code == "invalid_api_key"
        keyless = httpx.get(f"{keyed.base_url}/models")  # no Authorization header at all
        assert keyless.status_code == 401 and keyless.json()["error"]["code"] == "invalid_api_key"
    # no key set: none checked (the default the notebooks use)
    with LocalProvider() as open_provider:
        assert openai_client(open_provider, "sk-whatever").models.retrieve("mainline").id == "mainline"


async def test_a_page_on_another_loopback_port_may_call_it(provider: LocalProvider) -> None:
    url = f"{provider.base_url}/chat/completions"
    origin = "http://127.0.0.1:8765"
    async with httpx.AsyncClient() as client:
        preflight = await client.options(
            url,
            headers={
                "Origin": origin,
                "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": "authorization, content-type",
            },
        )
        assert preflight.status_code == 200, preflight.text
        assert preflight.headers["access-control-allow-origin"] == origin
        assert "POST" in preflight.headers["access-control-allow-methods"]
        answer = await client.get(f"{provider.base_url}/models", headers={"Origin": origin})
        assert answer.headers["access-control-allow-origin"] == origin
        elsewhere = await client.get(
            f"{provider.base_url}/models", headers={"Origin": "https://evil.example"}
        )
        assert "access-control-allow-origin" not in elsewhere.headers


@pytest.mark.slow
def test_serve_with_an_api_key_and_no_traceback_for_a_scripted_drop() -> None:
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "pi_course", "serve", "--port", str(port), "--api-key", "sk-served"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        base = f"http://127.0.0.1:{port}/v1"
        for _ in range(200):
            try:
                httpx.get(f"{base}/models")
                break
            except httpx.TransportError:
                threading.Event().wait(0.05)
        assert httpx.get(f"{base}/models").json()["error"]["code"] == "invalid_api_key"
        headers = {"Authorization": "Bearer sk-served"}
        assert httpx.get(f"{base}/models", headers=headers).status_code == 200
        body = {"model": "fault-drop", "messages": [], "stream": True}
        with (
            pytest.raises(httpx.RemoteProtocolError),
            httpx.stream("POST", f"{base}/chat/completions", json=body, headers=headers) as response,
        ):
            for _ in response.iter_bytes():
                pass
    finally:
        server.terminate()
        out, _ = server.communicate(timeout=10)
    assert "别的 Bearer key 一律回答 401" in out
    assert "Traceback" not in out and "Exception in ASGI application" not in out, out
