"""A graded copy: its record (:class:`~..record.CopyRecord`, with grading's flags and time) and its output."""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from ..record import STATUSES, CopyRecord

__all__ = ["STATUSES", "Graded", "now", "unfinished_first"]


@dataclass(frozen=True)
class Graded:
    """The record of one copy (with its flags and ``graded_at``) and the full output of its check."""

    record: CopyRecord
    output: str


def now() -> str:
    """When a copy was graded: UTC, to the second, ISO 8601 (a spreadsheet reads it as a date)."""
    return datetime.datetime.now(datetime.UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


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
