"""The notebook steppers: what each step shows, browser-side links, static HTML, deterministic text."""

from __future__ import annotations

import html
import re
from typing import Any

import pytest
from broken_adapters import AppendThenEmit

from pi_course import AgentContext, OpenAICompatibleModel, fixed_transport
from pi_course.chapter.fixtures import DIAGNOSTIC_4_2_CHUNKS, MAINLINE_CHUNKS
from pi_course.chapter.wire import MAINLINE_SSE_LINE, mainline_sse_bodies, mainline_sse_reads
from pi_course.notebook import partial_view, sse_view
from pi_course.notebook import stepper as shell
from pi_course.notebook.partial_model import replay
from pi_course.notebook.widgets import (
    CHANGED,
    CURRENT,
    LIVE_NOTE,
    MISSING,
    SIZERS_END,
    STYLE,
    PartialStepper,
    SSEBufferStepper,
    pair_events,
    trace_reads,
)

pytestmark = pytest.mark.anyio


async def run(chunks: Any) -> list[Any]:
    model = OpenAICompatibleModel(provider="p", model="m", transport=fixed_transport(chunks))
    return [event async for event in model.stream(AgentContext(()))]


def rows(page: str, table_class: str | None = None) -> list[str]:
    """The <tr> rows of the first table (or the first table with ``table_class``)."""
    start = page.index(f'<table class="{table_class}"') if table_class else page.index("<table")
    table = page[start : page.index("</table>", start)]
    return table.split("<tr")[2:]  # after the header row


def live(page: str) -> str:
    """A page without its sizers: the hidden copies of other steps that keep the height."""
    return re.sub(r'<div class="pi-sizers".*?' + re.escape(SIZERS_END), "", page, flags=re.S)


def section(page: str, heading: str) -> str:
    page = live(page)
    start = page.index(heading)
    end = page.find("<h4>", start + 1)
    return page[start : end if end != -1 else None]


def cells(row: str) -> list[str]:
    return re.findall(r"<td[^>]*>(.*?)</td>", row, flags=re.S)


# --- PartialStepper -----------------------------------------------------------------------------


async def test_the_4_2_stepper_shows_provider_indexes_and_content_slots() -> None:
    stepper = PartialStepper(DIAGNOSTIC_4_2_CHUNKS, await run(DIAGNOSTIC_4_2_CHUNKS), "4/2")
    # start, six chunks with one event each, finish with none, two toolcall_end, done
    assert len(stepper.steps) == len(stepper.pages) == len(stepper.stack.children) == 11
    assert (stepper.play.max, stepper.slider.max) == (10, 10)
    page = stepper.pages[3].value  # chunk 3: tool index 2 → content_index 2
    chunk = section(page, "读到的 ProviderChunk")
    assert "Provider index 2" in chunk and "call-search" in chunk
    buffers = section(page, "tool_buffers")
    cells = [re.findall(r"<td[^>]*>(.*?)</td>", row) for row in rows(buffers)]
    assert [(c[0], c[1], c[2], c[4]) for c in cells] == [
        ("<b>4</b>", "call-read", "read", "<b>0</b>"),
        ("<b>2</b>", "call-search", "search", "<b>2</b>"),
    ]
    assert [CHANGED in row for row in rows(buffers)] == [False, True]  # the buffer this chunk touched
    content = section(page, "partial.content")
    assert [CHANGED in row for row in rows(content)] == [False, False, True]
    assert "Provider index 4" in stepper.pages[1].value
    assert "Provider index 4" in stepper.pages[4].value  # index 4 again → slot 0


