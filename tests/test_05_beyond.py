"""Checks beyond the chapter: what the 11 focused tests do not exercise but real use needs.

``python -m pi_course check 05`` runs these after the focused tests and counts them apart
("本章之外的检查"). They use only the public API (``from pi_course import …``), so they run
unchanged against a practice copy. Each check's docstring gives its name (first line) and the
next step (the ``下一步：`` line) that ``check`` prints when it fails.

Each check is tied, once, to the last practice step it needs: ``@pytest.mark.step("5.x")``
(``check``'s pytest plugin records it). Until that step's focused tests and every earlier step's
pass, ``check`` shows the check as 待完成 (pending), never ✓: against a stub, a pass means
nothing. A check added here needs its marker too (tests/workflow/test_check.py looks).
"""

from __future__ import annotations

import json
import traceback
from collections.abc import AsyncIterator, Callable

import httpx
import pytest

from pi_course import (
    AgentContext,
    AssistantMessage,
    OpenAICompatibleModel,
    OpenAICompatibleTransport,
    TextContent,
    ToolCall,
    local_model,
    user_message,
)

pytestmark = pytest.mark.anyio

KEY = "sk-beyond-secret-9876543210"
REQUEST = {"model": "gpt-test", "messages": [{"role": "user", "content": "读取 README.md"}]}
SSE_HEADERS = {"content-type": "text/event-stream"}


def sse(*payloads: object) -> bytes:
    return "".join(f"data: {json.dumps(p, ensure_ascii=False)}\n\n" for p in payloads).encode()


def text_payload(delta: str) -> dict[str, object]:
    return {"choices": [{"index": 0, "delta": {"content": delta}, "finish_reason": None}]}


class BrokenBody(httpx.AsyncByteStream):
    """A body whose connection breaks after the given reads."""

    def __init__(self, *reads: bytes) -> None:
        self.reads = reads

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for read in self.reads:
            yield read
        raise httpx.RemoteProtocolError("peer closed connection without sending complete message body")

    async def aclose(self) -> None:
        pass


Respond = Callable[[httpx.Request], httpx.Response]


def transport_over(respond: Respond) -> OpenAICompatibleTransport:
    client = httpx.AsyncClient(transport=httpx.MockTransport(respond))
    return OpenAICompatibleTransport(base_url="https://provider.invalid/v1", api_key=KEY, client=client)


def model_over(respond: Respond) -> OpenAICompatibleModel:
    return OpenAICompatibleModel(
        provider="openai-compatible", model="gpt-test", transport=transport_over(respond)
    )


def context() -> AgentContext:
    return AgentContext((user_message("读取 README.md", timestamp=1),))


# --- every error path that could carry the key ---------------------------------------------------


def http_status(request: httpx.Request) -> httpx.Response:
    error = {"message": f"Incorrect API key provided: {KEY}", "type": "invalid_request_error"}
    return httpx.Response(401, json={"error": error})


def connect_error(request: httpx.Request) -> httpx.Response:
    raise httpx.ConnectError(f"proxy refused {request.headers['authorization']}", request=request)


def client_error(request: httpx.Request) -> httpx.Response:
    raise RuntimeError(f"TLS middlebox rejected the header Authorization: {request.headers['authorization']}")


def stream_error_payload(request: httpx.Request) -> httpx.Response:
    body = sse(text_payload("正在"), {"error": {"message": f"API key {KEY} was revoked", "type": "auth"}})
    return httpx.Response(200, headers=SSE_HEADERS, content=body)


def invalid_chunk(request: httpx.Request) -> httpx.Response:
    body = sse(text_payload("正在"), {"choices": f"echo of {KEY}"})
    return httpx.Response(200, headers=SSE_HEADERS, content=body)


ERROR_PATHS = {
    "http-status": http_status,
    "connect-error": connect_error,
    "client-error": client_error,
    "stream-error-payload": stream_error_payload,
    "invalid-chunk": invalid_chunk,
}


def chained(error: BaseException) -> list[BaseException]:
    """The error and everything reachable through ``__cause__``, ``__context__`` and groups."""
    found: list[BaseException] = []
    pending = [error]
    while pending:
        current = pending.pop()
        if any(current is seen for seen in found):
            continue
        found.append(current)
        pending += [e for e in (current.__cause__, current.__context__) if e is not None]
        pending += list(getattr(current, "exceptions", ()))
    return found


