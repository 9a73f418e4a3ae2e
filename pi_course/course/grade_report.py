"""The class at a glance, four ways: a terminal table, the JSON list, a CSV and one HTML page.

Every string in a record can come from a learner (a folder's name, the text of a failure), so
each output escapes it for where it goes: control characters never reach the terminal, a CSV
cell never starts like a spreadsheet formula, and the HTML page escapes everything and loads
nothing (a Content-Security-Policy forbids any outside request; there is no script).
"""

from __future__ import annotations

import csv
import html
import io
import json
import shutil
import sys
import unicodedata
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..chapter.steps import STEPS
from .grade import (
    DEFAULT_TIMEOUT,
    STATUSES,
    Graded,
    GradeError,
    discover,
    grade,
    unfinished_first,
)

STEP_NUMBERS = tuple(step.number for step in STEPS)


def _printable(text: object) -> str:
    """One line without control characters (a learner's name cannot move the cursor or recolour)."""
    return "".join(
        " " if char in "\t\n\r" else char if unicodedata.category(char)[0] != "C" else "\ufffd"
        for char in str(text)
    )


def _width(text: str) -> int:
    return sum(2 if unicodedata.east_asian_width(char) in "WF" else 1 for char in text)


def _fit(text: str, width: int) -> str:
    """``text`` in ``width`` display columns (CJK counts two): cut with an ellipsis, or padded."""
    if _width(text) > width:
        kept = ""
        for char in text:
            if _width(kept + char) > width - 1:
                break
            kept += char
        text = kept + "…"
    return text + " " * max(0, width - _width(text))


def _pair(value: Any) -> str:
    if isinstance(value, list | tuple) and len(value) == 2:
        return f"{value[0]}/{value[1]}"
    return "-"


def _seconds(record: dict[str, Any]) -> str:
    value = record.get("seconds")
    return f"{value:.1f}" if isinstance(value, int | float) else "-"


def _row(record: dict[str, Any]) -> list[str]:
    focused = record.get("focused") or {}
    return [
        _printable(record.get("name", "")),
        str(record.get("status", "")),
        *(_pair(focused.get(number)) for number in STEP_NUMBERS),
        f"{record.get('focused_passed', 0)}/{record.get('focused_total', 0)}",
        f"{record.get('beyond_passed', 0)}/{record.get('beyond_total', 0)}",
        _seconds(record),
        _printable(record.get("first_failure") or ""),
    ]


HEADER = ["name", "status", *STEP_NUMBERS, "focused", "beyond", "s", "first_failure"]


def table(results: Sequence[Graded], width: int = 160) -> str:
    """The terminal table, unfinished copies first, and a count per status under it."""
    rows = [HEADER, *(_row(graded.record) for graded in unfinished_first(results))]
    widths = [max(_width(row[column]) for row in rows) for column in range(len(HEADER) - 1)]
    widths[0] = min(widths[0], 24)
    rest = max(20, width - sum(widths) - 2 * len(widths))
    lines = []
    for row in rows:
        cells = [_fit(cell, size) for cell, size in zip(row, widths, strict=False)]
        lines.append(("  ".join([*cells, _fit(row[-1], rest)])).rstrip())
    counts = Counter(str(graded.record.get("status")) for graded in results)
    summary = "，".join(f"{status} {counts[status]}" for status in STATUSES if counts[status])
    lines.append(f"共 {len(results)} 份：{summary}" if results else "共 0 份")
    return "\n".join(lines)


def to_json(results: Sequence[Graded]) -> str:
    """The JSON list of records, in the order the copies were given."""
    return json.dumps([graded.record for graded in results], ensure_ascii=False, indent=2) + "\n"


CSV_COLUMNS = (
    "name", "path", "status", *STEP_NUMBERS, "focused_passed", "focused_total", "beyond_passed",
    "beyond_total", "first_failure", "seconds",
)  # fmt: skip


