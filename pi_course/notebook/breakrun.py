"""05-5's view of the break: the 4/2 fixture's events, correct and broken, side by side.

:func:`break_run` runs the fixture through the learner's adapter twice: as it is, and with the
two indexes confused (by :func:`.breakit.confused_indexes`, unless the file on disk is already
broken: then the file's own run is the broken one). :class:`Comparison` lines each run up
against what the 5.2 test expects (slots by first appearance, derived from the chunks) and says
the first difference in words; its HTML is a table, its text the same rows for nbval.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .breakit import Watched, adapter_state, confused_indexes, stepper_slots
from .markup import style_tag

#: (event type, content_index, delta or terminal reason): what the 5.2 test compares.
Row = tuple[str, int | None, str | None]


def _slots(chunks: Sequence[Any]) -> dict[object, int]:
    """Each block's slot by first appearance: ``"text"`` for the text, ``("tool", index)`` per tool."""
    slots: dict[object, int] = {}
    for chunk in chunks:
        kind = getattr(chunk, "type", None)
        if kind in ("text", "tool"):
            slots.setdefault("text" if kind == "text" else ("tool", chunk.index), len(slots))
    return slots


def expected_rows(chunks: Sequence[Any]) -> list[Row]:
    """The events the 5.2 test expects for ``chunks``: slots by first appearance, ends in slot order."""
    slots = _slots(chunks)
    rows: list[Row] = [("start", None, None)]
    reason = None
    for chunk in chunks:
        kind = getattr(chunk, "type", None)
        if kind == "text":
            rows.append(("text_delta", slots["text"], chunk_delta(chunk)))
        elif kind == "tool":
            rows.append(("toolcall_delta", slots[("tool", chunk.index)], chunk_delta(chunk)))
        elif kind == "finish":
            reason = chunk.reason
    if reason == "tool_calls":
        tools = sorted(slot for key, slot in slots.items() if key != "text")
        rows += [("toolcall_end", slot, None) for slot in tools]
        rows.append(("done", None, "toolUse"))
    elif reason is not None:
        rows.append(("done", None, reason))
    return rows


def expected_tool_slots(chunks: Sequence[Any]) -> dict[int, int]:
    """Provider index → the slot its tool takes by first appearance (what the test expects)."""
    return {key[1]: slot for key, slot in _slots(chunks).items() if isinstance(key, tuple)}


def whose() -> str:
    """Whose adapter a column shows: the learner's in a practice copy, the reference's in the book."""
    from .lesson import practice_copy

    return "你的 adapter" if practice_copy() else "参考实现的 adapter"


async def as_it_is(chunks: Sequence[Any], label: str | None = None) -> Comparison:
    """The learner's adapter on ``chunks`` as the files are now, against the test's expectation."""
    from .. import adapter as lesson_adapter

    model = lesson_adapter.OpenAICompatibleModel(
        provider="fixture", model="fixture", transport=lesson_adapter.fixed_transport(list(chunks))
    )
    events = await _events(model, chunks)
    return Comparison(expected_rows(chunks), [Run(label or f"{whose()}（现在）", events)])


def chunk_delta(chunk: Any) -> str | None:
    delta = getattr(chunk, "arguments_delta", None) if chunk.type == "tool" else getattr(chunk, "delta", None)
    return None if delta is None else str(delta)


def event_row(event: Any) -> Row:
    """An event as the test sees it."""
    if event.type == "done":
        return ("done", None, event.reason)
    if event.type == "error":
        return ("error", None, event.reason)
    return (event.type, getattr(event, "content_index", None), getattr(event, "delta", None))


def row_text(row: Row | None) -> str:
    """One event in plain words: type, slot, the characters it carried."""
    if row is None:
        return "（没有这条：流已经结束）"
    kind, slot, detail = row
    if kind == "error":
        return "error 终态：流到这里结束"
    if kind == "done":
        return f"done · {detail}"
    parts = [kind] + ([f"槽位 {slot}"] if slot is not None else []) + ([repr(detail)] if detail else [])
    return " · ".join(parts)


