"""The record of one copy's result, defined once: ``check 05 --json`` prints it, ``grade`` collects it.

``grade``'s JSON, CSV and HTML page are made of these records; docs/instructors.md's field table is
tested against :data:`FIELDS`. A record is plain JSON (a ``TypedDict``), so it crosses the
process boundary between ``grade`` and the ``check`` it runs as one line of text.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal, NotRequired, TypedDict, cast, get_args

from ...chapter.rules import RULES
from ...chapter.steps import CHAPTER_TOTAL, STEPS

Status = Literal["done", "incomplete", "import-error", "timeout", "not-a-copy"]
STATUSES: tuple[Status, ...] = get_args(Status)


class CopyRecord(TypedDict):
    """One copy's result: what ran, what passed, what to fix first (docs/instructors.md: "The record")."""

    name: str
    path: str
    status: Status
    focused: dict[str, list[int]]  # {"5.1": [passed, total], …}
    focused_passed: int
    focused_total: int
    beyond_passed: int
    beyond_total: int
    first_failure: str | None
    seconds: float
    rules_kept: int  # the chapter's rules (chapter/rules.py) this copy keeps
    rules_total: int
    compared: dict[str, int]  # {"5.1": n, …}: inputs compared with the reference, per step
    flags: NotRequired[list[str]]  # with --path and in grade: tests-modified, matches-reference, …
    graded_at: NotRequired[str]  # in grade: when, UTC, ISO 8601
    tests: dict[str, bool]  # each focused test and beyond check that ran: passed


FIELDS: tuple[str, ...] = tuple(CopyRecord.__annotations__)


def in_order(record: CopyRecord) -> CopyRecord:
    """``record`` with its keys in :data:`FIELDS` order (the order the files show them in)."""
    return cast(CopyRecord, {field: record[field] for field in FIELDS if field in record})  # type: ignore[literal-required]


def nothing_ran(
    name: str, path: str | Path, status: Status, why: str | None, seconds: float = 0.0
) -> CopyRecord:
    """The record of a copy whose tests never ran (not a copy, stopped, no record): nothing passed."""
    return CopyRecord(
        name=name,
        path=str(path),
        status=status,
        focused={step.number: [0, step.expected] for step in STEPS},
        focused_passed=0,
        focused_total=CHAPTER_TOTAL,
        beyond_passed=0,
        beyond_total=0,
        first_failure=why,
        seconds=round(seconds, 2),
        rules_kept=0,
        rules_total=len(RULES),
        compared={},
        tests={},
    )


def as_record(value: object) -> CopyRecord | None:
    """Parsed JSON as a record: an object with a known ``status``; what it lacks, as nothing ran."""
    if not isinstance(value, dict) or value.get("status") not in STATUSES:
        return None
    base = nothing_ran(str(value.get("name", "")), str(value.get("path", "")), value["status"], None)
    given = {
        key: value[key]
        for key in FIELDS
        if key in value and (value[key] is not None or key == "first_failure")
    }
    return in_order(cast(CopyRecord, {**base, **given}))


def parse_record(stdout: str) -> CopyRecord | None:
    """The record ``check --json`` printed: its last line."""
    lines = stdout.strip().splitlines()
    try:
        return as_record(json.loads(lines[-1])) if lines else None
    except ValueError:
        return None


def record_line(record: CopyRecord) -> str:
    """The record as ``check --json`` prints it: one line of JSON, its fields in order."""
    return json.dumps(in_order(record), ensure_ascii=False)
