"""Facts of the chapter said once: the notebooks in ``chapter/notebooks.py``, the step files in
``chapter/steps.py``; what restates them elsewhere (the notebooks folder, the LAB markers, a lesson
module's "Practice 5.x" line) is held to them here.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from pi_course.chapter.notebooks import NOTEBOOKS
from pi_course.chapter.steps import STEPS
from pi_course.course.copies.starters import lab_regions

ROOT = Path(__file__).parents[2]


def test_every_notebook_in_the_folder_is_listed_once_in_reading_order() -> None:
    on_disk = sorted(path.stem for path in (ROOT / "notebooks").glob("*.ipynb"))
    assert sorted(NOTEBOOKS) == on_disk  # a notebook missing from the list fails here
    assert list(NOTEBOOKS) == sorted(set(NOTEBOOKS))  # once each, in reading order (05-0, 05-1, …)


def test_each_practice_notebook_is_its_steps_own() -> None:
    for step in STEPS:
        assert step.notebook in NOTEBOOKS and step.notebook.startswith(f"05-{step.number[-1]}-")


def lesson_files() -> set[str]:
    return {file for step in STEPS for file in step.files}


def test_a_lesson_files_marked_regions_are_the_steps_that_name_it() -> None:
    for file in sorted(lesson_files()):
        source = (ROOT / file).read_text(encoding="utf-8")
        marked = {step for step, _, _ in lab_regions(source)}
        assert marked == {step.number for step in STEPS if file in step.files}, file


def test_a_lesson_modules_practice_line_names_the_steps_that_name_it() -> None:
    for file in sorted(lesson_files()):
        docstring = ast.get_docstring(ast.parse((ROOT / file).read_text(encoding="utf-8"))) or ""
        first = docstring.splitlines()[0] if docstring else ""
        if not first.startswith("Practice"):
            continue  # protocol.py: the canonical protocol, which 5.1 extends
        named = set(re.findall(r"\b5\.\d\b", first.partition("—")[0]))
        assert named == {step.number for step in STEPS if file in step.files}, f"{file}: {first}"
