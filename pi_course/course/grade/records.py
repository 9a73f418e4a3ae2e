"""A graded copy: its output and its record (:class:`~..checker.record.CopyRecord`, flags and time added)."""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from ..checker.record import STATUSES, CopyRecord

__all__ = [
    "FLAG_WORDS",
    "STATUSES",
    "STATUS_WORDS",
    "Graded",
    "flag_said",
    "now",
    "status_said",
    "unfinished_first",
]

# What the instructor reads for each machine value (the CSV and the JSON keep the values themselves).
STATUS_WORDS = {
    "done": "完成",
    "incomplete": "未完成",
    "import-error": "无法导入",
    "timeout": "超时",
    "not-a-copy": "不是副本",
}
FLAG_WORDS = {
    "tests-modified": "改过测试",
    "matches-reference": "与参考实现相同",
    "not-sandboxed": "没有沙箱",
}


def status_said(status: object) -> str:
    """A record's status in Chinese; an unknown one (a hand-edited JSON) as it is."""
    return STATUS_WORDS.get(str(status), str(status))


def flag_said(flag: object) -> str:
    """A record's flag in Chinese; an unknown one as it is."""
    return FLAG_WORDS.get(str(flag), str(flag))


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
