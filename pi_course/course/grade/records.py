"""One record per copy: the fields of ``check 05 --json``, the flags grading adds, and its time."""

from __future__ import annotations

import datetime
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...chapter.rules import RULES
from ...chapter.steps import CHAPTER_TOTAL, STEPS

STATUSES = ("done", "incomplete", "import-error", "timeout", "not-a-copy")
CONTRACT_FIELDS = (
    "name", "path", "status", "focused", "focused_passed", "focused_total", "beyond_passed", "beyond_total",
    "first_failure", "seconds", "rules_kept", "rules_total", "compared",
)  # fmt: skip
FIELDS = (*CONTRACT_FIELDS, "flags", "graded_at", "tests")  # tests: name → passed, each that ran


@dataclass(frozen=True)
class Graded:
    """The record of one copy (the contract's fields, its flags) and the full output of its check."""

    record: dict[str, Any]
    output: str


def now() -> str:
    """When a copy was graded: UTC, to the second, ISO 8601 (a spreadsheet reads it as a date)."""
    return datetime.datetime.now(datetime.UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def empty_record(
    name: str, path: Path, status: str, first_failure: str | None, seconds: float, flags: Iterable[str] = ()
) -> dict[str, Any]:
    """A record for a copy whose check gave none (stopped, not a copy): nothing passed."""
    return {
        "name": name,
        "path": str(path),
        "status": status,
        "focused": {step.number: [0, step.expected] for step in STEPS},
        "focused_passed": 0,
        "focused_total": CHAPTER_TOTAL,
        "beyond_passed": 0,
        "beyond_total": 0,
        "first_failure": first_failure,
        "seconds": round(seconds, 2),
        "rules_kept": 0,
        "rules_total": len(RULES),
        "compared": {},
        "flags": list(flags),
        "graded_at": now(),
        "tests": {},
    }


def parse_record(stdout: str) -> dict[str, Any] | None:
    """The record ``check --json`` printed: its last line, a JSON object with a known status."""
    lines = stdout.strip().splitlines()
    try:
        value = json.loads(lines[-1]) if lines else None
    except ValueError:
        return None
    return value if isinstance(value, dict) and value.get("status") in STATUSES else None


def unfinished_first(results: Iterable[Graded]) -> Iterator[Graded]:
    """Unfinished copies first (the worst first), then the finished ones; by name within."""
    order = {
        status: index for index, status in enumerate(("import-error", "timeout", "not-a-copy", "incomplete"))
    }

    def key(graded: Graded) -> tuple[int, int, str]:
        record = graded.record
        rank = order.get(str(record["status"]), len(order))
        return rank, int(record.get("focused_passed") or 0), str(record["name"])

    return iter(sorted(results, key=key))
