"""The allowed-variants matrix, beside the rules matrix: a finished copy making the other choice
the chapter allows on each open point (``pi_course/chapter/contract.py``) is ``完成``.

The rules matrix breaks each rule and needs ``check`` to see it; this one takes each choice the
chapter leaves open and needs ``check`` not to count it as a mistake (no false red).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pi_course.chapter.contract import POINTS, Edit, Point
from pi_course.chapter.steps import STEPS
from pi_course.course.checker import testrun
from pi_course.course.checker.judgement import judge
from pi_course.course.checker.twin import edited
from pi_course.course.copies.practice import create_practice
from pi_course.course.copies.starters import reference_sources
from pi_course.course.running import inkernel

pytestmark = [pytest.mark.slow, pytest.mark.workflow]

VARIANTS = [point for point in POINTS if point.variant]


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A practice copy holding the reference's lesson code."""
    copy = create_practice(tmp_path_factory.mktemp("finished") / "lab")
    written(copy, ())
    return copy


def written(copy: Path, edits: tuple[Edit, ...]) -> None:
    for name, text in edited(reference_sources(), edits).items():
        (copy / "pi_course" / name).write_text(text, encoding="utf-8")


def checked(copy: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """``check 05``'s verdict on ``copy``, run in this process (the browser edition's runner)."""
    monkeypatch.setattr(inkernel, "in_a_tab", lambda: True)
    return judge(testrun.run_tests(STEPS, copy, beyond=True)).line


def test_every_open_point_that_a_program_can_show_has_a_variant() -> None:
    assert len(VARIANTS) >= 10
    assert all(point.status == "open" for point in VARIANTS)


@pytest.mark.parametrize("point", VARIANTS, ids=lambda point: point.name)
def test_a_copy_making_an_allowed_choice_is_done(
    finished: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, point: Point
) -> None:
    copy = tmp_path / "lab"
    shutil.copytree(finished, copy)
    written(copy, point.variant)
    assert checked(copy, monkeypatch) == "第 05 章：完成", point.cited


def test_a_copy_making_every_allowed_choice_at_once_is_done(
    finished: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy = tmp_path / "lab"
    shutil.copytree(finished, copy)
    written(copy, tuple(edit for point in VARIANTS for edit in point.variant))
    assert checked(copy, monkeypatch) == "第 05 章：完成"