async def test_the_step_list_grows_as_the_learner_steps_with_the_current_row_highlighted() -> None:
    stepper = PartialStepper(DIAGNOSTIC_4_2_CHUNKS, await run(DIAGNOSTIC_4_2_CHUNKS), "4/2")
    for number, child in enumerate(stepper.pages):
        steps = rows(child.value, "pi-steps")
        assert len(steps) == 11  # every row is there, so the stepper keeps its height
        assert [CURRENT in row for row in steps] == [i == number for i in range(11)]
        assert ["pi-later" in row for row in steps] == [i > number for i in range(11)]  # not reached: folded
    listing = rows(stepper.pages[-1].value, "pi-steps")
    assert "index <b>4</b>" in listing[1] and "content_index <b>0</b>" in listing[1]
    assert "index <b>2</b>" in listing[3] and "content_index <b>2</b>" in listing[3]
    assert "finish tool_calls" in listing[7] and "无" in listing[7]  # finish: no event yet


async def test_raw_and_parsed_arguments_are_labelled() -> None:
    stepper = PartialStepper(MAINLINE_CHUNKS, await run(MAINLINE_CHUNKS), "mainline")
    streaming = section(stepper.pages[2].value, "partial.content")
    assert "原文 · 流式中，尚未解析" in streaming and "已解析" not in streaming
    assert '<code class="pi-str">{&quot;path&quot;:&quot;README.md&quot;}</code>' not in streaming
    assert '<code class="pi-str">{"path":"README.md"}</code>' in streaming
    parsed = section(stepper.pages[4].value, "partial.content")  # toolcall_end
    assert "已解析 · dict" in parsed and "{&#x27;path&#x27;: &#x27;README.md&#x27;}" not in parsed
    assert "{'path': 'README.md'}" in parsed
    assert "raw_arguments" in parsed and "原文" in parsed
    assert "流式中" in section(stepper.pages[2].value, "tool_buffers")
    assert "已解析" in section(stepper.pages[4].value, "tool_buffers")
    assert '原文 \'{"path":"README.md"}\'' in stepper.lines[3]
    assert "已解析 {'path': 'README.md'}" in stepper.lines[4]


async def test_replay_records_the_same_steps_as_the_inferred_pairing() -> None:
    events = await run(DIAGNOSTIC_4_2_CHUNKS)
    inferred = PartialStepper(DIAGNOSTIC_4_2_CHUNKS, events, "4/2")
    replayed = await PartialStepper.replay(DIAGNOSTIC_4_2_CHUNKS, "4/2")
    assert repr(replayed) == repr(inferred)
    assert pair_events(DIAGNOSTIC_4_2_CHUNKS, events) == [-1, 0, 1, 2, 3, 4, 5, 7, 7, 7]


async def test_a_broken_run_shows_slot_4_named_while_content_has_one_slot() -> None:
    stepper = await PartialStepper.replay(DIAGNOSTIC_4_2_CHUNKS, "broken", model=AppendThenEmit)
    first = stepper.pages[1].value
    content = section(first, "partial.content")
    assert [MISSING in row for row in rows(content)] == [False, True]
    assert "content[4] 不存在" in content and "只有 1 个槽位" in content
    assert "Provider index 4" in first
    buffers = rows(section(first, "tool_buffers"))
    assert re.findall(r"<td[^>]*>(.*?)</td>", buffers[0])[4] == "<b>4</b>"  # content_index 4
    # The second chunk for index 4 assigns content[4]: an IndexError ends the stream there.
    kinds = [step.event.kind if step.event else None for step in stepper.steps]
    assert kinds == ["start", "toolcall_delta", "text_delta", "toolcall_delta", "error"]
    assert stepper.steps[-1].chunk_number == 4
    assert stepper.unread == [4, 5, 6]
    assert "没有读到的 chunk: #5, #6, #7" in repr(stepper)
    assert "[4] 不存在（content 只有 1 个槽位）" in stepper.lines[1]
    # The same events without recorded positions: the pairing is inferred, nothing crashes.
    events, _ = await replay(DIAGNOSTIC_4_2_CHUNKS, AppendThenEmit)
    inferred = PartialStepper(DIAGNOSTIC_4_2_CHUNKS, events, "broken")
    assert repr(inferred) == repr(stepper)
    # The experiment's slots ({4: 4, 2: 2} for this adapter) add nothing: the events named them.
    measured = PartialStepper(DIAGNOSTIC_4_2_CHUNKS, events, "broken", slots={4: 4, 2: 2})
    assert repr(measured) == repr(stepper) and "*" not in measured.pages[1].value


