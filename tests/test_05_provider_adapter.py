"""Chapter 05's 11 focused tests — the checkpoint, and nothing else.

Select one practice step with ``-k``: ``outbound`` (5.1, 1 test), ``normalized_transport``
(5.2, 3), ``sse`` (5.3, 5), ``fetch_transport`` (5.4, 2). The whole file is 11/11.
"""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import AsyncIterator

import httpx
import pytest

from pi_course import (
    AbortController,
    AgentContext,
    AssistantMessage,
    FinishChunk,
    OpenAICompatibleModel,
    OpenAICompatibleTransport,
    TextChunk,
    TextContent,
    ToolCall,
    ToolChunk,
    ToolDefinition,
    ToolResultMessage,
    Usage,
    assistant_message,
    fixed_transport,
    text,
    to_provider_messages,
    to_provider_tools,
    user_message,
)

pytestmark = pytest.mark.anyio

KEY = "sk-test-secret-0123456789"


def context_with_four_roles() -> AgentContext:
    return AgentContext(
        system_prompt="回答要简洁。",
        messages=(
            user_message("读取 README.md", timestamp=1),
            assistant_message(
                [
                    ToolCall(
                        "call-1",
                        "read",
                        {"path": "README.md"},
                        raw_arguments='{"path":"README.md"}',
                    ),
                    ToolCall("call-2", "search", {"query": "pi"}),
                ],
                "toolUse",
                timestamp=1,
            ),
            ToolResultMessage("call-1", "read", (text("# Project"),), False, timestamp=1),
        ),
        tools=(
            ToolDefinition(
                "read",
                "Read a file",
                {"type": "object", "properties": {"path": {"type": "string"}}},
            ),
        ),
    )


# --- 5.1 outbound ------------------------------------------------------------------------------


