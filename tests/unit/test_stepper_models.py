"""The steppers' models, without HTML: typed steps from an adapter run, reads through SSEDecoder."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

import pytest
from broken_adapters import AppendThenEmit, WriteThenEmit

from pi_course import AgentContext, OpenAICompatibleModel, fixed_transport
from pi_course.chapter.fixtures import DIAGNOSTIC_4_2_CHUNKS, MAINLINE_CHUNKS
from pi_course.chapter.wire import mainline_sse_bodies, mainline_sse_reads
from pi_course.notebook import sse_model
from pi_course.notebook.partial_model import (
    FinishRead,
    TextBlock,
    ToolCallBlock,
    ToolRead,
    build_partial_steps,
    pair_events,
    provider_index_slots,
    read_chunk,
    read_event,
    replay,
)
from pi_course.notebook.sse_model import trace_reads, trace_responses
from pi_course.sse import SSEDecoder

pytestmark = pytest.mark.anyio

CRLF_READS = [b"data: a\r", b"\ndata: b\r\n\r\n"]


@pytest.mark.slow
def test_the_models_import_no_widgets() -> None:
    import subprocess

    probe = (
        "import sys; import pi_course.notebook.partial_model, pi_course.notebook.sse_model;"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('ipywidgets', 'IPython')))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# --- the SSE trace is SSEDecoder's ---------------------------------------------------------------


def test_crlf_split_across_reads_is_what_sse_decoder_holds_and_dispatches() -> None:
    decoder = SSEDecoder()
    first_events = decoder.feed(CRLF_READS[0])
    held = decoder.pending
    second_events = decoder.feed(CRLF_READS[1])
    assert (first_events, held) == ([], "data: a")
    assert [event.data for event in second_events] == ["a\nb"]

    first, second = trace_reads(CRLF_READS).reads
    # read 1: the \r may be half of \r\n: no finished line, the decoder holds "data: a"
    assert first.lines == () and first.payloads == () and first.pending == held == "data: a"
    assert first.held_cr and first.text == "data: a"
    # read 2: one line end, not a finished line plus a phantom blank line; one event "a\nb"
    assert second.carried_cr and second.before == "data: a"
    assert second.lines == ("data: a", "data: b", "")
    assert second.payloads == tuple(event.data for event in second_events) == ("a\nb",)
    assert second.pending == decoder.pending == "" and not second.mismatch


@pytest.mark.parametrize("cut", [1, 7, 40, 74, 120])
def test_every_read_of_the_mainline_matches_the_decoder(cut: int) -> None:
    body = mainline_sse_bodies()[0]
    reads = [body[:cut], body[cut:]]
    decoder = SSEDecoder()
    expected = []
    for read in reads:
        events = decoder.feed(read)
        expected.append((tuple(event.data for event in events), decoder.pending))
    trace = trace_reads(reads)
    assert [(step.payloads, step.pending) for step in trace.reads] == expected
    assert trace.failure is None and not any(step.mismatch for step in trace.reads)
    # the lines taken out, then what stays, rebuild the body
    rebuilt = "".join("".join(line + "\n" for line in step.lines) for step in trace.reads)
    assert rebuilt + trace.reads[-1].pending == body.decode()


def test_the_mainline_responses_each_start_with_a_new_decoder() -> None:
    trace = trace_responses(mainline_sse_reads())
    assert [step.number for step in trace.reads] == list(range(1, 11))
    assert [step.response for step in trace.reads] == [1] * 6 + [2] * 4
    assert trace.reads[6].before == ""  # response 2 does not inherit response 1's buffer
    assert trace.reads[6].held == "的".encode()[:1] and trace.reads[6].cut_char == "的"
    assert trace.reads[7].carried == "的".encode()[:1] and trace.reads[7].text.startswith("的")
    assert [step.payloads[-1] for step in trace.reads if step.payloads][-1] == "[DONE]"


class _StubDecoder:
    """A practice copy's SSEDecoder before Lab 5.3."""

    pending = ""

    def feed(self, chunk: bytes, *, final: bool = False) -> list[Any]:
        raise NotImplementedError("Lab 5.3: SSEDecoder.feed 尚未实现")


class _ForgetfulDecoder:
    """A learner's bug: the start of a line is dropped when a read ends inside it."""

    def __init__(self) -> None:
        self.pending = ""
        self.reads = 0

    def feed(self, chunk: bytes, *, final: bool = False) -> list[Any]:
        self.reads += 1
        if self.reads == 3:
            raise IndexError("list index out of range")
        self.pending = ""  # never keeps anything
        return []