@dataclass
class Run:
    """One run of the fixture through an adapter: its events and what they amount to."""

    label: str
    events: list[Any]

    @property
    def rows(self) -> list[Row]:
        return [event_row(event) for event in self.events]

    @property
    def first_tool_slot(self) -> int | str | None:
        """The slot the first ``toolcall_delta`` names; ``"error"`` when the stream ended before one."""
        first = next((row for row in self.rows if row[0] == "toolcall_delta"), None)
        if first is not None:
            return first[1]
        return "error" if self.events and self.events[-1].type == "error" else None

    @property
    def final(self) -> Any:
        last = self.events[-1]
        return last.message if last.type == "done" else getattr(last, "error", None)

    def story(self, expected: Sequence[Row]) -> str:
        """What this run did, in a sentence or two, measured from its own events."""
        final = self.final
        slots = len(final.content) if final is not None else 0
        want = 1 + max((slot for _, slot, _ in expected if slot is not None), default=-1)
        first_tool = next((row for row in self.rows if row[0] == "toolcall_delta"), None)
        said = []
        if first_tool is not None:
            said.append(f"第一条 toolcall_delta 点名槽位 {first_tool[1]}")
        last = self.events[-1]
        if last.type == "error":
            ran = len(self.events) - 2  # neither start nor the terminal event
            said.append(f"start 之后只发出 {ran} 条事件就以 error 终态结束，那时 content 里有 {slots} 个槽位")
        else:
            said.append(f"以 done（{last.reason}）结束，最终 content 有 {slots} 个槽位（应有 {want} 个）")
        return "；".join(said) + "。"


@dataclass
class Comparison:
    """Runs side by side against the test's expectation; the first difference said in words."""

    expected: list[Row]
    runs: list[Run]
    notes: list[str] = field(default_factory=list)

    def first_difference(self, run: Run) -> int | None:
        rows = run.rows
        for number in range(max(len(rows), len(self.expected))):
            got = rows[number] if number < len(rows) else None
            want = self.expected[number] if number < len(self.expected) else None
            if got != want:
                return number
        return None

    def summary(self, run: Run) -> str:
        number = self.first_difference(run)
        if number is None:
            return f"{run.label}：和测试期望的 {len(self.expected)} 条事件一条不差 ✓"
        want = self.expected[number] if number < len(self.expected) else None
        got = run.rows[number] if number < len(run.rows) else None
        return (
            f"{run.label}：第一处不同在第 {number} 条事件 ✗ 测试期望「{row_text(want)}」，"
            f"实际是「{row_text(got)}」。{run.story(self.expected)}"
        )

    def _cells(self, run: Run, number: int) -> tuple[str, bool]:
        got = run.rows[number] if number < len(run.rows) else None
        want = self.expected[number] if number < len(self.expected) else None
        return row_text(got), got == want

    def __repr__(self) -> str:
        lines = []
        for number in range(self._length()):
            want = self.expected[number] if number < len(self.expected) else None
            cells = [row_text(want)]
            for run in self.runs:
                text, same = self._cells(run, number)
                cells.append(("✓ " if same else "✗ ") + text)
            lines.append(f"{number:>2} | " + " | ".join(cells))
        return "\n".join([*lines, *(self.summary(run) for run in self.runs), *self.notes])

    def _length(self) -> int:
        return max([len(self.expected), *(len(run.rows) for run in self.runs)])

    def _repr_html_(self) -> str:
        titles = ("#", "测试期望", *(run.label for run in self.runs))
        head = "".join(f"<th>{html.escape(text)}</th>" for text in titles)
        firsts = [self.first_difference(run) for run in self.runs]
        rows = []
        for number in range(self._length()):
            want = self.expected[number] if number < len(self.expected) else None
            cells = [f"<td>{number}</td>", f"<td>{html.escape(row_text(want))}</td>"]
            for run, first in zip(self.runs, firsts, strict=True):
                text, same = self._cells(run, number)
                css = "pi-good" if same else ("pi-missing" if number == first else "pi-bad")
                mark = "✓" if same else "✗"
                cells.append(f'<td class="{css}">{mark} {html.escape(text)}</td>')
            rows.append(f"<tr>{''.join(cells)}</tr>")
        said = "".join(f"<p>{html.escape(self.summary(run))}</p>" for run in self.runs)
        notes = "".join(f'<p class="pi-note">{html.escape(note)}</p>' for note in self.notes)
        extra = (
            ".pi-sv td.pi-good { background: color-mix(in srgb, var(--jp-success-color1, #388e3c) 18%,"
            " var(--jp-layout-color0, #fff)); }"
            ".pi-sv td.pi-bad { background: color-mix(in srgb, var(--jp-error-color1, #d32f2f) 12%,"
            " var(--jp-layout-color0, #fff)); }"
        )
        table = f'<table class="pi-compare"><tr>{head}</tr>{"".join(rows)}</table>'
        return f'{style_tag(extra)}<div class="pi-sv">{table}{said}{notes}</div>'


