"""The class in the terminal and as JSON. Every string can come from a learner: control characters
never reach the terminal.
"""

from __future__ import annotations

import unicodedata
from collections import Counter
from collections.abc import Sequence
from typing import Any

from ...chapter.steps import STEP_NUMBERS
from ..checker.record import STATUSES, CopyRecord
from .records import Graded, flag_said, status_said, unfinished_first


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


def _seconds(record: CopyRecord) -> str:
    value = record.get("seconds")
    return f"{value:.1f}" if isinstance(value, int | float) else "-"


def beyond_total(results: Sequence[Graded]) -> int:
    """How many checks beyond the chapter the class's course has: the most any copy ran (0: none ran)."""
    return max((int(graded.record.get("beyond_total") or 0) for graded in results), default=0)


def beyond_cell(record: CopyRecord, total: int) -> str:
    """Beyond checks passed out of the course's ``total``, one way whether they ran, wait or never ran."""
    total = max(total, int(record.get("beyond_total") or 0))
    return f"{record.get('beyond_passed', 0)}/{total}" if total else "-"


def _row(record: CopyRecord, beyond: int) -> list[str]:
    focused = record.get("focused") or {}
    return [
        _printable(record.get("name", "")),
        _printable(status_said(record.get("status", ""))),
        *(_pair(focused.get(number)) for number in STEP_NUMBERS),
        f"{record.get('focused_passed', 0)}/{record.get('focused_total', 0)}",
        beyond_cell(record, beyond),
        _seconds(record),
        _printable(" ".join(flag_said(flag) for flag in record.get("flags") or ()) or "-"),
        _printable(record.get("first_failure") or ""),
    ]


HEADER = ["副本", "状态", *STEP_NUMBERS, "聚焦测试", "本章之外", "秒", "标记", "最先要改的"]


def summary(results: Sequence[Graded]) -> str:
    """``共 N 份：完成 a，未完成 b，…``: the count per status, in the order of :data:`STATUSES`."""
    counts = Counter(str(graded.record.get("status")) for graded in results)
    per_status = "，".join(f"{status_said(status)} {counts[status]}" for status in STATUSES if counts[status])
    return f"共 {len(results)} 份：{per_status}" if results else "共 0 份"


def table(results: Sequence[Graded], width: int = 160, warning: str | None = None) -> str:
    """The terminal table, unfinished copies first, and a count per status under it.

    ``warning`` (the checks ran without a sandbox) comes first and last, where it cannot be missed.
    """
    beyond = beyond_total(results)
    rows = [HEADER, *(_row(graded.record, beyond) for graded in unfinished_first(results))]
    widths = [max(_width(row[column]) for row in rows) for column in range(len(HEADER) - 1)]
    widths[0] = min(widths[0], 24)
    rest = max(20, width - sum(widths) - 2 * len(widths))
    lines = []
    for row in rows:
        cells = [_fit(cell, size) for cell, size in zip(row, widths, strict=False)]
        lines.append(("  ".join([*cells, _fit(row[-1], rest)])).rstrip())
    lines.append(summary(results))
    if warning is not None:
        lines = [_printable(warning), *lines, _printable(warning)]
    return "\n".join(lines)