def test_a_stub_decoder_ends_the_trace_naming_step_5_3(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("pi_course.sse.SSEDecoder", _StubDecoder)
    trace = trace_reads(CRLF_READS)
    assert trace.reads == ()
    assert trace.failure is not None and trace.failure.step == "5.3" and trace.failure.read == 1


def test_a_buggy_decoder_is_shown_as_it_is_until_it_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("pi_course.sse.SSEDecoder", _ForgetfulDecoder)
    trace = trace_reads([b"data: a", b"bc\n", b"\n"])
    first, second = trace.reads
    assert first.mismatch and first.pending == ""  # the buffer held "data: a", the decoder nothing
    assert second.before == "" and second.lines == ("bc",)  # what the learner's decoder made of it
    assert trace.failure is not None and trace.failure.step is None
    assert (trace.failure.read, trace.failure.message) == (3, "IndexError: list index out of range")


def test_sse_model_reads_the_decoder_not_a_copy_of_it() -> None:
    assert "split" not in sse_model.trace_reads.__code__.co_names  # no line buffer of its own


# --- the partial model ---------------------------------------------------------------------------


async def run(chunks: Any, model: Any = None) -> tuple[list[object], list[int]]:
    return await replay(chunks, model)


async def test_the_4_2_run_as_typed_steps() -> None:
    events, positions = await run(DIAGNOSTIC_4_2_CHUNKS)
    steps, unread = build_partial_steps(DIAGNOSTIC_4_2_CHUNKS, events, positions)
    assert unread == [] and len(steps) == 11
    assert [step.event.kind if step.event else None for step in steps] == [
        "start", "toolcall_delta", "text_delta", "toolcall_delta", "toolcall_delta", "text_delta",
        "toolcall_delta", None, "toolcall_end", "toolcall_end", "done",
    ]  # fmt: skip
    third = steps[3]  # tool index 2 arrives: the next free slot is 2
    assert third.chunk == ToolRead(2, "call-search", "search", '{"query":')
    assert [(b.provider_index, b.content_index) for b in third.buffers] == [(4, 0), (2, 2)]
    assert third.touched_buffer == 2 and third.changed_slot == 2 and third.new_slots == {2}
    assert isinstance(steps[7].chunk, FinishRead) and steps[7].finish == steps[7].chunk
    last = steps[-1]
    assert [type(block) for block in last.content] == [ToolCallBlock, TextBlock, ToolCallBlock]
    assert last.parsed_slots == {0, 2} and last.is_parsed(0) and last.missing_slot is None
    assert last.content[1] == TextBlock("先读，再查")


async def test_inferred_pairing_matches_the_recorded_positions() -> None:
    events, positions = await run(DIAGNOSTIC_4_2_CHUNKS)
    assert pair_events(DIAGNOSTIC_4_2_CHUNKS, events) == positions == [-1, 0, 1, 2, 3, 4, 5, 7, 7, 7]
    events, positions = await run(MAINLINE_CHUNKS)
    assert pair_events(MAINLINE_CHUNKS, events) == positions


def test_records_read_any_object_with_the_right_fields() -> None:
    @dataclass
    class Chunk:
        type: str
        index: int
        id: str | None = None
        name: str | None = None
        arguments_delta: str | None = None

    assert read_chunk(Chunk("tool", 4, "call-x")) == ToolRead(4, "call-x", None, None)
    assert read_chunk(ValueError("boom")).label == "ValueError"
    assert read_event(object()).kind == "None"


async def test_the_telling_step_an_event_names_slot_4_while_the_partial_has_one_slot() -> None:
    events, positions = await run(DIAGNOSTIC_4_2_CHUNKS, AppendThenEmit)
    steps, unread = build_partial_steps(DIAGNOSTIC_4_2_CHUNKS, events, positions)
    telling = steps[1]
    assert telling.event is not None and telling.event.kind == "toolcall_delta"
    assert telling.event.content_index == 4 and len(telling.content) == 1
    assert telling.missing_slot == 4 and not telling.missing_from_buffer
    assert telling.buffer(4) is not None and telling.buffer(4).content_index == 4  # type: ignore[union-attr]
    # the stream goes on: text takes content[1], tool 2 lands on 2 by chance, tool 4 again fails
    assert [step.event.kind for step in steps if step.event] == [
        "start", "toolcall_delta", "text_delta", "toolcall_delta", "error",
    ]  # fmt: skip
    assert steps[3].missing_slot is None and unread == [4, 5, 6]


async def test_the_telling_step_of_an_adapter_that_fails_on_its_first_write() -> None:
    """No event names slot 4 there: ``slots`` says which slot the edited line gives."""
    events, positions = await run(DIAGNOSTIC_4_2_CHUNKS, WriteThenEmit)
    bare, _ = build_partial_steps(DIAGNOSTIC_4_2_CHUNKS, events, positions)
    assert [step.missing_slot for step in bare] == [None, None]  # nothing pretends to know slot 4
    slots = provider_index_slots(DIAGNOSTIC_4_2_CHUNKS)
    assert slots == {4: 4, 2: 2}
    steps, unread = build_partial_steps(DIAGNOSTIC_4_2_CHUNKS, events, positions, slots)
    telling = steps[-1]
    assert telling.chunk_number == 1 and telling.event is not None and telling.event.kind == "error"
    assert telling.missing_slot == 4 and telling.missing_from_buffer and len(telling.content) == 1
    buffer = telling.buffer(4)
    assert buffer is not None and buffer.content_index == 4 and buffer.slot_from_outside
    assert telling.made_up_id(telling.content[0])  # tmp-4: no chunk sent that id
    assert unread == [1, 2, 3, 4, 5, 6]


async def test_a_stub_adapter_leaves_the_stub_error_to_the_notebook() -> None:
    class Stub:
        def __init__(self, transport: Any) -> None:
            pass

        def stream(self, context: Any) -> Any:
            raise NotImplementedError("Lab 5.2: OpenAICompatibleModel 尚未实现")

    with pytest.raises(NotImplementedError, match=r"Lab 5\.2"):  # begin()'s handler names the step
        await run(MAINLINE_CHUNKS, Stub)


async def test_a_reference_run_and_a_learner_run_give_the_same_steps() -> None:
    """The model reads fields, not classes: the course's events and a plain copy agree."""
    events = [event async for event in OpenAICompatibleModel(
        provider="p", model="m", transport=fixed_transport(MAINLINE_CHUNKS)
    ).stream(AgentContext(()))]  # fmt: skip
    steps, _ = build_partial_steps(MAINLINE_CHUNKS, events, pair_events(MAINLINE_CHUNKS, events))
    assert steps[-2].content[0] == ToolCallBlock(
        "call-1", "read", {"path": "README.md"}, '{"path":"README.md"}'
    )