@dataclass
class BreakRun:
    """The learner's adapter on the 4/2 fixture: correct (when the file is), and broken."""

    chunks: list[Any]
    source: str  # "simulated": confused in memory · "file": broken on disk · "stale": on disk only · "none"
    correct: Run | None
    broken: Run
    slots: dict[int, int]
    error_text: str = ""

    @property
    def comparison(self) -> Comparison:
        runs = [run for run in (self.correct, self.broken) if run is not None]
        notes = []
        if self.correct is None:
            notes.append("你的 adapter.py 现在就是改坏的：没有正确的那一次可比，左边一列是测试期望的事件。")
        wanted = expected_tool_slots(self.chunks)
        given = [
            f"Provider index {index} 的工具记成了槽位 {slot}（应为 {wanted.get(index)}）"
            for index, slot in self.slots.items()
            if wanted.get(index) != slot
        ]
        if given:
            notes.append("改坏以后，" + "；".join(given) + "。")
        if self.error_text:
            notes.append(f"adapter 抛出的原始错误（英文，课程库原样保留）：{self.error_text}")
        return Comparison(expected_rows(self.chunks), runs, notes)

    def said(self) -> str:
        """Which run this was, one line, from the same facts the rest of the view uses."""
        if self.source == "file":
            return "这一次改坏的是磁盘上的文件：右边一列是你改过的 adapter.py 真正跑出来的。"
        if self.source == "simulated":
            return (
                f"这一次是模拟：文件没动，只在内存里让{whose()}量 content 长度时得到 Provider index；"
                "左边一列是它原样跑的，右边一列是模拟改坏以后跑的。"
            )
        if self.source == "stale":
            return (
                "文件里那一行已经改坏，可这个内核跑的还是改之前的代码（改动还没载入）："
                "右边一列因此还是对的。重启内核（Kernel → Restart），再运行到这一格。"
            )
        return "模拟没有起作用：你的 adapter 在处理工具 chunk 时没有量 content 的长度，换不了那一处。"


async def _events(model: Any, chunks: Sequence[Any]) -> list[Any]:
    from ..chapter.fixtures import mainline_context

    return [event async for event in model.stream(mainline_context())]


async def break_run(path: Path, chunks: Sequence[Any]) -> BreakRun:
    """Run ``chunks`` through the learner's adapter, as it is and broken (see the module docstring)."""
    from .. import adapter as lesson_adapter

    chunks = list(chunks)

    def model(transport: Any) -> Any:
        return lesson_adapter.OpenAICompatibleModel(provider="fixture", model="fixture", transport=transport)

    on_disk = adapter_state(path).state == "broken"
    as_is = await _events(model(Watched(lesson_adapter.fixed_transport(chunks))), chunks)
    if on_disk:
        source, correct, broken_events = "file", None, as_is
        if [event_row(event) for event in as_is] == expected_rows(chunks):
            source = "stale"  # the file says broken, the code this kernel runs does not
        slots = stepper_slots(_no_experiment(), chunks, path)
    else:
        with confused_indexes() as experiment:
            broken_events = await _events(model(Watched(lesson_adapter.fixed_transport(chunks))), chunks)
        source = "simulated" if experiment.fired else "none"
        correct = Run(f"{whose()}（正确的记法）", as_is)
        slots = dict(experiment.slots)
    last = broken_events[-1]
    error_text = (getattr(last.error, "error_message", "") or "") if last.type == "error" else ""
    return BreakRun(chunks, source, correct, Run("改坏以后", broken_events), slots, error_text)


def _no_experiment() -> Any:
    from .breakit import _State

    return _State()


def focused_tests(run: BreakRun) -> bool:
    """The 5.2 tests on the same break: the file itself, or a scratch copy with the mistake switched on.

    Returns whether all three passed (a break that the tests do not notice is worth saying).
    """
    from ..chapter.steps import step
    from ..course.check import check, course_root

    if run.source in ("file", "stale"):  # the file on disk is broken: test it as it is
        return check("5.2", beyond=False)
    from ..course.checker.testrun import run_tests
    from .breakit import ScratchCopy

    scratch = ScratchCopy(course_root())
    try:
        report = run_tests((step("5.2"),), path=scratch.path)
    finally:
        scratch.remove()
    expected = step("5.2").expected
    passed = report.passed.get("5.2", 0)
    files = "你的文件" if "你的" in whose() else "参考实现的文件"  # the book's 05-5 is not the learner's
    where = f"跑在一份临时副本上（同样的模拟改动，{files}不动）"
    print(f"5.2 的 {expected} 项测试，{where}：{passed}/{expected} 通过")
    for name, _ in report.failures:
        print(f"  ✗ {name}")
    if report.red_light:
        print(f"  {report.red_light}")
    return passed == expected