def leaks(error: BaseException) -> list[str]:
    places = []
    for depth, current in enumerate(chained(error)):
        texts = [str(current), repr(current), *map(repr, current.args)]
        if any(KEY in text for text in texts):
            name = "错误本身" if depth == 0 else f"链上的 {type(current).__name__}（__context__/__cause__）"
            places.append(f"{name}：{str(current).replace(KEY, '«密钥»')[:120]!r}")
    if KEY in "".join(traceback.format_exception(error)):
        places.append("traceback.format_exception() 的输出")
    return places


@pytest.mark.step("5.4")
@pytest.mark.parametrize("respond", ERROR_PATHS.values(), ids=ERROR_PATHS.keys())
async def test_key_stays_out_of_every_error_chain(respond: Respond) -> None:
    """密钥不在错误、错误链（__context__、__cause__）或 traceback 里
    下一步：pi_course/transport.py 的 stream()：except 块里只记下脱敏后的文字，离开 except 块之后再 raise。注意：在 except 块里写 raise … from None 不能解决问题——from None 只是不打印原来的错误，它仍留在新错误的 __context__ 里，密钥也就还在
    """
    error: Exception | None = None
    try:
        async for _ in transport_over(respond).stream(REQUEST):
            pass
    except Exception as raised:
        error = raised
    if error is not None:
        assert not leaks(error), f"密钥仍在：{'；'.join(leaks(error))}"

    stream = model_over(respond).stream(context())
    result = await stream.result()
    assert KEY not in (result.error_message or ""), "密钥出现在 error 事件的 error_message 里"


# --- exactly one terminal event --------------------------------------------------------------------


async def one_terminal(model: OpenAICompatibleModel) -> tuple[list[str], AssistantMessage]:
    stream = model.stream(context())
    events = [event async for event in stream]
    types = [event.type for event in events]
    assert [t for t in types if t in ("done", "error")] == [types[-1]], f"终态事件不是恰好一个：{types}"
    return types, await stream.result()


@pytest.mark.step("5.3")
async def test_dropped_connection_ends_in_one_error_event() -> None:
    """连接中途断开：恰好一个 error 终态，partial 保留，没有异常逃出 stream()
    下一步：pi_course/transport.py 的 stream()：读取中的网络异常（httpx.RemoteProtocolError）也要离开 transport，由 adapter 变成 error 终态
    """

    def respond(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers=SSE_HEADERS, stream=BrokenBody(sse(text_payload("正在"))))

    types, result = await one_terminal(model_over(respond))
    assert types[-1] == "error"
    assert (result.stop_reason, result.content) == ("error", (TextContent("正在"),))


@pytest.mark.step("5.3")
async def test_in_stream_error_payload_ends_in_one_error_event() -> None:
    """流内的 error payload：恰好一个 error 终态，partial 保留
    下一步：pi_course/adapter.py：transport 抛出的任何异常（这里是给定代码读到的 provider error）都要变成唯一的 error 终态，partial 保留
    """

    def respond(request: httpx.Request) -> httpx.Response:
        body = sse(
            text_payload("正在"), {"error": {"message": "The model is overloaded.", "type": "server_error"}}
        )
        return httpx.Response(200, headers=SSE_HEADERS, content=body)

    types, result = await one_terminal(model_over(respond))
    assert types[-1] == "error"
    assert (result.stop_reason, result.content) == ("error", (TextContent("正在"),))


@pytest.mark.step("5.3")
async def test_http_error_status_names_the_status() -> None:
    """HTTP 错误状态（401）：一个 error 终态，error_message 写出状态码
    下一步：pi_course/transport.py：读 body 之前先看 response 的状态码，非 2xx 时抛出写明状态码的错误
    """

    def respond(request: httpx.Request) -> httpx.Response:
        error = {"message": "Incorrect API key provided.", "type": "invalid_request_error"}
        return httpx.Response(401, json={"error": error})

    types, result = await one_terminal(model_over(respond))
    assert types[-1] == "error"
    assert "401" in (result.error_message or ""), f"error_message 没有写出状态码：{result.error_message!r}"


# --- the local provider the notebooks use ---------------------------------------------------------


@pytest.mark.step("5.4")
async def test_local_provider_mainline_over_loopback() -> None:
    """本地 provider（local_model()，真实的 loopback HTTP）走通主线 call-1
    下一步：用 python -m pi_course chat "读取 README.md" 看事件；请求头（Authorization、Content-Type）与 body 要被真实的 HTTP 服务器接受
    """
    pytest.importorskip("uvicorn", reason="本地 provider 需要 uvicorn：在课程仓库里 pip install '.[lab]'")
    model = local_model("mainline")
    try:
        types, result = await one_terminal(model)
    finally:
        await model.transport.aclose()
    assert types[-1] == "done", f"终态是 {types[-1]}：{result.error_message!r}"
    assert result.content == (ToolCall("call-1", "read", {"path": "README.md"}, '{"path":"README.md"}'),)
    assert result.stop_reason == "toolUse"