async def test_05_5s_run_of_the_reference_adapter_names_slot_4_while_content_has_one_slot() -> None:
    """The reference appends a placeholder, then writes content[4]: an error before any delta."""
    from pi_course.chapter.fixtures import mainline_context
    from pi_course.notebook.breakit import Watched, confused_indexes

    transport = Watched(fixed_transport(DIAGNOSTIC_4_2_CHUNKS))
    model = OpenAICompatibleModel(provider="p", model="m", transport=transport)
    with confused_indexes() as experiment:
        broken = [event async for event in model.stream(mainline_context())]
    assert [event.type for event in broken] == ["start", "error"]
    assert experiment.slots == {4: 4} and experiment.swaps == [(4, 0)]
    stepper = PartialStepper(DIAGNOSTIC_4_2_CHUNKS, broken, "05-5", slots=experiment.slots)
    assert len(stepper.steps) == len(stepper.pages) == 2 and stepper.unread == [1, 2, 3, 4, 5, 6]
    page = stepper.pages[1].value
    buffers = rows(section(page, "tool_buffers"))
    assert [cells(row)[:2] + cells(row)[4:5] for row in buffers] == [["<b>4</b>", "call-read", "<b>4*</b>"]]
    assert "没有哪个事件报告过这个槽位" in section(page, "tool_buffers")
    content = section(page, "最终 content")
    assert [(CHANGED in row, MISSING in row) for row in rows(content)] == [(True, False), (False, True)]
    new, missing = rows(content)
    # The slot the broken line added holds the chunk's own id and name: nothing of the reference's.
    assert (
        "0 ◀ 新增" in new and "call-read" in new and "call-4" not in new and "是 adapter 自己起的" not in new
    )
    assert "content[4] 不存在：tool_buffers 给 index 4 记的槽位是 4，可 content 只有 1 个槽位" in missing
    assert "[0] toolCall call-read" in stepper.lines[1] and "call-4" not in stepper.lines[1]
    assert "#4)" in stepper.lines[1] and "[4] 不存在（content 只有 1 个槽位）" in stepper.lines[1]
    # Two steps: the line about the unread chunks is not a step.
    assert repr(stepper).splitlines()[0] == "05-5 · 2 步" and len(repr(stepper).splitlines()) == 4
    assert "· 2 步。" in stepper._repr_mimebundle_()["text/plain"]
    static = stepper._repr_html_()
    assert static.count('<tr class="pi-row">') == 2 and "05-5 · 2 步" in static
    assert "content[4] 不存在" in static and "没有读到的 chunk：#2, #3, #4, #5, #6, #7" in static
    # Without the experiment's slots the stepper cannot know slot 4, and does not pretend to.
    bare = PartialStepper(DIAGNOSTIC_4_2_CHUNKS, broken, "05-5")
    assert "不存在" not in bare.pages[1].value and "#?)" in bare.lines[1]


async def test_partial_text_lists_every_step_deterministically() -> None:
    events = await run(DIAGNOSTIC_4_2_CHUNKS)
    first, second = (
        repr(PartialStepper(DIAGNOSTIC_4_2_CHUNKS, events, "4/2")),
        repr(PartialStepper(DIAGNOSTIC_4_2_CHUNKS, events, "4/2")),
    )
    assert first == second
    lines = first.splitlines()
    assert lines[0] == "4/2 · 11 步"
    assert lines[2].startswith(" 1 · chunk 1: tool index=4 id='call-read'")
    assert "toolcall_delta content_index=0" in lines[2]
    assert lines[6].startswith(" 5 · chunk 5: text delta='，再查' → text_delta content_index=1")
    assert "[1] text '先读，再查'" in lines[6]
    assert not re.search(r"0x[0-9a-f]{6,}|model_id|[0-9a-f]{32}", first)


