"""The class report: one self-contained HTML page an instructor reads at a glance, on a laptop or a phone.

Above the table, two pictures (inline SVG, no script): how far the class got in each step, and
the tests that fail most (where the class is stuck). The table keeps name, status, score and the
first failure; on a narrow screen the per-step columns fold into each row's details. Pairs of
near-identical lesson code follow, side by side. Every string can come from a learner, so
everything is escaped and nothing is loaded (a Content-Security-Policy forbids any request).
"""

from __future__ import annotations

import html
import importlib.util
from collections import Counter
from collections.abc import Sequence

from ...chapter.steps import STEPS, Step, step_of
from ..checker.record import STATUSES, CopyRecord
from ..running.sandbox import NOT_SANDBOXED
from .gradebook import DEFAULT_POINTS, Points, csv_row
from .records import Graded, flag_said, status_said, unfinished_first
from .report import _pair, _seconds, _width, beyond_cell, beyond_total, summary
from .similarity import THRESHOLD, Pair

_STYLE = """
body { font: 14px/1.45 system-ui, "Noto Sans CJK SC", "WenQuanYi Zen Hei", sans-serif; margin: 1.5rem; }
body { color: #1f2328; }
h1 { font-size: 1.3rem; margin: 0 0 .3rem; }
h2 { font-size: 1.05rem; margin: 1.2rem 0 .4rem; }
p.summary { margin: 0 0 1rem; color: #57606a; }
p.run { margin: 0 0 .4rem; }
p.warning { border: 2px solid #cf222e; background: #ffebe9; padding: .5rem .7rem; font-weight: 600; }
.glance { display: flex; flex-wrap: wrap; gap: 1rem 2rem; }
.glance figure { margin: 0; flex: 1 1 22rem; max-width: 40rem; }
.glance figcaption { font-weight: 600; margin-bottom: .3rem; }
svg { width: 100%; height: auto; display: block; }
table { border-collapse: collapse; width: 100%; }
th, td { border-bottom: 1px solid #d0d7de; padding: .35rem .5rem; text-align: left; vertical-align: top; }
th { background: #f6f8fa; }
td.n { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.name { overflow-wrap: break-word; }
th { white-space: nowrap; }
.status { font-weight: 600; white-space: nowrap; }
.flag { display: inline-block; font-size: .8em; border: 1px solid #9a6700; color: #9a6700; border-radius: 1em;
  padding: 0 .45em; margin: .1em .2em 0 0; white-space: nowrap; }
tr.done .status { color: #1a7f37; }
tr.incomplete .status { color: #9a6700; }
tr.import-error .status, tr.timeout .status, tr.not-a-copy .status { color: #cf222e; }
details summary { cursor: pointer; overflow-wrap: anywhere; }
dl.steps { display: none; margin: .4rem 0 0; grid-template-columns: max-content 1fr; }
dl.steps { gap: 0 .8rem; }
dl.steps dt { color: #57606a; } dl.steps dd { margin: 0; font-variant-numeric: tabular-nums; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; background: #f6f8fa; }
pre { padding: .6rem; margin: .4rem 0 0; }
.side { display: flex; flex-wrap: wrap; gap: .6rem; }
.side > div { flex: 1 1 20rem; min-width: 0; }
.side h3 { font-size: .95rem; margin: .4rem 0 0; }
@media (max-width: 700px) {
  body { margin: .6rem; }
  th.wide, td.wide { display: none; }
  th { white-space: normal; }
  td.name { overflow-wrap: anywhere; }
  dl.steps { display: grid; }
}
"""
# No script, no request: the page shows the same from a file, a mail attachment or an intranet.
_POLICY = "default-src 'none'; style-src 'unsafe-inline'"
_GREEN, _AMBER, _GREY, _RED = "#2da44e", "#d4a72c", "#d0d7de", "#cf222e"


def _graded(results: Sequence[Graded]) -> list[CopyRecord]:
    return [graded.record for graded in results if graded.record.get("status") != "not-a-copy"]


