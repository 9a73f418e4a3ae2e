"""The notebook steppers: pages, browser-side links, deterministic text."""

from __future__ import annotations

import pytest

from pi_course import AgentContext, OpenAICompatibleModel, fixed_transport
from pi_course.course.fixtures import DIAGNOSTIC_4_2_CHUNKS, MAINLINE_SSE_LINE
from pi_course.notebook.widgets import _CHANGED, PartialStepper, SSEBufferStepper, trace_reads

pytestmark = pytest.mark.anyio


async def diagnostic_events() -> list:  # type: ignore[type-arg]
    model = OpenAICompatibleModel(provider="p", model="m", transport=fixed_transport(DIAGNOSTIC_4_2_CHUNKS))
    return [event async for event in model.stream(AgentContext(()))]


async def test_partial_stepper_has_one_page_per_event_linked_in_the_browser() -> None:
    events = await diagnostic_events()
    stepper = PartialStepper(events, "4/2")
    assert len(stepper.stack.children) == len(events) == 10
    assert (stepper.play.max, stepper.slider.max) == (9, 9)
    links = {(link.source[0], link.source[1], link.target[0], link.target[1]) for link in stepper.links}
    assert links == {
        (stepper.play, "value", stepper.slider, "value"),
        (stepper.slider, "value", stepper.stack, "selected_index"),
    }


async def test_each_page_highlights_the_slot_its_event_changed() -> None:
    stepper = PartialStepper(await diagnostic_events(), "4/2")
    page = stepper.stack.children[5].value  # text_delta "，再查" at content_index 1
    assert "text_delta" in page and "先读，再查" in page
    rows = page.split("<tr>")[3:]  # after the header row
    assert [_CHANGED in row for row in rows] == [False, True, False]
    assert _CHANGED not in stepper.stack.children[0].value


async def test_plain_text_lists_every_step_deterministically() -> None:
    events = await diagnostic_events()
    first, second = repr(PartialStepper(events, "4/2")), repr(PartialStepper(events, "4/2"))
    assert first == second
    lines = first.splitlines()
    assert lines[0] == "4/2 · 10 steps"
    assert lines[6].startswith(" 5 text_delta     #1") and "text '先读，再查'" in lines[6]
    bundle = PartialStepper(events, "4/2")._repr_mimebundle_()
    assert bundle["text/plain"] == first  # not cut at ipywidgets' 110 characters


def test_sse_trace_follows_the_chapter_split_inside_call_1() -> None:
    line = MAINLINE_SSE_LINE.encode()
    cut = line.index(b"call-") + 5
    first, second = trace_reads([line[:cut], line[cut:]])
    assert first.lines == () and first.events == () and first.pending == line[:cut].decode()
    assert second.lines == (MAINLINE_SSE_LINE.rstrip("\n"), "")
    assert [event.data for event in second.events] == [MAINLINE_SSE_LINE[6:].rstrip("\n")]
    assert second.pending == ""
    stepper = SSEBufferStepper([line[:cut], line[cut:]], "mainline")
    assert len(stepper.stack.children) == 2
    assert "call-1" in stepper.stack.children[1].value