async def test_the_static_table_lists_every_step_with_only_what_it_changed() -> None:
    stepper = PartialStepper(DIAGNOSTIC_4_2_CHUNKS, await run(DIAGNOSTIC_4_2_CHUNKS), "4/2")
    static = stepper._repr_html_()
    table = static[static.index("<table") : static.index("<h4>第 ")]  # the first rows and the folded rest
    steps = [row.split("</tr>")[0] for row in table.split('<tr class="pi-row">')[1:]]
    assert len(steps) == 11 and all(len(cells(row)) == 4 for row in steps)
    assert "<details><summary>其余 7 行" in table  # one screen until opened
    assert "table-layout:fixed" in table and "<colgroup>" in table
    aligned = '<td style="text-align:left;vertical-align:top;overflow-wrap:break-word"'
    assert static.count("<td") == static.count(aligned)  # an untrusted notebook keeps these
    # step 5: "，再查" joins slot 1 — the row shows slot 1, not the whole content
    changes = cells(steps[5])[3]
    assert "content[<b>1</b>] ◀ 本步" in changes and "先读，再查" in changes
    assert "content[<b>0</b>]" not in changes and "content[<b>2</b>]" not in changes
    assert "tool_buffers[<b>4</b>] → content_index <b>0</b>" in cells(steps[4])[3]
    assert "记下 finish：tool_calls" in cells(steps[7])[3]
    assert "已解析" in cells(steps[8])[3] and "最终 content：3 个槽位" in cells(steps[10])[3]
    # below the table, once: the state after the last step
    final = static[static.index("<h4>第 ") :]
    assert "第 10 步之后" in final and "最终 content" in final
    slots = rows(final[final.index("最终 content") :])
    assert [cells(row)[1].split(" ")[0] for row in slots] == ["toolCall", "text", "toolCall"]


async def test_display_gives_a_static_table_and_the_live_widget() -> None:
    stepper = PartialStepper(DIAGNOSTIC_4_2_CHUNKS, await run(DIAGNOSTIC_4_2_CHUNKS), "4/2")
    static = stepper._repr_html_()
    assert static.count('<tr class="pi-row">') == 11 and "pi-static" in static
    assert "Provider index 4" in static and "Provider index 2" in static
    assert "4/2 · 11 步</div>" in static
    assert shell.MISSING_NOTE in static  # in place of "model not found", should the widget state be lost
    assert (
        static == PartialStepper(DIAGNOSTIC_4_2_CHUNKS, await run(DIAGNOSTIC_4_2_CHUNKS), "4/2")._repr_html_()
    )
    bundle = stepper._repr_mimebundle_()
    assert set(bundle) == {"text/plain", "application/vnd.jupyter.widget-view+json"}
    # also shown as a practice copy's 预期输出, after a cell that failed: no "run this cell"
    assert bundle["text/plain"] == f"PartialStepper「4/2」· 11 步。{LIVE_NOTE}"
    assert "运行成功后才出现" in LIVE_NOTE and "信任" in LIVE_NOTE and "运行这个单元格" not in LIVE_NOTE
    assert "text/html" not in bundle  # JupyterLab shows the widget, not the table a second time
    assert {"pi-stepper", "pi-partial-stepper"} <= set(stepper._dom_classes)
    heading = stepper.children[0].value
    assert ".jp-OutputArea:has(.pi-stepper) > .jp-OutputArea-child:has(.pi-static)" in heading
    links = {(link.source[0], link.source[1], link.target[0], link.target[1]) for link in stepper.links}
    assert links == {
        (stepper.play, "value", stepper.slider, "value"),
        (stepper.slider, "value", stepper.stack, "selected_index"),
    }