def progress_svg(results: Sequence[Graded]) -> str:
    """One bar per step: copies with the step done (green), partly done (amber), not started (grey)."""
    records = _graded(results)
    count = max(1, len(records))
    rows = []
    for index, step in enumerate(STEPS):
        pairs = [(record.get("focused") or {}).get(step.number) or [0, step.expected] for record in records]
        done = sum(1 for passed, total in pairs if total and passed >= total)
        partly = sum(1 for passed, total in pairs if 0 < passed < total)
        y = 8 + index * 34
        green, amber = 300 * done / count, 300 * partly / count
        rows.append(
            f'<text x="0" y="{y + 15}" font-size="13">{html.escape(f"{step.number} {step.label}")}</text>'
            f'<rect x="0" y="{y + 20}" width="300" height="10" rx="2" fill="{_GREY}"/>'
            f'<rect x="0" y="{y + 20}" width="{green:.1f}" height="10" fill="{_GREEN}"/>'
            f'<rect x="{green:.1f}" y="{y + 20}" width="{amber:.1f}" height="10" fill="{_AMBER}"/>'
            f'<text x="310" y="{y + 30}" font-size="12">{done}/{len(records)} 完成'
            + (f"，{partly} 部分" if partly else "")
            + "</text>"
        )
    height = 8 + len(STEPS) * 34 + 4
    label = "每一步完成的副本数"
    return (
        f'<svg viewBox="0 0 420 {height}" role="img" aria-label="{label}" xmlns="http://www.w3.org/2000/svg">'
        f"<title>{label}</title>{''.join(rows)}</svg>"
    )


# Copies stopped before any test ran are stuck too, each kind where the instructor can tell them apart:
# an untouched copy's first red light is the normal start, not a failure like an import error.
NOT_STARTED = "没开始：第一次红灯（5.1 的类型还没写，没有测试运行）"
STOPPED = {"import-error": "无法导入 pi_course（没有测试运行）", "timeout": "超时（没有测试运行完）"}
_STUCK = {NOT_STARTED, *STOPPED.values()}  # whole copies, not one failing test: counted as copies


def stuck_before_tests(record: CopyRecord) -> str | None:
    """Where a copy with no test result is stuck, by its status; None when tests ran or it is done."""
    if record.get("tests") or record.get("status") == "done":
        return None
    status = str(record.get("status"))
    return STOPPED.get(status, NOT_STARTED if status == "incomplete" else f"{status}（没有测试运行）")


def reached(record: CopyRecord, step: Step) -> bool:
    """A step the copy has got to: every step before it done, or one of its own tests passing.

    A later step's tests fail on its stubs; that is where the copy has not been, not where it is stuck.
    """
    focused = record.get("focused") or {}

    def passed(earlier: Step) -> int:
        return int((focused.get(earlier.number) or [0])[0])

    return passed(step) > 0 or all(
        passed(earlier) >= earlier.expected for earlier in STEPS[: STEPS.index(step)]
    )


def _counts(record: CopyRecord, name: str) -> bool:
    """Whether a failing test is where the copy is stuck: a beyond check (run only when its steps
    are done), or a focused test of a step the copy has reached."""
    step = step_of(name)
    return step is None or reached(record, step)


def failing_tests(results: Sequence[Graded], limit: int = 6) -> list[tuple[str, int]]:
    """Where copies are stuck, most first: first the copies stopped before any test ran, by why (not
    started, cannot import, timed out: each always shown), then the ``limit`` tests that fail in
    most copies (focused and beyond), each counted only in copies that have reached its step."""
    stuck: Counter[str] = Counter()
    failing: Counter[str] = Counter()
    for record in _graded(results):
        why = stuck_before_tests(record)
        if why is not None:
            stuck[why] += 1
        for name, passed in (record.get("tests") or {}).items():
            if passed is False and _counts(record, str(name)):
                failing[str(name)] += 1

    def most_first(counts: Counter[str]) -> list[tuple[str, int]]:
        return sorted(counts.items(), key=lambda item: (-item[1], item[0]))

    return most_first(stuck) + most_first(failing)[:limit]


def reached_by(results: Sequence[Graded], name: str) -> int:
    """How many copies could fail ``name``: those that ran it and have reached its step."""
    return sum(
        1 for record in _graded(results) if name in (record.get("tests") or {}) and _counts(record, name)
    )


def wrapped(text: str, width: int = 64) -> list[str]:
    """``text`` in lines of at most ``width`` display columns (CJK counts two), broken after ``_``,
    a space or a closing bracket where it can: a test's whole name, never cut."""
    lines: list[str] = []
    rest = text
    while _width(rest) > width:
        cut, used, index = 0, 0, 0
        for index, char in enumerate(rest):
            used += _width(char)
            if used > width:
                break
            if char in "_ ）)]":
                cut = index + 1  # the last place a line may end: after a word of the name
        cut = cut or max(1, index)  # one unbroken run longer than a line: cut where it is full
        lines.append(rest[:cut])
        rest = rest[cut:]
    return [*lines, rest]