# --- the chapter's narrowing, rule by rule (practice 5.3) -------------------------------------------


def choice_payload(delta: object) -> dict[str, object]:
    return {"choices": [{"index": 0, "delta": delta, "finish_reason": None}]}


def tool_payload(**call: object) -> dict[str, object]:
    return choice_payload({"tool_calls": [{"index": 0, "id": "call-1", **call}]})


# (the payload, the JSON path the error must name): each one a rule the chapter states.
NARROWING = {
    "content-not-a-string": (choice_payload({"content": 42}), "choices[0].delta.content"),
    "delta-not-an-object": (choice_payload([]), "choices[0].delta"),
    "tool-calls-not-an-array": (choice_payload({"tool_calls": {}}), "choices[0].delta.tool_calls"),
    "tool-call-not-an-object": (choice_payload({"tool_calls": [1]}), "choices[0].delta.tool_calls[0]"),
    "tool-index-missing": (
        choice_payload({"tool_calls": [{"id": "call-1", "function": {"name": "read"}}]}),
        "choices[0].delta.tool_calls[0].index",
    ),
    "tool-index-negative": (tool_payload(index=-1), "choices[0].delta.tool_calls[0].index"),
    "tool-index-not-whole": (tool_payload(index=1.5), "choices[0].delta.tool_calls[0].index"),
    "tool-index-too-big": (tool_payload(index=2**53), "choices[0].delta.tool_calls[0].index"),
    "tool-id-not-a-string": (tool_payload(id=7), "choices[0].delta.tool_calls[0].id"),
    "tool-name-not-a-string": (
        tool_payload(function={"name": 7}),
        "choices[0].delta.tool_calls[0].function.name",
    ),
    "tool-arguments-not-a-string": (
        tool_payload(function={"arguments": {"path": "README.md"}}),
        "choices[0].delta.tool_calls[0].function.arguments",
    ),
    "empty-choices-without-usage": ({"choices": []}, "choices"),
    "two-choices": ({"choices": [{"delta": {}}, {"delta": {}}]}, "choices"),
    "usage-not-an-object": ({"choices": [], "usage": [12]}, "usage"),
    "usage-count-negative": ({"choices": [], "usage": {"prompt_tokens": -1}}, "usage.prompt_tokens"),
    "usage-count-a-string": ({"choices": [], "usage": {"completion_tokens": "8"}}, "usage.completion_tokens"),
    "usage-count-a-bool": ({"choices": [], "usage": {"total_tokens": True}}, "usage.total_tokens"),
}


@pytest.mark.step("5.3")
@pytest.mark.parametrize(("payload", "path"), NARROWING.values(), ids=NARROWING.keys())
async def test_each_narrowing_rule_of_the_chapter_names_its_json_path(payload: object, path: str) -> None:
    """本章的每条收窄规则：不合形状的外部数据以 error 结束，错误信息写出 JSON 路径，partial 保留
    下一步：pi_course/sse.py 的 parse_payload() 与校验函数（_record、_string、_token_count、_usage、_tool_chunk）：按本章的收窄路径逐层检查，错误信息以 Invalid provider chunk: 开头并写出字段路径
    """

    def respond(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers=SSE_HEADERS, content=sse(text_payload("正在"), payload))

    types, result = await one_terminal(model_over(respond))
    assert types[-1] == "error", f"终态是 {types[-1]}：这条 payload 应当被拒绝"
    message = result.error_message or ""
    assert message.startswith("Invalid provider chunk: "), f"error_message：{message!r}"
    assert path in message, f"error_message 没有写出 {path}：{message!r}"
    assert result.content == (TextContent("正在"),)


@pytest.mark.step("5.3")
async def test_finish_reason_and_usage_in_one_payload_make_one_finish() -> None:
    """finish_reason 与 usage 在同一条 payload 里：一个 done，usage 原样保留
    下一步：pi_course/sse.py 的 read_provider_chunks()：记下结束原因，合并每一条 payload 带来的 usage，最后只产出一个 finish chunk
    """
    finish = {
        "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
    }

    def respond(request: httpx.Request) -> httpx.Response:
        body = sse(text_payload("好"), finish) + b"data: [DONE]\n\n"
        return httpx.Response(200, headers=SSE_HEADERS, content=body)

    types, result = await one_terminal(model_over(respond))
    assert types == ["start", "text_delta", "done"], types
    assert (result.stop_reason, result.usage.input, result.usage.output, result.usage.total_tokens) == (
        "stop", 3, 1, 4,
    )  # fmt: skip