def test_display_emits_the_static_output_before_the_widget(monkeypatch: pytest.MonkeyPatch) -> None:
    shown: list[dict[str, Any]] = []
    monkeypatch.setattr(shell, "display", lambda bundle, raw: shown.append(bundle))
    sse = SSEBufferStepper.mainline()
    sse._ipython_display_()
    assert list(shown[0]) == ["text/html", "text/plain"]
    assert shown[0]["text/plain"] == repr(sse)
    assert "application/vnd.jupyter.widget-view+json" in shown[1]


def test_theme_colours_come_from_jupyterlab_variables() -> None:
    highlight = STYLE[STYLE.index("tr.pi-current > td {") :].split("}")[0]
    assert "var(--jp-ui-font-color0" in highlight and "var(--jp-brand-color1" in highlight
    assert "#fff3b0" not in STYLE
    colours = re.findall(r"#[0-9a-fA-F]{3,6}\b", STYLE)
    # every literal colour is a fallback inside var(...)
    assert len(colours) == len(re.findall(r"var\(--jp-[a-z0-9-]+, #[0-9a-fA-F]{3,6}\)", STYLE))


def test_tables_keep_their_columns_still_and_the_current_row_keeps_its_font() -> None:
    rule = STYLE[STYLE.index(".pi-sv table {") :].split("}")[0]
    assert "table-layout: fixed" in rule and "width: 100%" in rule
    rules = re.findall(r"([^{}]+)\{([^}]*)\}", STYLE)
    across = [body for selector, body in rules if re.search(r"tr\.pi-current > td(?!:first-child)", selector)]
    assert across and not any("font-weight" in body for body in across)  # bold text would re-wrap cells
    assert (
        "overflow-wrap: anywhere" in STYLE[STYLE.index(".pi-sv.pi-sv th, .pi-sv.pi-sv td {") :].split("}")[0]
    )
    page = STYLE[STYLE.index(".pi-sv .pi-page {") :].split("}")[0]
    assert "grid-template-columns: minmax(0, 2fr) minmax(0, 3fr)" in page


async def test_every_page_carries_the_tallest_variant_of_each_section() -> None:
    """Hidden sizers: a section (SSE: the whole detail column) is as tall on every step as on its
    tallest one, at any width."""
    partial = PartialStepper(DIAGNOSTIC_4_2_CHUNKS, await run(DIAGNOSTIC_4_2_CHUNKS), "4/2")
    sse = SSEBufferStepper.mainline()
    tallest = {
        "content": (partial, partial_view.content_html(partial.steps[9])),  # three slots, two parsed
        "chunk": (partial, partial_view.chunk_cell_html(partial.steps[3])),  # call-search, search, {"query":
        "lines": (sse, sse_view.lines_html(sse.reads[9])),  # eight lines in one read
        "payloads": (sse, sse_view.payloads_html(sse.reads[9])),  # four payloads
        "buffer": (sse, sse_view.buffer_html(sse.reads[9])),  # 203 bytes
    }
    for name, (stepper, fragment) in tallest.items():
        for number, page in enumerate(stepper.pages):
            assert page.value.count(fragment) == 1, (name, number)  # once: as itself or as a sizer
    for shown in (partial, sse):
        sections = {page.value.count('<div class="pi-slot">') for page in shown.pages}
        assert sections == {4 if shown is partial else 1}  # SSE: the detail column is one slot
        for page in shown.pages:
            hidden = re.findall(r'<div class="pi-sizers" aria-hidden="true">(.*?)' + SIZERS_END, page.value)
            assert hidden or shown is sse, "a partial page without sizers"  # SSE: the tallest read has none
            assert not any(CURRENT in part for part in hidden)
        if shown is sse:
            assert sum(SIZERS_END not in page.value for page in shown.pages) <= 3  # only the tallest


# --- SSEBufferStepper ---------------------------------------------------------------------------