def _svg_lines(lines: list[str], y: int) -> str:
    if len(lines) == 1:
        return f'<text x="0" y="{y}" font-size="11">{html.escape(lines[0])}</text>'
    spans = "".join(
        f'<tspan x="0" dy="{0 if index == 0 else 13}">{html.escape(line)}</tspan>'
        for index, line in enumerate(lines)
    )
    return f'<text x="0" y="{y}" font-size="11">{spans}</text>'


def failing_svg(results: Sequence[Graded]) -> str:
    """A bar per test that fails most often (its whole name, wrapped), with how many of the copies
    that reached its step it fails in."""
    failing = failing_tests(results)
    count = max(1, len(_graded(results)))
    label = "失败最多的测试"
    if not failing:
        return (
            f'<svg viewBox="0 0 420 30" role="img" aria-label="{label}" xmlns="http://www.w3.org/2000/svg">'
            f'<title>{label}</title><text x="0" y="20" font-size="13">没有失败的测试</text></svg>'
        )
    rows = []
    y = 8
    for name, failed in failing:
        lines = wrapped(name)
        out_of = count if name in _STUCK else max(1, reached_by(results, name))
        copies = f"{failed}/{out_of} 份" + ("" if name in _STUCK else "失败")
        bar = y + 20 + 13 * (len(lines) - 1)
        rows.append(
            _svg_lines(lines, y + 15)
            + f'<rect x="0" y="{bar}" width="300" height="10" rx="2" fill="{_GREY}"/>'
            f'<rect x="0" y="{bar}" width="{300 * failed / out_of:.1f}" height="10" fill="{_RED}"/>'
            f'<text x="310" y="{bar + 10}" font-size="12">{copies}</text>'
        )
        y = bar + 14
    height = y + 4
    return (
        f'<svg viewBox="0 0 420 {height}" role="img" aria-label="{label}" xmlns="http://www.w3.org/2000/svg">'
        f"<title>{label}</title>{''.join(rows)}</svg>"
    )


def _html_row(graded: Graded, points: Points, beyond: int) -> str:
    e = html.escape
    record = graded.record
    status = str(record.get("status", ""))
    name, path = str(record.get("name", "")), str(record.get("path", ""))
    focused = record.get("focused") or {}
    row = csv_row(record, points, {})
    steps = "".join(f'<td class="n wide">{e(_pair(focused.get(step.number)))}</td>' for step in STEPS)
    folded = "".join(
        f"<dt>{e(step.number)}</dt><dd>{e(_pair(focused.get(step.number)))}</dd>" for step in STEPS
    ) + (
        f"<dt>本章之外</dt><dd>{e(beyond_cell(record, beyond))}</dd><dt>秒</dt><dd>{e(_seconds(record))}</dd>"
    )
    flags = "".join(
        f'<span class="flag" title="{e(str(flag))}">{e(flag_said(flag))}</span>'
        for flag in record.get("flags") or ()
    )
    failure = str(record.get("first_failure") or "完成")
    output = graded.output or "（没有输出）"
    return (
        f'<tr class="{e(status if status in STATUSES else "unknown")}" data-name="{e(name)}">'
        f'<td class="name" title="{e(path)}">{e(name)}</td>'
        f'<td class="status" title="{e(status)}">{e(status_said(status))}</td>'
        f'<td class="n">{e(str(row["score"]))}/{e(str(row["max"]))}</td>{steps}'
        f'<td class="n wide">{e(beyond_cell(record, beyond))}</td>'
        f'<td class="n wide">{e(_seconds(record))}</td>'
        f"<td>{flags}<details><summary>{e(failure)}</summary>"
        f'<dl class="steps">{folded}</dl><pre>{e(output)}</pre></details></td></tr>'
    )


def similarity_available() -> bool:
    """Whether copydetect is installed (the [lab] extra brings it): without it no pair can be found."""
    return importlib.util.find_spec("copydetect") is not None


def similarity_line(pairs: Sequence[Pair], compared: int) -> str:
    """What the similarity check did: not run (and why), no near-identical pair, or how many pairs."""
    if not similarity_available():
        return "相似度检查没有运行：没有安装 copydetect（pip install 'pi-course[lab]' 会装上它）。"
    if compared < 2:
        return f"相似度检查没有运行：这次只读到 {compared} 份副本的课程代码，至少要两份才能比较。"
    found = f"{len(pairs)} 对几乎相同，见页末" if pairs else "没有几乎相同的一对"
    return (
        f"相似度检查（copydetect，MOSS 式 winnowing，起点代码不计）比较了这次评的 {compared} 份课程代码："
        f"{found}（阈值：双方各有 {THRESHOLD:.0%} 以上的代码在对方里）。"
    )


