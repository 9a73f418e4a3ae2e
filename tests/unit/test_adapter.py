"""The adapter beyond the focused tests: the mainline, the text fixture, edge cases, properties."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pi_course import (
    AbortController,
    AgentContext,
    FinishChunk,
    OpenAICompatibleModel,
    ProviderChunk,
    TextChunk,
    TextContent,
    ToolCall,
    ToolChunk,
    Usage,
    fixed_transport,
    user_message,
)
from pi_course.chapter.fixtures import MAINLINE_CHUNKS, TEXT_CHUNKS, mainline_context

pytestmark = pytest.mark.anyio


async def run(chunks: Sequence[ProviderChunk | BaseException], **kwargs: object) -> list:  # type: ignore[type-arg]
    model = OpenAICompatibleModel(provider="p", model="m", transport=fixed_transport(chunks), clock=lambda: 1)
    stream = model.stream(AgentContext([user_message("读取 README.md", timestamp=1)]), **kwargs)
    events = [event async for event in stream]
    assert events[-1].type in ("done", "error")
    return events


async def test_mainline_reassembles_call_1_from_two_fragments() -> None:
    events = await run(MAINLINE_CHUNKS)
    assert [(e.type, getattr(e, "delta", None)) for e in events] == [
        ("start", None),
        ("toolcall_delta", '{"path":'),
        ("toolcall_delta", '"README.md"}'),
        ("toolcall_end", None),
        ("done", None),
    ]
    assert events[1].partial.content == (ToolCall("call-1", "read", '{"path":', '{"path":'),)
    final = events[-1].message
    assert final.content == (ToolCall("call-1", "read", {"path": "README.md"}, '{"path":"README.md"}'),)
    assert (final.stop_reason, final.usage) == ("toolUse", Usage(0, 2, 2))


async def test_text_fixture_partials_are_whole_snapshots() -> None:
    events = await run(TEXT_CHUNKS)
    assert [e.type for e in events] == ["start", "text_delta", "text_delta", "done"]
    assert [e.partial.content for e in events[1:3]] == [(TextContent("正在"),), (TextContent("正在读取"),)]
    assert events[-1].message.content == (TextContent("正在读取"),)


async def test_request_carries_the_outbound_conversion() -> None:
    transport = fixed_transport([FinishChunk("stop")])
    model = OpenAICompatibleModel(provider="p", model="m", transport=transport)
    await model.stream(mainline_context()).result()
    [request] = transport.requests
    assert request["model"] == "m"
    assert request["messages"][-1] == {"role": "user", "content": "读取 README.md"}
    assert request["tools"][0]["function"]["name"] == "read"
    await (
        OpenAICompatibleModel(provider="p", model="m", transport=transport).stream(AgentContext([])).result()
    )
    assert "tools" not in transport.requests[1]


async def test_missing_id_becomes_call_index_and_empty_arguments_are_an_empty_object() -> None:
    events = await run([ToolChunk(3, name="list"), FinishChunk("tool_calls")])
    assert events[-1].message.content == (ToolCall("call-3", "list", {}, ""),)


async def test_unparsable_arguments_end_in_error_naming_the_tool() -> None:
    events = await run([ToolChunk(0, "call-1", "read", '{"path":'), FinishChunk("tool_calls")])
    error = events[-1]
    assert (error.type, error.reason) == ("error", "error")
    assert '"read"' in error.error.error_message and "call-1" in error.error.error_message
    assert error.error.content == (ToolCall("call-1", "read", '{"path":', '{"path":'),)


async def test_no_finish_chunk_is_an_error_with_the_chapter_text() -> None:
    events = await run([TextChunk("正在")])
    assert events[-1].error.error_message == "Provider stream ended without a finish chunk"
    assert events[-1].error.content == (TextContent("正在"),)


async def test_abort_mid_stream_is_aborted_with_partial() -> None:
    controller = AbortController()

    class AbortAfterFirst:
        async def stream(self, request, *, signal=None):  # type: ignore[no-untyped-def]
            yield TextChunk("正在")
            controller.abort()
            yield TextChunk("读取")

    model = OpenAICompatibleModel(provider="p", model="m", transport=fixed_transport([]))
    model.transport = AbortAfterFirst()
    events = [e async for e in model.stream(AgentContext([]), signal=controller.signal)]
    assert (events[-1].type, events[-1].reason) == ("error", "aborted")
    assert events[-1].error.error_message == "Request was aborted"


async def test_pre_aborted_signal_never_reaches_the_provider() -> None:
    controller = AbortController()
    controller.abort()
    events = await run([TextChunk("x"), FinishChunk("stop")], signal=controller.signal)
    assert [(e.type, getattr(e, "reason", None)) for e in events] == [("start", None), ("error", "aborted")]


# --- properties over random interleavings --------------------------------------------------------


@st.composite
def interleavings(draw: st.DrawFn) -> list[ProviderChunk]:
    tools = draw(st.lists(st.integers(0, 9), unique=True, max_size=4))
    fragments = [("text", None)] * draw(st.integers(0, 4))
    for index in tools:
        fragments += [("tool", index)] * draw(st.integers(1, 3))
    order = draw(st.permutations(fragments))
    chunks: list[ProviderChunk] = []
    for kind, index in order:
        piece = draw(st.text("ab先读", min_size=1, max_size=3))
        chunks.append(TextChunk(piece) if kind == "text" else ToolChunk(index, arguments_delta=piece))
    return chunks


@settings(max_examples=150, deadline=None)
@given(chunks=interleavings(), reason=st.sampled_from(["stop", "length"]))
async def test_interleavings_keep_first_appearance_order_and_frozen_snapshots(
    chunks: list[ProviderChunk], reason: str
) -> None:
    events = await run([*chunks, FinishChunk(reason)])  # type: ignore[arg-type]
    assert sum(e.type in ("done", "error") for e in events) == 1

    first_seen: list[object] = []
    for chunk in chunks:
        key = "text" if isinstance(chunk, TextChunk) else chunk.index
        if key not in first_seen:
            first_seen.append(key)
    deltas = [e for e in events if e.type in ("text_delta", "toolcall_delta")]
    for chunk, event in zip(chunks, deltas, strict=True):
        key = "text" if isinstance(chunk, TextChunk) else chunk.index
        assert event.content_index == first_seen.index(key)

    # Exactly one slot changes per delta, and an emitted partial never changes afterwards.
    recorded = [(e.partial, e.partial.content) for e in deltas]
    previous: tuple[object, ...] = ()
    for event, (_, content) in zip(deltas, recorded, strict=True):
        changed = [i for i, block in enumerate(content) if i >= len(previous) or previous[i] != block]
        assert changed == [event.content_index]
        previous = content
    assert all(partial.content == content for partial, content in recorded)
    assert events[-1].message.content == previous