def test_the_mainline_split_has_ten_reads_with_the_cases_the_chapter_needs() -> None:
    responses = mainline_sse_reads()
    assert [b"".join(reads) for reads in responses] == list(mainline_sse_bodies())
    stepper = SSEBufferStepper.mainline()
    reads = stepper.reads
    assert len(reads) == len(stepper.pages) == 10
    assert (stepper.slider.min, stepper.slider.max, stepper.play.min, stepper.stack.selected_index) == (
        1,
        10,
        1,
        1,
    )
    # the chapter's cut, right after "call-"
    assert reads[0].text.endswith('"id":"call-') and reads[0].payloads == ()
    assert reads[1].payloads == (MAINLINE_SSE_LINE[6:].rstrip("\n"),)
    # a read ending right after a line's \n: the line is out, its event still waits for the blank line
    assert reads[3].text.endswith("\n") and reads[3].pending == "" and reads[3].payloads == ()
    assert len(reads[3].waiting) == 1
    # several events in one read
    assert len(reads[4].payloads) == 3 and reads[4].pending == "data: [DO"
    # reads that end mid-line
    assert [bool(step.pending) for step in reads] == [
        True,
        False,
        True,
        False,
        True,
        False,
        True,
        False,
        True,
        False,
    ]
    # a read that cuts the three bytes of 的
    assert reads[6].held == "的".encode()[:1] and reads[7].carried == "的".encode()[:1]
    assert reads[7].text.startswith("的第一行是")
    assert reads[-1].payloads[-1] == "[DONE]"


def test_sse_pages_mark_line_ends_the_blank_line_the_read_end_and_the_empty_buffer() -> None:
    stepper = SSEBufferStepper.mainline()
    second = stepper.pages[1].value
    assert '<span class="pi-badge pi-blank">空行</span><span class="pi-nl">↵</span>' in second
    assert "第 2 次读取到此为止" in second
    assert section(second, "<h4>留在缓冲区").count("缓冲区为空") == 1
    cut = stepper.pages[6].value
    assert "「的」的前 1 个字节 E7：解码器暂存" in section(cut, "第 7 次读取")
    assert "E7（上次暂存）+ 9A 84 → 的" in stepper.pages[7].value
    for child in stepper.pages:
        assert "\\\\" not in child.value  # no doubled backslashes
        assert len(rows(child.value, "pi-steps")) == 12  # ten reads + two response headers
    assert '\\"path\\":' in second  # the JSON escape itself, exactly as on the wire
    plain = repr(stepper)
    assert "\\\\" not in plain and plain.count("\n") == 10
    assert "[空行]" in plain and "缓冲区为空" in plain and "暂存字节 E7" in plain
    static = stepper._repr_html_()
    assert static.count('<tr class="pi-row">') == 10 and "空行" in static and "缓冲区为空" in static
    assert "主线的 SSE 字节流：十次读取 · 10 次读取</div>" in static


def test_the_sse_static_table_is_three_columns_with_every_byte_and_each_payload_abridged() -> None:
    stepper = SSEBufferStepper.mainline()
    static = stepper._repr_html_()
    assert "table-layout:fixed" in static and "<colgroup>" in static
    reads = [row.split("</tr>")[0] for row in static.split('<tr class="pi-row">')[1:]]
    assert len(reads) == 10 and all(len(cells(row)) == 3 for row in reads)
    assert static.count("（新的 buffer）") == 2  # a row before each response
    # every byte of both bodies is in the middle column, in order
    shown = "".join(html.unescape(re.sub(r"<[^>]+>", "", cells(row)[1])) for row in reads)
    bodies = "".join(body.decode() for body in mainline_sse_bodies())
    assert re.sub(r"空行|↵|\n|「的」.*?下一次读取|E7（上次暂存）\+ 9A 84 → 的", "", shown) == bodies.replace(
        "\n", ""
    )
    number, _, after = cells(reads[4])  # read 5: three events in one read
    assert number.startswith("5<br>") and "174 字节" in number
    assert "取出 5 行（data 行 2、空行 3）" in after and "分发 3 条 payload" in after
    assert after.count('<div class="pi-buffer">') == 3 + 1  # three payloads and what stays
    assert "data: [DO" in after.split("留在缓冲区")[1]
    for step, row in zip(stepper.reads, reads, strict=True):
        after = cells(row)[2]
        assert after.count("<li>") == len(step.payloads)
        for payload in step.payloads:  # in full up to 100 characters, else its start and its end
            shown = [payload] if len(payload) <= 100 else [payload[:48], payload[-24:]]
            assert all(html.escape(part, quote=False) in after for part in shown)
    assert "省略 " in cells(reads[1])[2] and '<div class="pi-buffer">[DONE]</div>' in cells(reads[5])[2]
    assert "README.md " in cells(reads[6])[2]  # a text delta's payload is short: shown whole
    assert "缓冲区里的 74 个字符全部留下" in cells(reads[0])[2]
    assert "取出的完整行" not in static  # the lines themselves are the read's text: not repeated