def sandbox_line(results: Sequence[Graded]) -> str:
    """Which sandbox the checks ran in, from the records' flags (``not-sandboxed``: without bubblewrap)."""
    records = _graded(results)
    bare = sum(1 for record in records if NOT_SANDBOXED in (record.get("flags") or ()))
    if not records:
        return "沙箱：这一页没有运行过检查的副本。"
    if bare == 0:
        return (
            f"沙箱：bubblewrap（全部 {len(records)} 份）：每份副本在自己的命名空间里运行，"
            "没有网络，看不到你的文件和进程，留不下后台进程。"
        )
    if bare == len(records):
        return (
            f"沙箱：没有（{NOT_SANDBOXED}，全部 {len(records)} 份）："
            "学习者的代码以你的用户身份运行，只有时间上限。"
        )
    return (
        f"沙箱：bubblewrap 评了 {len(records) - bare} 份；"
        f"{bare} 份没有沙箱（{NOT_SANDBOXED}，见每行的标记）。"
    )


def _pairs_section(pairs: Sequence[Pair]) -> str:
    e = html.escape
    if not pairs:
        return ""
    items = []
    for pair in pairs:
        sides = "".join(
            f"<div><h3>{e(name)}</h3><pre>{e(code)}</pre></div>"
            for name, code in ((pair.left, pair.left_code), (pair.right, pair.right_code))
        )
        items.append(
            f'<details class="pair"><summary>{e(pair.left)} ↔ {e(pair.right)}：'
            f'课程代码相似度 {pair.similarity:.1%}</summary><div class="side">{sides}</div></details>'
        )
    return (
        f"<h2>几乎相同的课程代码（{len(pairs)} 对）</h2>"
        '<p class="summary">按 MOSS 式的 winnowing 指纹比较各份的课程文件（copydetect）；相同的起点代码不计。'
        "相似不等于抄袭：请打开对照着看。</p>" + "".join(items)
    )


def to_html(
    results: Sequence[Graded],
    title: str = "第 05 章：全班一览",
    *,
    points: Points = DEFAULT_POINTS,
    warning: str | None = None,
    pairs: Sequence[Pair] = (),
    compared: int | None = None,
) -> str:
    """One self-contained page: the class at a glance, a row per learner, near-identical pairs.

    ``compared``: how many copies the similarity check read (grade's run; by default every copy
    graded here). The header says which sandbox ran and what the similarity check found.
    """
    e = html.escape
    head = (
        "<th>副本</th><th>状态</th><th>得分</th>"
        + "".join(f'<th class="wide">{e(step.number)}</th>' for step in STEPS)
        + '<th class="wide" title="本章之外的检查：通过数/总数，待完成和没有运行的都算在总数里">本章之外</th>'
        '<th class="wide">秒</th><th>check 05 的结论</th>'
    )
    beyond = beyond_total(results)
    rows = "".join(_html_row(graded, points, beyond) for graded in unfinished_first(results))
    banner = f'<p class="warning">{e(warning)}</p>' if warning else ""
    compared = len(_graded(results)) if compared is None else compared
    run = f'<p class="run" id="sandbox">{e(sandbox_line(results))}</p>' + (
        f'<p class="run" id="similarity">{e(similarity_line(pairs, compared))}</p>'
    )
    glance = (
        '<section class="glance">'
        f"<figure><figcaption>每一步的进度</figcaption>{progress_svg(results)}</figure>"
        f"<figure><figcaption>卡住最多的地方</figcaption>{failing_svg(results)}"
        '<p class="summary">一项测试只在已经到了它那一步的副本里计数'
        "（之前的步骤都已完成，或这一步已有测试通过）：后面几步的桩在谁那里都会失败，那不是卡住。</p></figure>"
        "</section>"
    )
    return (
        "<!DOCTYPE html>\n"
        f'<html lang="zh-CN"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{_POLICY}">'
        f'<meta name="viewport" content="width=device-width, initial-scale=1"><title>{e(title)}</title>'
        f"<style>{_STYLE}</style></head><body>"
        f'<h1>{e(title)}</h1>{banner}<p class="summary">{e(summary(results))}。'
        "未完成的排在前面；点开最后一列，看这份副本的完整 check 输出。</p>"
        f"{run}{glance}<h2>每一份副本</h2>"
        f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"
        f"{_pairs_section(pairs)}</body></html>\n"
    )