def _cell(value: Any) -> str:
    """A CSV cell a spreadsheet shows as text: never read as a formula (``=``, ``+``, ``-``, ``@``)."""
    text = "" if value is None else str(value)
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def to_csv(results: Sequence[Graded]) -> str:
    """One row per copy; each step as ``passed/total`` (``1/1``), in the order given."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for graded in results:
        record = graded.record
        focused = record.get("focused") or {}
        values = {**record, **{number: _pair(focused.get(number)) for number in STEP_NUMBERS}}
        writer.writerow([_cell(values.get(column)) for column in CSV_COLUMNS])
    return buffer.getvalue()


_STYLE = """
body { font: 14px/1.45 system-ui, "Noto Sans CJK SC", "WenQuanYi Zen Hei", sans-serif; margin: 1.5rem; }
body { color: #1f2328; }
h1 { font-size: 1.3rem; margin: 0 0 .3rem; }
p.summary { margin: 0 0 1rem; color: #57606a; }
table { border-collapse: collapse; width: 100%; }
th, td { border-bottom: 1px solid #d0d7de; padding: .35rem .5rem; text-align: left; vertical-align: top; }
th { background: #f6f8fa; }
td.n { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.status { font-weight: 600; white-space: nowrap; }
tr.done .status { color: #1a7f37; }
tr.incomplete .status { color: #9a6700; }
tr.import-error .status, tr.timeout .status, tr.not-a-copy .status { color: #cf222e; }
details summary { cursor: pointer; }
pre { white-space: pre-wrap; word-break: break-word; background: #f6f8fa; padding: .6rem; margin: .4rem 0 0; }
"""
# No script, no request: the page shows the same from a file, a mail attachment or an intranet.
_POLICY = "default-src 'none'; style-src 'unsafe-inline'"


def _html_row(graded: Graded) -> str:
    e = html.escape
    record = graded.record
    status = str(record.get("status", ""))
    name, path = str(record.get("name", "")), str(record.get("path", ""))
    cells = _row(record)
    numbers = "".join(f'<td class="n">{e(cell)}</td>' for cell in cells[2:-1])
    failure = str(record.get("first_failure") or "完成")
    output = graded.output or "（没有输出）"
    return (
        f'<tr class="{e(status if status in STATUSES else "unknown")}" data-name="{e(name)}">'
        f'<td title="{e(path)}">{e(name)}</td><td class="status">{e(status)}</td>{numbers}'
        f"<td><details><summary>{e(failure)}</summary><pre>{e(output)}</pre></details></td></tr>"
    )


def to_html(results: Sequence[Graded], title: str = "第 05 章：全班一览") -> str:
    """One self-contained page: a row per learner, each row's check output behind ``<details>``."""
    e = html.escape
    counts = Counter(str(graded.record.get("status")) for graded in results)
    summary = "，".join(f"{status} {counts[status]}" for status in STATUSES if counts[status])
    head = "".join(f"<th>{e(name)}</th>" for name in HEADER[:-1]) + "<th>check 05</th>"
    rows = "".join(_html_row(graded) for graded in unfinished_first(results))
    return (
        "<!DOCTYPE html>\n"
        f'<html lang="zh-CN"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{_POLICY}">'
        f'<meta name="viewport" content="width=device-width, initial-scale=1"><title>{e(title)}</title>'
        f"<style>{_STYLE}</style></head><body>"
        f'<h1>{e(title)}</h1><p class="summary">共 {len(results)} 份：{e(summary)}。'
        "未完成的排在前面；点开最后一列，看这份副本的完整 check 输出。</p>"
        f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"
        "</body></html>\n"
    )


def run(
    paths: Sequence[str],
    *,
    json_file: str | None = None,
    csv_file: str | None = None,
    html_file: str | None = None,
    jobs: int | None = None,
    timeout: float = DEFAULT_TIMEOUT,
) -> int:
    """``grade 05``: check every copy, print the table, write the files asked for.

    0 when every copy was graded (whatever the learners' results); 2 when a PATH does not exist
    or an output file cannot be written (the files are written only after the grading).
    """
    try:
        sources = discover(paths)
    except GradeError as error:
        print(error, file=sys.stderr)
        return 2
    total = len(sources)
    done: list[Graded] = []

    def progress(graded: Graded) -> None:
        done.append(graded)
        record = graded.record
        line = (
            f"[{len(done)}/{total}] {_printable(record['name'])}: {record['status']} ({_seconds(record)} s)"
        )
        print(line, file=sys.stderr, flush=True)

    results = grade(sources, jobs=jobs, timeout=timeout, progress=progress)
    print(table(results, shutil.get_terminal_size((160, 24)).columns))
    outputs = ((json_file, to_json), (csv_file, to_csv), (html_file, to_html))
    for name, render in outputs:
        if name is None:
            continue
        try:
            Path(name).expanduser().write_text(render(results), encoding="utf-8")
        except OSError as error:
            print(f"grade 05：无法写入 {name}：{error.strerror or error}", file=sys.stderr)
            return 2
        print(f"已写入 {name}", file=sys.stderr)
    return 0