def test_trace_reads_follows_the_chapter_split_inside_call_1() -> None:
    line = MAINLINE_SSE_LINE.encode()
    cut = line.index(b"call-") + 5
    first, second = trace_reads([line[:cut], line[cut:]]).reads
    assert first.lines == () and first.payloads == () and first.pending == line[:cut].decode()
    assert second.lines == (MAINLINE_SSE_LINE.rstrip("\n"), "")
    assert second.payloads == (MAINLINE_SSE_LINE[6:].rstrip("\n"),)
    assert second.pending == "" and second.waiting == ()
    stepper = SSEBufferStepper([line[:cut], line[cut:]], "mainline")
    assert len(stepper.pages) == 2
    assert "call-1" in stepper.pages[1].value
    assert {"pi-stepper", "pi-sse-stepper"} <= set(stepper._dom_classes)


@pytest.mark.slow
def test_nbconvert_html_shows_the_static_table_even_with_saved_widget_state() -> None:
    """nbconvert picks the widget view whenever the state is saved; the static output still shows."""
    import nbformat
    from nbclient import NotebookClient
    from nbconvert import HTMLExporter

    source = "from pi_course.notebook.widgets import SSEBufferStepper\nSSEBufferStepper.mainline()"
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source)])
    NotebookClient(notebook, kernel_name="python3", store_widget_state=True).execute()
    static, live = notebook.cells[0].outputs
    assert set(static["data"]) == {"text/html", "text/plain"}
    assert "application/vnd.jupyter.widget-view+json" in live["data"]
    assert live["data"]["application/vnd.jupyter.widget-view+json"]["model_id"] in str(
        notebook.metadata.widgets
    )
    page, _ = HTMLExporter().from_notebook_node(notebook)
    assert page.count('<tr class="pi-row">') == 10 and "缓冲区为空" in page


def test_the_crlf_split_shows_what_sse_decoder_holds_not_a_phantom_blank_line() -> None:
    stepper = SSEBufferStepper([b"data: a\r", b"\ndata: b\r\n\r\n"], "CRLF")
    first, second = (page.value for page in stepper.pages)
    assert "可能是 \\r\\n 的前一半" in first and "没有取出完整的行" in first
    assert "缓冲区为空" not in section(first, "<h4>留在缓冲区")
    assert "上次暂存的 \\r + 这次的 \\n → 一个换行" in second
    buffer = section(second, "append 之后的缓冲区")
    assert buffer.count('pi-blank">空行') == 1  # the blank line that ends the event, and no other
    assert "取出 3 行（data 行 2、空行 1）" in second
    assert '<li><div class="pi-buffer">a\nb</div></li>' in section(second, "分发的 SSE payload")
    lines = repr(stepper).splitlines()
    assert lines[1].endswith("‖ 取出的行: 无 ‖ payload: 无 ‖ 留下: data: a")
    assert "取出的行: data: a↵ / data: b↵ / [空行] ‖ payload: a\\nb ‖ 留下: 缓冲区为空" in lines[2]


