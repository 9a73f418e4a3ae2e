"""The gradebook: points per focused test, a roster, and a CSV a spreadsheet imports as it is.

The CSV is UTF-8 with a byte-order mark (Excel on a Chinese Windows reads the names right),
every number a plain number (no ``3/5`` read as a date), one row per copy with the student's id
and name from the roster. A text cell never starts like a formula.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...chapter.steps import STEP_NUMBERS
from ..copies.points import DEFAULT_POINTS, GradebookError, Points, _number, parse_points
from ..oserrors import reason

__all__ = ["DEFAULT_POINTS", "GradebookError", "Points", "parse_points", "read_roster", "to_csv"]

BOM = "\ufeff"


# --- the roster -----------------------------------------------------------------------------------

_KEYS = ("folder", "github_username", "github", "login", "username")
_IDS = ("student_id", "identifier", "id", "学号")
_NAMES = ("name", "student", "姓名")


@dataclass(frozen=True)
class Student:
    student_id: str
    name: str


def read_roster(path: str) -> dict[str, Student]:
    """``--roster roster.csv``: folder or GitHub user name → student id and name.

    The columns are found by name: ``folder`` / ``github_username`` / ``login`` for the key,
    ``student_id`` / ``identifier`` for the id, ``name`` for the name (GitHub Classroom's roster
    export has ``identifier``, ``github_username`` and ``name``).
    """
    try:
        text = Path(path).expanduser().read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as error:
        raise GradebookError(f"--roster {path}：无法读取：{reason(error)}。") from None
    rows = list(csv.DictReader(io.StringIO(text)))
    header = {name.strip().lower(): name for name in (rows[0].keys() if rows else ()) if name}
    key = next((header[name] for name in _KEYS if name in header), None)
    ident = next((header[name] for name in _IDS if name in header), None)
    named = next((header[name] for name in _NAMES if name in header), None)
    if key is None:
        raise GradebookError(f"--roster {path}：找不到名字列（{'、'.join(_KEYS)} 之一）")
    roster = {}
    for row in rows:
        login = (row.get(key) or "").strip()
        if login:
            student_id = (row.get(ident) or "").strip() if ident else ""
            roster[login.lower()] = Student(student_id, (row.get(named) or "").strip() if named else "")
    return roster


def student_of(name: str, roster: Mapping[str, Student]) -> Student | None:
    """The roster's entry for a copy named ``name``: exactly, or as Classroom's ``assignment-login``."""
    lowered = name.lower().split("/")[0]
    if lowered in roster:
        return roster[lowered]
    matches = [login for login in roster if lowered.endswith(f"-{login}")]
    return roster[max(matches, key=len)] if matches else None


# --- the CSV --------------------------------------------------------------------------------------

STEP_COLUMNS = tuple(f"step_{number}" for number in STEP_NUMBERS)
CSV_COLUMNS = (
    "student", "student_id", "folder", "score", "max", "percent", *STEP_COLUMNS, "status", "flags",
    "first_failure", "graded_at",
)  # fmt: skip


def _cell(value: Any) -> Any:
    """A text cell a spreadsheet shows as text: never read as a formula (``=``, ``+``, ``-``, ``@``)."""
    if isinstance(value, int | float):
        return value
    text = "" if value is None else str(value)
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def csv_row(record: Mapping[str, Any], points: Points, roster: Mapping[str, Student]) -> dict[str, Any]:
    """One copy's gradebook row."""
    name = str(record.get("name", ""))
    student = student_of(name, roster)
    steps = points.score(record)
    score = _number(sum(steps.values()))
    total = _number(points.total)
    return {
        "student": student.name if student and student.name else name,
        "student_id": student.student_id if student else "",
        "folder": name,
        "score": score,
        "max": total,
        "percent": round(100 * score / total, 1) if total else 0,
        **{column: steps[number] for column, number in zip(STEP_COLUMNS, STEP_NUMBERS, strict=True)},
        "status": record.get("status", ""),
        "flags": " ".join(record.get("flags") or ()),
        "first_failure": record.get("first_failure") or "",
        "graded_at": record.get("graded_at", ""),
    }


def to_csv(
    records: Sequence[Mapping[str, Any]],
    points: Points = DEFAULT_POINTS,
    roster: Mapping[str, Student] | None = None,
) -> str:
    """The gradebook: a byte-order mark, the header, one row per copy in the order given."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n")
    writer.writerow(CSV_COLUMNS)
    for record in records:
        row = csv_row(record, points, roster or {})
        writer.writerow([_cell(row[column]) for column in CSV_COLUMNS])
    return BOM + buffer.getvalue()
