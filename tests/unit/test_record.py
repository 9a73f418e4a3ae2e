"""The record of one copy is defined once: docs/instructors.md's field table documents exactly its fields,
and a record read back from ``check --json``'s line or a class's JSON file keeps every one of them.
"""

from __future__ import annotations

import re
from pathlib import Path

from pi_course.course.checker.record import (
    FIELDS,
    CopyRecord,
    as_record,
    nothing_ran,
    parse_record,
    record_line,
)

GUIDE = Path(__file__).parents[2] / "docs" / "instructors.md"  # the instructors' guide holds the record table
TABLE_HEADING = "## The record: `check 05 --json`"


def documented_fields() -> list[str]:
    """The field names of the record table in docs/instructors.md, in its order (a row may name two: `a`, `b`)."""
    text = GUIDE.read_text(encoding="utf-8")
    section = text[text.index(TABLE_HEADING) :]
    rows = re.findall(r"^\| (`[^|]+) \|", section.split("\n## ", 1)[0], re.MULTILINE)
    return [name for row in rows for name in re.findall(r"`([a-z_]+)`", row)]


def test_the_instructors_guide_documents_exactly_the_record_fields() -> None:
    documented = documented_fields()
    assert len(documented) == len(set(documented)), documented
    assert set(documented) == set(FIELDS)


def full_record() -> CopyRecord:
    record = nothing_ran("ada", "/class/ada", "incomplete", "先完成实践 5.3")
    record.update({"rules_kept": 30, "compared": {"5.1": 153}, "tests": {"test_outbound": True}})
    record.update({"flags": ["tests-modified"], "graded_at": "2026-12-04T10:00:00Z"})
    return record


def test_a_record_read_back_keeps_every_field_in_order() -> None:
    record = full_record()
    read = parse_record("some text a learner's code printed\n" + record_line(record) + "\n")
    assert read == record
    assert read is not None and list(read) == list(FIELDS)


def test_a_record_missing_fields_is_completed_as_nothing_ran_and_one_without_a_status_is_none() -> None:
    read = as_record({"name": "x", "path": "/x", "status": "done", "compared": None, "extra": 1})
    assert read is not None and read["compared"] == {} and read["tests"] == {} and "extra" not in read
    assert read["rules_total"] == nothing_ran("x", "/x", "done", None)["rules_total"] > 0
    assert as_record({"status": "finished"}) is None and as_record([]) is None
    assert parse_record("not json") is None and parse_record("") is None