def test_outbound_conversion_maps_four_roles_and_tools_without_touching_input() -> None:
    context = context_with_four_roles()
    before = copy.deepcopy(context)

    assert to_provider_messages(context) == [
        {"role": "system", "content": "回答要简洁。"},
        {"role": "user", "content": "读取 README.md"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call-1",
                    "type": "function",
                    "function": {"name": "read", "arguments": '{"path":"README.md"}'},
                },
                {
                    "id": "call-2",
                    "type": "function",
                    "function": {"name": "search", "arguments": '{"query":"pi"}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "call-1", "name": "read", "content": "# Project"},
    ]
    assert to_provider_tools(context.tools) == [
        {
            "type": "function",
            "function": {
                "name": "read",
                "description": "Read a file",
                "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
            },
        }
    ]
    assert to_provider_tools(None) is None
    assert to_provider_tools(()) is None
    assert context == before


# --- 5.2 normalized transport ------------------------------------------------------------------

DIAGNOSTIC_4_2 = [
    ToolChunk(4, id="call-read", name="read", arguments_delta='{"path":'),
    TextChunk("先读"),
    ToolChunk(2, id="call-search", name="search", arguments_delta='{"query":'),
    ToolChunk(4, arguments_delta='"README.md"}'),
    TextChunk("，再查"),
    ToolChunk(2, arguments_delta='"pi"}'),
    FinishChunk("tool_calls", Usage(input=10, output=6)),
]


def streaming(call_id: str, name: str, raw: str) -> ToolCall:
    return ToolCall(call_id, name, raw, raw)


async def collect(model: OpenAICompatibleModel, **kwargs: object) -> tuple[list, AssistantMessage]:
    stream = model.stream(AgentContext((user_message("读取 README.md", timestamp=1),)), **kwargs)
    events = [event async for event in stream]
    return events, await stream.result()


def model_over(chunks: list) -> OpenAICompatibleModel:
    return OpenAICompatibleModel(
        provider="fixture",
        model="fixture-model",
        transport=fixed_transport(chunks),
        clock=lambda: 7,
    )


async def test_normalized_transport_orders_content_by_first_appearance_with_tool_index_4_2() -> None:
    events, result = await collect(model_over(DIAGNOSTIC_4_2))

    deltas = [(e.type, getattr(e, "content_index", None), getattr(e, "delta", None)) for e in events[1:7]]
    assert deltas == [
        ("toolcall_delta", 0, '{"path":'),
        ("text_delta", 1, "先读"),
        ("toolcall_delta", 2, '{"query":'),
        ("toolcall_delta", 0, '"README.md"}'),
        ("text_delta", 1, "，再查"),
        ("toolcall_delta", 2, '"pi"}'),
    ]
    assert [e.type for e in events] == [
        "start", "toolcall_delta", "text_delta", "toolcall_delta", "toolcall_delta",
        "text_delta", "toolcall_delta", "toolcall_end", "toolcall_end", "done",
    ]  # fmt: skip
    read_1 = streaming("call-read", "read", '{"path":')
    read_2 = streaming("call-read", "read", '{"path":"README.md"}')
    search_1 = streaming("call-search", "search", '{"query":')
    search_2 = streaming("call-search", "search", '{"query":"pi"}')
    assert [e.partial.content for e in events[:7]] == [
        (),
        (read_1,),
        (read_1, TextContent("先读")),
        (read_1, TextContent("先读"), search_1),
        (read_2, TextContent("先读"), search_1),
        (read_2, TextContent("先读，再查"), search_1),
        (read_2, TextContent("先读，再查"), search_2),
    ]
    for event in events[:9]:
        partial = event.partial
        assert (partial.provider, partial.model, partial.timestamp) == (
            "fixture",
            "fixture-model",
            7,
        )
        assert (partial.usage, partial.stop_reason, partial.error_message) == (
            Usage(),
            "stop",
            None,
        )

    read = ToolCall("call-read", "read", {"path": "README.md"}, '{"path":"README.md"}')
    search = ToolCall("call-search", "search", {"query": "pi"}, '{"query":"pi"}')
    ends = events[7:9]
    assert [(e.content_index, e.tool_call) for e in ends] == [(0, read), (2, search)]
    assert ends[0].partial.content == (read, TextContent("先读，再查"), search_2)
    assert ends[1].partial.content == (read, TextContent("先读，再查"), search)

    done = events[-1]
    assert done.reason == "toolUse"
    assert done.message is result
    assert result.content == (read, TextContent("先读，再查"), search)
    assert result.stop_reason == "toolUse"
    assert result.usage == Usage(input=10, output=6, total_tokens=16)


async def test_normalized_transport_exception_ends_in_error_with_the_partial_kept() -> None:
    events, result = await collect(model_over([TextChunk("partial"), RuntimeError("socket reset by peer")]))

    assert [e.type for e in events] == ["start", "text_delta", "error"]
    assert events[-1].reason == "error"
    assert events[-1].error is result
    assert result.stop_reason == "error"
    assert result.content == (TextContent("partial"),)
    assert result.error_message == "socket reset by peer"


async def test_normalized_transport_length_keeps_raw_arguments_in_both_fields() -> None:
    truncated = '{"path":"REA'
    events, result = await collect(
        model_over([ToolChunk(0, "call-1", "read", truncated), FinishChunk("length")])
    )

    assert [e.type for e in events] == ["start", "toolcall_delta", "done"]
    assert events[-1].reason == "length"
    assert result.stop_reason == "length"
    assert result.content == (ToolCall("call-1", "read", truncated, truncated),)


# --- 5.3 SSE -----------------------------------------------------------------------------------


def sse(*payloads: object) -> bytes:
    lines = [f"data: {p if isinstance(p, str) else json.dumps(p, ensure_ascii=False)}\n\n" for p in payloads]
    return "".join(lines).encode()


def text_payload(delta: str) -> dict:
    return {"choices": [{"index": 0, "delta": {"content": delta}, "finish_reason": None}]}


def tool_payload(index: int, arguments: str, call_id: str | None = None, name: str | None = None) -> dict:
    call: dict = {"index": index, "function": {"arguments": arguments}}
    if call_id is not None:
        call |= {"id": call_id, "type": "function"}
        call["function"]["name"] = name
    return {"choices": [{"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": None}]}


def finish_payload(reason: str) -> dict:
    return {"choices": [{"index": 0, "delta": {}, "finish_reason": reason}]}


class TwoReads(httpx.AsyncByteStream):
    """The response body as two network reads split in the middle; can then block forever."""

    def __init__(self, body: bytes, *, hang_after: bool = False) -> None:
        middle = len(body) // 2
        self.reads = [body[:middle], body[middle:]]
        self.hang_after = hang_after
        self.closed = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self.reads:
            yield chunk
        if self.hang_after:
            await asyncio.Event().wait()  # the server has nothing more to say, yet

    async def aclose(self) -> None:
        self.closed = True


def sse_model(body: TwoReads) -> OpenAICompatibleModel:
    def respond(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=body)

    client = httpx.AsyncClient(transport=httpx.MockTransport(respond))
    transport = OpenAICompatibleTransport(base_url="https://provider.invalid/v1", api_key=KEY, client=client)
    return OpenAICompatibleModel(provider="openai-compatible", model="gpt-test", transport=transport)


async def test_sse_interleaved_tool_arguments_are_recovered_by_index_with_trailing_usage() -> None:
    body = TwoReads(
        sse(
            tool_payload(0, '{"path":', "call-1", "read"),
            tool_payload(1, '{"query":', "call-2", "search"),
            tool_payload(0, '"README.md"}'),
            tool_payload(1, '"pi"}'),
            finish_payload("tool_calls"),
            {"choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": 8, "total_tokens": 20}},
            "[DONE]",
        )
    )
    events, result = await collect(sse_model(body))

    deltas = [(e.content_index, e.delta) for e in events if e.type == "toolcall_delta"]
    assert deltas == [(0, '{"path":'), (1, '{"query":'), (0, '"README.md"}'), (1, '"pi"}')]
    assert result.stop_reason == "toolUse"
    assert result.content == (
        ToolCall("call-1", "read", {"path": "README.md"}, '{"path":"README.md"}'),
        ToolCall("call-2", "search", {"query": "pi"}, '{"query":"pi"}'),
    )
    assert result.usage == Usage(input=12, output=8, total_tokens=20)
    assert body.closed


async def test_sse_missing_finish_keeps_partial_and_ends_in_error() -> None:
    body = TwoReads(sse(text_payload("partial")))
    events, result = await collect(sse_model(body))

    assert [e.type for e in events] == ["start", "text_delta", "error"]
    assert result.stop_reason == "error"
    assert result.content == (TextContent("partial"),)
    assert result.error_message == "Provider stream ended without a finish chunk"
    assert body.closed


async def test_sse_abort_during_a_blocked_read_ends_aborted_and_closes_the_response() -> None:
    body = TwoReads(sse(text_payload("partial")), hang_after=True)
    controller = AbortController()
    stream = sse_model(body).stream(
        AgentContext((user_message("读取 README.md", timestamp=1),)), signal=controller.signal
    )
    types = []
    async for event in stream:
        types.append(event.type)
        if event.type == "text_delta":
            asyncio.get_running_loop().call_later(0.05, controller.abort)
    result = await asyncio.wait_for(stream.result(), timeout=5)

    assert types == ["start", "text_delta", "error"]
    assert result.stop_reason == "aborted"
    assert result.content == (TextContent("partial"),)
    assert body.closed


async def test_sse_invalid_chunk_ends_in_error_naming_the_problem() -> None:
    body = TwoReads(sse(text_payload("partial"), {"choices": "not-an-array"}))
    events, result = await collect(sse_model(body))

    assert events[-1].type == "error"
    assert result.stop_reason == "error"
    assert result.error_message.startswith("Invalid provider chunk")
    assert "choices" in result.error_message
    assert result.content == (TextContent("partial"),)


async def test_sse_unknown_finish_reason_is_an_error_that_names_finish_reason() -> None:
    body = TwoReads(sse(text_payload("partial"), finish_payload("content_filter")))
    events, result = await collect(sse_model(body))

    assert events[-1].type == "error"
    assert result.stop_reason == "error"
    assert "finish_reason" in result.error_message
    assert "content_filter" in result.error_message
    assert KEY not in result.error_message
    assert result.content == (TextContent("partial"),)


# --- 5.4 fetch transport -----------------------------------------------------------------------


async def test_fetch_transport_sends_the_exact_request() -> None:
    seen: list[httpx.Request] = []

    def respond(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(
            200, headers={"content-type": "text/event-stream"}, content=sse(finish_payload("stop"))
        )

    client = httpx.AsyncClient(transport=httpx.MockTransport(respond))
    transport = OpenAICompatibleTransport(base_url="https://provider.invalid/v1/", api_key=KEY, client=client)
    request = {"model": "gpt-test", "messages": [{"role": "user", "content": "读取 README.md"}]}
    chunks = [chunk async for chunk in transport.stream(request)]

    assert chunks == [FinishChunk("stop")]
    [sent] = seen
    assert sent.method == "POST"
    assert str(sent.url) == "https://provider.invalid/v1/chat/completions"
    assert sent.headers["accept"] == "text/event-stream"
    assert sent.headers["authorization"] == f"Bearer {KEY}"
    assert sent.headers["content-type"] == "application/json"
    assert json.loads(sent.content) == {
        **request,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    assert KEY not in sent.content.decode()
    assert KEY not in repr(transport)


async def test_fetch_transport_redacts_the_key_from_an_underlying_error() -> None:
    def respond(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError(f"proxy refused {request.headers['authorization']}", request=request)

    client = httpx.AsyncClient(transport=httpx.MockTransport(respond))
    transport = OpenAICompatibleTransport(base_url="https://provider.invalid/v1", api_key=KEY, client=client)
    model = OpenAICompatibleModel(provider="openai-compatible", model="gpt-test", transport=transport)
    events, result = await collect(model)

    assert events[-1].type == "error"
    assert result.stop_reason == "error"
    assert "[redacted]" in result.error_message
    assert KEY not in result.error_message
