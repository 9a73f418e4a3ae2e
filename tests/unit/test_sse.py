"""The SSE decoder (WHATWG rules) and the chunk validator, beyond the focused tests."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pi_course import (
    FinishChunk,
    InvalidProviderChunk,
    ProviderError,
    SSEDecoder,
    SSEError,
    SSEEvent,
    TextChunk,
    ToolChunk,
    Usage,
    iter_sse_events,
)
from pi_course.sse import ProviderRefusal, iter_provider_chunks, parse_payload

pytestmark = pytest.mark.anyio


async def reads(chunks: Sequence[bytes]) -> AsyncIterator[bytes]:
    for chunk in chunks:
        yield chunk


async def decode(*chunks: bytes, **kwargs: int) -> list[SSEEvent]:
    return [event async for event in iter_sse_events(reads(chunks), **kwargs)]


async def test_every_line_ending_including_a_crlf_split_across_reads() -> None:
    expected = [SSEEvent("a"), SSEEvent("b"), SSEEvent("c"), SSEEvent("d")]
    assert await decode(b"data: a\r\n\r\ndata: b\n\ndata: c\r\rdata: d\n\r\n") == expected
    # CR ends one read and LF starts the next: one line ending, not a blank line in between.
    assert await decode(b"data: a\r", b"\ndata: b\r", b"\n\r", b"\n") == [SSEEvent("a\nb")]


async def test_a_lone_cr_at_the_very_end_still_ends_the_line() -> None:
    assert await decode(b"data: a\n\r") == [SSEEvent("a")]


async def test_one_leading_bom_is_dropped_even_when_split() -> None:
    bom = "\ufeff".encode()
    assert await decode(bom[:1], bom[1:] + b"data: x\n\n") == [SSEEvent("x")]
    assert await decode(bom + bom + b"data: x\n\n") == []  # a second BOM makes a bogus field name


async def test_field_rules() -> None:
    stream = (
        b": comment\nevent: tick\nid: 7\ndata:no-space\ndata:  two spaces\ndata\nretry: 10\nunknown: x\n\n"
    )
    assert await decode(stream) == [SSEEvent("no-space\n two spaces\n", "tick", "7")]


async def test_id_persists_ignores_nul_and_events_need_data() -> None:
    stream = b"id: 1\n\ndata: a\n\nid: 2\0\ndata: b\n\nid\ndata: c\n\nevent: x\n\n"
    assert await decode(stream) == [SSEEvent("a", id="1"), SSEEvent("b", id="1"), SSEEvent("c", id="")]


async def test_unterminated_last_event_is_dropped() -> None:
    assert await decode(b"data: a\n\ndata: b\n") == [SSEEvent("a")]
    assert await decode(b"data: a\n\ndata: b") == [SSEEvent("a")]


async def test_utf8_split_across_reads_survives_and_invalid_bytes_become_replacement() -> None:
    raw = "data: 读取\n\n".encode()
    assert await decode(raw[:7], raw[7:]) == [SSEEvent("读取")]
    assert await decode(b"data: \xff\xfeok\n\n") == [SSEEvent("\ufffd\ufffdok")]


async def test_an_endless_line_is_a_clear_error_not_memory_growth() -> None:
    with pytest.raises(SSEError, match="exceeds 1000 characters"):
        await decode(*([b"x" * 300] * 10), max_event_size=1000)
    with pytest.raises(SSEError):
        await decode(b"data: " + b"x" * 2000 + b"\n", max_event_size=1000)
    assert await decode(b"data: " + b"x" * 900 + b"\n\n", max_event_size=1000) == [SSEEvent("x" * 900)]


@st.composite
def sse_streams(draw: st.DrawFn) -> str:
    lines = st.one_of(
        st.builds(lambda v: f"data: {v}", st.text("ab读\u00e9{}:", max_size=6)),
        st.builds(lambda v: f"data:{v}", st.text("ab", max_size=3)),
        st.sampled_from(["", "", ": comment", "event: tick", "id: 9", "data", "retry: 1"]),
    )
    return "\n".join(draw(st.lists(lines, max_size=12))) + "\n\n"


@settings(max_examples=200, deadline=None)
@given(
    stream=sse_streams(),
    crlf=st.booleans(),
    cuts=st.lists(st.floats(0, 1), max_size=8),  # drawn up front: no draws inside the event loop
)
async def test_any_chunking_and_line_ending_gives_the_same_events(
    stream: str, crlf: bool, cuts: list[float]
) -> None:
    expected = await decode(stream.encode())
    raw = (stream.replace("\n", "\r\n") if crlf else stream).encode()
    offsets = sorted(int(cut * len(raw)) for cut in cuts)
    pieces = [raw[a:b] for a, b in zip([0, *offsets], [*offsets, len(raw)], strict=True)]
    assert await decode(*pieces) == expected


# --- validation ----------------------------------------------------------------------------------


def choice(**fields: object) -> dict:  # type: ignore[type-arg]
    return {"choices": [{"index": 0, "delta": {}, **fields}]}


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ([], "payload must be an object"),
        ({"choices": "not-an-array"}, "choices must be an array"),
        ({"choices": [{}, {}]}, "choices must hold exactly one choice, got 2"),
        ({"choices": []}, "choices is empty and the payload carries no usage"),
        ({"choices": [1]}, "choices[0] must be an object"),
        ({"choices": [{"delta": []}]}, "choices[0].delta must be an object"),
        ({"choices": [{"delta": {"content": 42}}]}, "choices[0].delta.content must be a string"),
        (choice(delta={"tool_calls": {}}), "choices[0].delta.tool_calls must be an array"),
        (choice(delta={"tool_calls": [3]}), "choices[0].delta.tool_calls[0] must be an object"),
        (
            choice(delta={"tool_calls": [{"index": 1.5, "id": "x"}]}),
            "tool_calls[0].index must be a non-negative",
        ),
        (choice(delta={"tool_calls": [{"index": 0, "id": 1}]}), "tool_calls[0].id must be a string"),
        (
            choice(delta={"tool_calls": [{"index": 0, "function": 1}]}),
            "tool_calls[0].function must be an object",
        ),
        (
            choice(delta={"tool_calls": [{"index": 0, "function": {"name": 1}}]}),
            "function.name must be a string",
        ),
        (choice(finish_reason="content_filter"), 'finish_reason "content_filter" is not one of'),
        ({**choice(), "usage": []}, "usage must be an object"),
        (
            {**choice(), "usage": {"prompt_tokens": -1}},
            "usage.prompt_tokens must be a non-negative safe integer",
        ),
        ({**choice(), "usage": {"completion_tokens": "3"}}, "usage.completion_tokens must be"),
    ],
)
def test_each_narrowing_step_of_the_chapter_names_its_json_path(payload: object, message: str) -> None:
    with pytest.raises(InvalidProviderChunk) as raised:
        parse_payload(payload)
    assert str(raised.value).startswith("Invalid provider chunk: ")
    assert message in str(raised.value)


def test_a_valid_payload_narrows_to_chunks_finish_and_usage() -> None:
    parts = parse_payload(
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {
                        "role": "assistant",
                        "content": "正在读取",
                        "tool_calls": [
                            {
                                "index": 0,
                                "id": "call-1",
                                "type": "function",
                                "function": {"name": "read", "arguments": None},
                            }
                        ],
                    },
                    "finish_reason": "tool_calls",
                }
            ],
            "usage": {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3},
        }
    )
    assert parts.chunks == [TextChunk("正在读取"), ToolChunk(0, "call-1", "read", None)]
    assert (parts.finish_reason, parts.usage) == ("tool_calls", {"input": 1, "output": 2, "total_tokens": 3})


def events(*payloads: object) -> list[SSEEvent]:
    return [SSEEvent(p if isinstance(p, str) else json.dumps(p)) for p in payloads]


async def chunks_of(*payloads: object, strict: bool = True) -> list[object]:
    async def source() -> AsyncIterator[SSEEvent]:
        for event in events(*payloads):
            yield event

    return [chunk async for chunk in iter_provider_chunks(source(), strict=strict)]


async def test_finish_waits_for_trailing_usage_and_done_ends_reading() -> None:
    usage = {"choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": 8, "total_tokens": 20}}
    assert await chunks_of(
        choice(delta={"content": "a"}), choice(finish_reason="stop"), usage, "[DONE]", "junk"
    ) == [
        TextChunk("a"),
        FinishChunk("stop", Usage(12, 8, 20)),
    ]
    assert await chunks_of(choice(finish_reason="length")) == [FinishChunk("length")]
    assert await chunks_of(choice(delta={"content": "a"})) == [TextChunk("a")]


# --- the given reading (pi_course.payload_reading), in both modes-------------------------------


@pytest.mark.parametrize("strict", [True, False])
@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ({"choices": [{"index": True, "delta": {}}]}, "choices[0].index must be a non-negative safe integer"),
        ({"choices": [{"index": -1, "delta": {}}]}, "choices[0].index must be a non-negative safe integer"),
        (
            {"choices": [{"index": 1, "delta": {}}]},
            "choices[0].index must be 0: only the first choice is read",
        ),
        ({"choices": [{"index": 2.0, "delta": {}}]}, "choices[0].index must be 0"),
        (
            choice(delta={"tool_calls": [{"index": 0, "type": "x", "id": "a"}]}),
            'tool_calls[0].type must be "function"',
        ),
        (choice(delta={"tool_calls": [{"index": 0}]}), "tool_calls[0] carries no id"),
        (choice(delta={"refusal": ["no"]}), "choices[0].delta.refusal must be a string"),
    ],
)
async def test_the_given_reading_rejects_what_the_chapter_does_not_name(
    payload: object, message: str, strict: bool
) -> None:
    if not strict and message.startswith("choices[0].index must be 0"):
        assert await chunks_of(payload, strict=False) == []  # connect(): another choice, set aside
        return
    with pytest.raises(InvalidProviderChunk, match=re.escape(message)):
        await chunks_of(payload, strict=strict)


@pytest.mark.parametrize("strict", [True, False])
async def test_a_payload_with_error_carries_the_providers_message(strict: bool) -> None:
    error = {"error": {"message": "The model is overloaded.", "type": "server_error"}}
    with pytest.raises(ProviderError, match=r"^The model is overloaded\.$"):
        await chunks_of(choice(delta={"content": "a"}), error, strict=strict)


async def test_content_after_finish_and_a_changing_finish_are_errors() -> None:
    with pytest.raises(InvalidProviderChunk, match="content arrived after finish_reason"):
        await chunks_of(choice(finish_reason="stop"), choice(delta={"content": "late"}))
    with pytest.raises(InvalidProviderChunk, match="finish_reason changed"):
        await chunks_of(choice(finish_reason="stop"), choice(finish_reason="length"))
    with pytest.raises(InvalidProviderChunk, match=r"^Invalid provider chunk: data is not valid JSON$"):
        await chunks_of("{not json")


# --- the line buffer -----------------------------------------------------------------------------


def test_pending_is_the_line_still_arriving_and_one_read_can_complete_several_events() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b'data: {"a":') == []
    assert decoder.pending == 'data: {"a":'
    assert decoder.feed(b"1}\n\ndata: b\n\ndata: c") == [SSEEvent('{"a":1}'), SSEEvent("b")]
    assert decoder.pending == "data: c"
    assert decoder.close() == []  # no blank line: the last event is dropped
    assert decoder.pending == ""


# --- safe integers, choice index, usage merge, [DONE], refusals (issue 10 §1) --------------------


@pytest.mark.parametrize("count", [5, 5.0, 0, 0.0, 2**53 - 1])
def test_a_count_is_a_safe_integer_json_number_and_stored_as_int(count: float) -> None:
    parts = parse_payload({"choices": [], "usage": {"prompt_tokens": count}})
    assert parts.usage == {"input": int(count)}
    assert parts.usage is not None and type(parts.usage["input"]) is int
    tool = parse_payload(choice(delta={"tool_calls": [{"index": count, "id": "c"}]})).chunks[0]
    assert tool == ToolChunk(int(count), "c") and type(tool.index) is int  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "count", [5.5, -1, -1.0, True, False, 2**53, 2.0**53, float("inf"), float("nan"), "5"]
)
def test_a_count_that_is_not_a_non_negative_safe_integer_is_rejected(count: object) -> None:
    with pytest.raises(InvalidProviderChunk, match=r"usage\.completion_tokens must be a non-negative safe"):
        parse_payload({"choices": [], "usage": {"completion_tokens": count}})
    with pytest.raises(InvalidProviderChunk, match=r"tool_calls\[0\]\.index must be a non-negative safe"):
        parse_payload(choice(delta={"tool_calls": [{"index": count, "id": "c"}]}))


async def test_trailing_usage_is_merged_field_by_field() -> None:
    finish = {**choice(finish_reason="stop"), "usage": {"prompt_tokens": 5, "completion_tokens": 1}}
    trailing = {"choices": [], "usage": {"completion_tokens": 3}}
    assert await chunks_of(finish, trailing, "[DONE]") == [FinishChunk("stop", Usage(5, 3, 0))]
    # A null count carries nothing; an explicit total is kept.
    later = {"choices": [], "usage": {"prompt_tokens": None, "total_tokens": 9}}
    assert await chunks_of(finish, trailing, later) == [FinishChunk("stop", Usage(5, 3, 9))]


@pytest.mark.parametrize("done", ["[DONE]", "[DONE] ", " [DONE]", "\t[DONE]  "])
async def test_done_with_surrounding_whitespace_ends_the_stream(done: str) -> None:
    raw = f"data: {json.dumps(choice(finish_reason='stop'))}\n\ndata: {done}\n\ndata: not json\n\n".encode()
    chunks = [chunk async for chunk in iter_provider_chunks(iter_sse_events(reads([raw])))]
    assert chunks == [FinishChunk("stop")]


async def test_a_refusal_ends_the_stream_as_an_error_carrying_its_whole_text() -> None:
    with pytest.raises(ProviderRefusal, match=r"^Provider refused: I can't help with that\.$") as raised:
        await chunks_of(
            choice(delta={"role": "assistant", "content": None, "refusal": None}),
            choice(delta={"refusal": "I can't"}),
            choice(delta={"refusal": " help with that."}),
            choice(finish_reason="stop"),
            "[DONE]",
        )
    assert raised.value.refusal == "I can't help with that."


# --- strict=False: payloads that carry nothing the course reads (issue 10 §2) --------------------

AZURE_PROMPT_FILTER = {
    "choices": [],
    "created": 0,
    "id": "",
    "model": "",
    "object": "",
    "prompt_filter_results": [
        {"prompt_index": 0, "content_filter_results": {"hate": {"filtered": False, "severity": "safe"}}}
    ],
}
AZURE_ANNOTATION = {
    "choices": [
        {
            "content_filter_offsets": {"check_offset": 0, "start_offset": 0, "end_offset": 12},
            "content_filter_results": {"hate": {"filtered": False, "severity": "safe"}},
            "finish_reason": None,
            "index": 0,
        }
    ],
    "created": 1,
    "id": "chatcmpl-1",
    "model": "gpt-4o",
    "object": "chat.completion.chunk",
}
OPENAI_MODERATION = {"choices": [], "moderation": {"flagged": False}, "usage": None}


def azure_stream() -> list[object]:
    envelope = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4o"}

    def chunk(delta: dict, finish: str | None = None) -> dict:  # type: ignore[type-arg]
        return {**envelope, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    return [
        AZURE_PROMPT_FILTER,
        chunk({"role": "assistant", "content": ""}),
        chunk({"content": "Hello"}),
        chunk({"content": " world"}),
        AZURE_ANNOTATION,
        chunk({}, "stop"),
        {**envelope, "choices": [], "usage": {"prompt_tokens": 4, "completion_tokens": 2, "total_tokens": 6}},
        OPENAI_MODERATION,
        "[DONE]",
    ]


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        (AZURE_PROMPT_FILTER, "choices is empty and the payload carries no usage"),
        (OPENAI_MODERATION, "choices is empty and the payload carries no usage"),
        (AZURE_ANNOTATION, "choices[0].delta must be an object"),
    ],
)
async def test_strict_rejects_contentless_payloads_and_lenient_skips_exactly_them(
    payload: object, message: str
) -> None:
    with pytest.raises(InvalidProviderChunk, match=re.escape(message)):
        parse_payload(payload)  # the chapter's reader
    with pytest.raises(InvalidProviderChunk, match=re.escape(message) + r" \(.*strict=False.* reads it\)$"):
        await chunks_of(payload)  # the given reading says what reads it
    assert await chunks_of(payload, strict=False) == []


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        (
            choice(delta={"tool_calls": [{"function": {"arguments": "{}"}}]}),
            "choices[0].delta.tool_calls[0].index must be a non-negative safe integer",
        ),
        ({"choices": [{"delta": {}}, {"delta": {}}]}, "choices must hold exactly one choice"),
        ({"choices": {}}, "choices must be an array"),
        ({"choices": [{"delta": 1, "finish_reason": None}]}, "choices[0].delta must be an object"),
        ({"choices": [], "usage": {"prompt_tokens": 1.5}}, "usage.prompt_tokens must be"),
    ],
)
async def test_lenient_mode_keeps_every_other_rejection(payload: object, message: str) -> None:
    for strict in (True, False):
        with pytest.raises(InvalidProviderChunk, match=re.escape(message)):
            await chunks_of(payload, strict=strict)


async def test_lenient_mode_reads_a_content_filter_finish_and_other_choices_as_meant() -> None:
    with pytest.raises(InvalidProviderChunk, match='finish_reason "content_filter" is not one of'):
        await chunks_of(choice(finish_reason="content_filter"))
    with pytest.raises(ProviderError, match="content filter stopped the answer"):
        await chunks_of(choice(finish_reason="content_filter"), strict=False)
    for other in ({"choices": [{"index": 1, "delta": {"content": "b"}}]}, {"choices": [{"index": 1}]}):
        with pytest.raises(InvalidProviderChunk, match=re.escape("choices[0].index must be 0")):
            await chunks_of(other)
        assert await chunks_of(other, strict=False) == []


async def test_an_azure_stream_is_rejected_strictly_and_read_leniently_like_the_openai_client() -> None:
    with pytest.raises(InvalidProviderChunk, match="choices is empty"):
        await chunks_of(*azure_stream())
    lenient = await chunks_of(*azure_stream(), strict=False)
    assert lenient == [TextChunk("Hello"), TextChunk(" world"), FinishChunk("stop", Usage(4, 2, 6))]

    # The official client's decoder and chunk types reading the same bytes (its stream state
    # helper cannot take the annotation chunk: it has no delta).
    from openai._models import construct_type
    from openai._streaming import SSEDecoder as OpenAIDecoder
    from openai.types.chat import ChatCompletionChunk

    raw = "".join(f"data: {e.data}\n\n" for e in events(*azure_stream())).encode()
    text, finish, usage = "", None, None
    for sse_event in OpenAIDecoder().iter_bytes(iter([raw])):
        if sse_event.data == "[DONE]":
            break
        chunk = construct_type(type_=ChatCompletionChunk, value=sse_event.json())
        assert isinstance(chunk, ChatCompletionChunk)
        for item in chunk.choices:
            text += (item.delta.content or "") if item.delta else ""
            finish = item.finish_reason or finish
        usage = chunk.usage or usage
    assert lenient[:-1] == [TextChunk("Hello"), TextChunk(" world")] and text == "Hello world"
    assert finish == lenient[-1].reason  # type: ignore[union-attr]
    assert usage is not None
    assert Usage(usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == lenient[-1].usage  # type: ignore[union-attr]
