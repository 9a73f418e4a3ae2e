"""The HTTP transport beyond the focused tests: errors, timeouts, cancellation and redaction."""

from __future__ import annotations

import asyncio
import json
import traceback
from collections.abc import AsyncIterator, Callable

import httpx
import pytest

from pi_course import (
    AbortController,
    AgentContext,
    AssistantMessage,
    OpenAICompatibleModel,
    OpenAICompatibleTransport,
    ProviderTransportError,
    Usage,
    text,
    user_message,
)

pytestmark = pytest.mark.anyio

KEY = "sk-sweep-7f3a9c1e5b"
SSE = {"content-type": "text/event-stream"}


def transport_for(
    handler: Callable[[httpx.Request], httpx.Response], *, strict: bool = True
) -> OpenAICompatibleTransport:
    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    return OpenAICompatibleTransport(
        base_url="https://provider.invalid/v1", api_key=KEY, client=client, strict=strict
    )


async def failure_of(transport: OpenAICompatibleTransport) -> ProviderTransportError:
    with pytest.raises(ProviderTransportError) as raised:
        async for _ in transport.stream({"model": "m", "messages": []}):
            pass
    return raised.value


@pytest.mark.parametrize("base_url", ["provider.invalid/v1", "/v1", "ftp://provider.invalid", ""])
def test_a_non_absolute_base_url_is_rejected_at_construction(base_url: str) -> None:
    with pytest.raises(ValueError, match="absolute http"):
        OpenAICompatibleTransport(base_url=base_url, api_key=KEY)


async def test_http_error_reports_status_and_the_providers_message() -> None:
    body = {"error": {"message": "Rate limit reached.", "type": "rate_limit_error"}}
    error = await failure_of(transport_for(lambda r: httpx.Response(429, json=body)))
    assert str(error) == "Provider returned HTTP 429: Rate limit reached."
    error = await failure_of(
        transport_for(lambda r: httpx.Response(502, text="<html> Bad   gateway </html>"))
    )
    assert str(error) == "Provider returned HTTP 502: <html> Bad gateway </html>"


async def test_a_non_sse_content_type_is_an_error() -> None:
    error = await failure_of(transport_for(lambda r: httpx.Response(200, json={"choices": []})))
    assert "content type 'application/json'" in str(error) and "text/event-stream" in str(error)


@pytest.mark.parametrize(
    ("exception", "text"),
    [
        (httpx.ReadTimeout, "Timed out reading from the provider"),
        (httpx.ConnectTimeout, "Timed out connecting to the provider"),
        (httpx.ConnectError, "Could not connect to the provider"),
    ],
)
async def test_network_failures_get_clear_messages(exception: type[httpx.TransportError], text: str) -> None:
    def fail(request: httpx.Request) -> httpx.Response:
        raise exception("boom", request=request)

    assert text in str(await failure_of(transport_for(fail)))


class Endless(httpx.AsyncByteStream):
    def __init__(self) -> None:
        self.closed = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield b'data: {"choices":[{"index":0,"delta":{"content":"a"}}]}\n\n'
        await asyncio.Event().wait()

    async def aclose(self) -> None:
        self.closed = True


def model_over(body: httpx.AsyncByteStream) -> OpenAICompatibleModel:
    transport = transport_for(lambda request: httpx.Response(200, headers=SSE, stream=body))
    return OpenAICompatibleModel(provider="p", model="m", transport=transport)


async def test_cancelling_the_consumer_propagates_and_closes_the_response() -> None:
    body = Endless()
    model = model_over(body)
    seen: list[str] = []

    async def consume() -> None:
        async for event in model.stream(AgentContext([user_message("x")]), signal=AbortController().signal):
            seen.append(event.type)

    task = asyncio.ensure_future(consume())
    while "text_delta" not in seen:
        await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert body.closed


async def test_closing_a_stream_early_closes_the_response() -> None:
    body = Endless()
    model = model_over(body)
    async with model.stream(AgentContext([user_message("x")])) as stream:
        async for event in stream:
            if event.type == "text_delta":
                break
    assert body.closed


async def test_an_owned_client_is_closed_by_the_context_manager() -> None:
    async with OpenAICompatibleTransport(base_url="http://127.0.0.1:9/v1", api_key=KEY) as transport:
        client = transport._client
        assert not client.is_closed
    assert client.is_closed


# --- the key sweep ------------------------------------------------------------------------------


def leaky_error_paths() -> dict[str, Callable[[httpx.Request], httpx.Response]]:
    def raise_(exc: type[Exception]) -> Callable[[httpx.Request], httpx.Response]:
        def handler(request: httpx.Request) -> httpx.Response:
            header = request.headers["authorization"]
            if issubclass(exc, httpx.RequestError):
                raise exc(f"failed with {header}", request=request)
            raise exc(f"failed with {header}")

        return handler

    def body(
        status: int, text: str, headers: dict[str, str] | None = None
    ) -> Callable[[httpx.Request], httpx.Response]:
        return lambda request: httpx.Response(status, text=text, headers=headers)

    quoted = f'{{"error": {{"message": "Incorrect API key provided: {KEY}"}}}}'
    return {
        "connect": raise_(httpx.ConnectError),
        "read-timeout": raise_(httpx.ReadTimeout),
        "protocol": raise_(httpx.RemoteProtocolError),
        "runtime": raise_(RuntimeError),
        "status-json": body(401, quoted, {"content-type": "application/json"}),
        "status-text": body(500, f"proxy saw Bearer {KEY}"),
        "in-stream-error": body(200, f'data: {{"error": {{"message": "bad key {KEY}"}}}}\n\n', SSE),
        "invalid-finish": body(
            200, f'data: {{"choices":[{{"delta":{{}},"finish_reason":"{KEY}"}}]}}\n\n', SSE
        ),
        "refusal": body(200, f'data: {{"choices":[{{"delta":{{"refusal":"no {KEY}"}}}}]}}\n\n', SSE),
    }


