"""The chapter's contract (pi_course/chapter/contract.py): every open point's other choice applies
to the reference and is a different program; every point is decided by a sentence."""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path

import pytest
from generated import between_markers

from pi_course.chapter.contract import (
    FIXED,
    OPEN,
    POINTS,
    TABLE_END,
    TABLE_START,
    markdown_table,
    open_points,
    point,
)
from pi_course.chapter.rules import CHAPTER_SOURCE
from pi_course.chapter.steps import STEP_NUMBERS
from pi_course.course.checker.twin import edited, reference_twin
from pi_course.course.copies.starters import reference_sources, starter_sources


def test_every_point_has_a_step_a_status_a_sentence_and_says_how_it_is_compared() -> None:
    names = [p.name for p in POINTS]
    assert len(names) == len(set(names))
    for each in POINTS:
        assert each.step in STEP_NUMBERS, each.name
        assert each.status in (FIXED, OPEN), each.name
        assert each.quote.strip() and each.how.strip(), each.name
        assert not (each.status == FIXED and (each.edits or each.examples)), each.name
    assert point(names[0]) is POINTS[0]
    with pytest.raises(KeyError):
        point("no such point")


@pytest.mark.parametrize("each", [p for p in POINTS if p.status == OPEN], ids=lambda p: p.name)
def test_an_open_points_variant_changes_the_reference_exactly_where_it_says(each: object) -> None:
    sources = reference_sources()
    variant = each.variant  # type: ignore[attr-defined]
    if not variant:
        pytest.skip("accepted by comparing less; no program to write")
    changed = edited(sources, variant)
    assert changed != sources
    for edit in variant:
        compile(changed[edit.file], edit.file, "exec")


def test_every_combination_of_a_files_allowed_choices_loads_as_a_twin() -> None:
    for file in ("adapter.py", "sse.py", "transport.py"):
        points = open_points(file)
        assert all(any(edit.file == file for edit in p.edits) for p in points)
        built = 0
        for size in range(1, len(points) + 1):
            for combination in itertools.combinations(points, size):
                twin = reference_twin(tuple(edit for p in combination for edit in p.edits))
                assert twin.adapter is not reference_twin().adapter
                built += 1
        assert built == 2 ** len(points) - 1


def test_an_edit_whose_text_is_not_there_once_is_refused() -> None:
    [edit] = point("delta.content 是空字符串").edits
    with pytest.raises(ValueError, match="occurs 0 times"):
        edited(reference_sources(), (edit, edit))  # applied once, its text is gone
    with pytest.raises(ValueError, match=r"occurs \d\d+ times"):
        edited(reference_sources(), (edit.__class__(edit.file, "return", "return"),))


def test_a_mutant_listed_as_allowed_names_an_open_point_of_the_contract() -> None:
    listed = json.loads((Path(__file__).parents[2] / "tools" / "mutants_equivalent.json").read_text("utf-8"))
    allowed = [item for item in listed if item["kind"] == "allowed by the chapter"]
    assert allowed
    for item in allowed:
        named = re.match(r"「(.+?)」", item["reason"])
        assert named, item
        assert point(named[1]).status == OPEN, item


CHAPTER = Path("/work/shared/chapter-05.zh.txt")  # the specification, where it is at hand
TEMPLATE = Path(__file__).parents[2] / "pi_course" / "course" / "copies" / "templates" / "LEARNING.md"


def test_every_point_quotes_what_a_learner_has() -> None:
    """A red quotes the chapter, or a starter file the learner holds (never API.md, never the reference's
    code a learner does not see): the quoted words are there."""
    starters = starter_sources()
    for each in POINTS:
        assert "API.md" not in each.source + each.quote + each.how, each.name
        if each.source == CHAPTER_SOURCE:
            if CHAPTER.is_file():  # code quoted across lines: compared without whitespace; "……"/"[...]" cut
                text = re.sub(r"\s+", "", CHAPTER.read_text(encoding="utf-8"))
                parts = re.split(r"……|\[\.\.\.\]", re.sub(r"\s+", "", each.quote))
                assert [part for part in parts if part.strip("。") not in text] == [], each.name
            continue
        named = re.search(r"pi_course/(\w+\.py)", each.source)
        files = [named[1]] if named else sorted(starters)  # "starter": somewhere in the starter files
        quote = " ".join(each.quote.split())  # a docstring's sentence may run over two lines
        assert any(quote in " ".join(starters[file].split()) for file in files), each.name


def with_table(text: str) -> str:
    """``text`` (LEARNING.md) with the block between the open points' markers generated afresh."""
    return between_markers(text, TABLE_START, TABLE_END, markdown_table())


def test_learning_md_lists_the_open_points_generated_from_the_contract() -> None:
    text = TEMPLATE.read_text(encoding="utf-8")
    start = text.index(TABLE_START) + len(TABLE_START)
    block = text[start : text.index(TABLE_END, start)]
    assert block == markdown_table(), "regenerate it: text = with_table(text), this file's"
    assert len(block.splitlines()) == len(open_points()) + 2
    assert with_table(text) == text