def test_a_stub_decoder_names_step_5_3_and_a_buggy_one_is_shown_until_it_raises(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from pi_course.notebook.lesson import StepNotDone, missing_step

    class Stub:
        pending = ""

        def feed(self, chunk: bytes, *, final: bool = False) -> list[Any]:
            raise NotImplementedError("Lab 5.3 SSE 与 unknown 边界 尚未实现")

    monkeypatch.setattr("pi_course.sse.SSEDecoder", Stub)
    with pytest.raises(StepNotDone) as stub:  # begin()'s handler: one line, then 预期输出
        SSEBufferStepper.mainline()
    assert missing_step(stub.value) == "5.3"

    class Broken:
        def __init__(self) -> None:
            self.pending, self.fed = "", 0

        def feed(self, chunk: bytes, *, final: bool = False) -> list[Any]:
            self.fed += 1
            if self.fed == 2:
                raise IndexError("list index out of range")
            return []

    monkeypatch.setattr("pi_course.sse.SSEDecoder", Broken)
    stepper = SSEBufferStepper.mainline()
    line = "第 2 次读取时 SSEDecoder 出错（实践 5.3，pi_course/sse.py）：IndexError: list index out of range"
    lines = repr(stepper).splitlines()
    assert len(lines) == 3 and lines[1].startswith("read 1 (响应 1, 74 字节)") and lines[2] == line
    assert len(stepper.pages) == 1 and line in stepper.pages[0].value and line in stepper._repr_html_()

    class BrokenAtOnce(Broken):
        def __init__(self) -> None:
            super().__init__()
            self.fed = 1

    monkeypatch.setattr("pi_course.sse.SSEDecoder", BrokenAtOnce)
    empty = SSEBufferStepper.mainline()
    assert empty.pages == [] and empty.children[1].layout.display == "none"
    assert "第 1 次读取时 SSEDecoder 出错" in empty.stack.children[-1].value
    assert empty._repr_mimebundle_()["text/plain"] == repr(empty)


def test_play_the_slider_and_the_arrow_buttons_sit_in_one_row() -> None:
    stepper = SSEBufferStepper.mainline()
    controls = stepper.children[1]
    assert list(controls.children) == [stepper.play, stepper.back, stepper.slider, stepper.forward]
    for button, key in ((stepper.back, "ArrowLeft"), (stepper.forward, "ArrowRight")):
        assert 'class="pi-nav"' in button.value and f"key:&#x27;{key}&#x27;" in button.value
        assert ".noUi-handle" in button.value and "h.focus(" in button.value
    for page in stepper.pages:  # a click on the page, then the arrow keys step the slider
        assert page.value.startswith('<div class="pi-sv pi-live" tabindex="0" onkeydown="')
        assert "&#x27;ArrowLeft&#x27;,&#x27;ArrowRight&#x27;" in page.value


async def test_05_5s_edited_adapter_shows_the_telling_slot_with_provider_index_slots() -> None:
    from pi_course.notebook.breakit import Watched, confused_indexes
    from pi_course.notebook.widgets import provider_index_slots

    model = OpenAICompatibleModel(
        provider="p", model="m", transport=Watched(fixed_transport(DIAGNOSTIC_4_2_CHUNKS))
    )
    with confused_indexes():
        broken = [event async for event in model.stream(AgentContext(()))]
    stepper = PartialStepper(
        DIAGNOSTIC_4_2_CHUNKS, broken, "05-5", slots=provider_index_slots(DIAGNOSTIC_4_2_CHUNKS)
    )
    page = stepper.pages[-1].value
    assert "content[4] 不存在" in rows(page, "pi-steps")[1]  # the list names the telling step too
    assert "content[4] 不存在：tool_buffers 给 index 4 记的槽位是 4，可 content 只有 1 个槽位" in page