@pytest.mark.parametrize("path", list(leaky_error_paths()))
async def test_the_key_appears_nowhere_on_any_error_path(path: str) -> None:
    transport = transport_for(leaky_error_paths()[path])
    error = await failure_of(transport)
    rendered = "".join(traceback.format_exception(error))
    assert "[redacted]" in str(error)
    assert KEY not in rendered
    assert error.__cause__ is None and error.__context__ is None
    assert KEY not in repr(transport) and KEY not in repr(transport.__dict__)

    model = OpenAICompatibleModel(provider="p", model="m", transport=transport_for(leaky_error_paths()[path]))
    result = await model.stream(AgentContext([user_message("x")])).result()
    assert result.stop_reason == "error" and KEY not in repr(result)


# --- real-provider rules through the whole transport (issue 10) ----------------------------------


def sse_body(*payloads: object) -> bytes:
    return "".join(f"data: {p if isinstance(p, str) else json.dumps(p)}\n\n" for p in payloads).encode()


def delta(**fields: object) -> dict[str, object]:
    return {"choices": [{"index": 0, "delta": fields, "finish_reason": None}]}


def finish(reason: str, **extra: object) -> dict[str, object]:
    return {"choices": [{"index": 0, "delta": {}, "finish_reason": reason}], **extra}


async def result_of(raw: bytes, *, strict: bool = True) -> tuple[list[str], AssistantMessage]:
    transport = transport_for(lambda request: httpx.Response(200, headers=SSE, content=raw), strict=strict)
    model = OpenAICompatibleModel(provider="p", model="m", transport=transport)
    stream = model.stream(AgentContext([user_message("x")]))
    kinds = [event.type async for event in stream]
    return kinds, await stream.result()


AZURE = sse_body(
    {"choices": [], "id": "", "prompt_filter_results": [{"prompt_index": 0, "content_filter_results": {}}]},
    delta(role="assistant", content=""),
    delta(content="Hello"),
    {"choices": [{"index": 0, "finish_reason": None, "content_filter_results": {}}]},
    finish("stop"),
    {"choices": [], "usage": {"prompt_tokens": 4, "completion_tokens": 2, "total_tokens": 6}},
    "[DONE] ",
)


async def test_strict_is_the_default_and_lenient_reads_an_azure_stream() -> None:
    kinds, strict = await result_of(AZURE)
    assert kinds == ["start", "error"]
    assert strict.error_message == (
        "Invalid provider chunk: choices is empty and the payload carries no usage (it carries "
        "prompt_filter_results: strict=False, which connect() uses for real providers, reads it)"
    )
    kinds, lenient = await result_of(AZURE, strict=False)
    assert kinds == ["start", "text_delta", "done"]
    assert (lenient.content, lenient.stop_reason, lenient.usage) == ((text("Hello"),), "stop", Usage(4, 2, 6))
    assert "strict=False" in repr(transport_for(lambda r: httpx.Response(200), strict=False))


async def test_usage_split_over_the_finish_payload_and_the_trailing_one_is_merged() -> None:
    raw = sse_body(
        delta(content="hi"),
        finish("stop", usage={"prompt_tokens": 5}),
        {"choices": [], "usage": {"completion_tokens": 3.0}},
        "[DONE]",
    )
    _, result = await result_of(raw)
    assert result.usage == Usage(input=5, output=3, total_tokens=8)
    assert type(result.usage.output) is int


async def test_a_second_choice_is_rejected_strictly_and_set_aside_by_connects_reading() -> None:
    raw = sse_body(delta(content="one"), {"choices": [{"index": 1, "delta": {"content": "two"}}]})
    kinds, result = await result_of(raw, strict=True)
    assert kinds == ["start", "text_delta", "error"]
    assert (
        result.error_message
        == "Invalid provider chunk: choices[0].index must be 0: only the first choice is read"
    )
    assert result.content == (text("one"),)
    # strict=False reads choice 0 only: "two" is set aside
    kinds, result = await result_of(raw + sse_body(finish("stop"), "[DONE]"), strict=False)
    assert kinds == ["start", "text_delta", "done"] and result.content == (text("one"),)


async def test_a_refusal_ends_in_one_error_carrying_its_text_and_the_partial() -> None:
    raw = sse_body(
        delta(content="Let me"),
        delta(refusal="I can't"),
        delta(refusal=" help."),
        finish("stop"),
        "[DONE]",
    )
    kinds, result = await result_of(raw)
    assert kinds == ["start", "text_delta", "error"]
    assert result.stop_reason == "error"
    assert result.error_message == "Provider refused: I can't help."
    assert result.content == (text("Let me"),)
