"""The target diff: from the starter (or the learner's files) to the target, over the lesson files."""

from __future__ import annotations

import difflib
from pathlib import Path

from ...chapter.steps import LESSON_FILES
from .locate import PACKAGE
from .starters import make_starter, reference_sources, without_markers

# Files the target diff covers, in the chapter's order; __init__.py carries 5.1's export.
DIFF_FILES = (*LESSON_FILES, "__init__.py")


def target_diff(*, mine: bool = False, package: Path = PACKAGE) -> str:
    """The target diff: unified diff from starter to target over the lesson files.

    With ``mine``, from ``package``'s current files (a learner's work; by default the running
    package) to the target instead. The same in the reference, a wheel and a practice copy
    (which reads its shipped target).
    """
    reference = reference_sources()
    chunks: list[str] = []
    for name in DIFF_FILES:
        if name not in reference:
            continue
        target = without_markers(reference[name])
        if mine:
            current = package / name
            before = current.read_text(encoding="utf-8") if current.is_file() else ""
            before = without_markers(before)
            label = f"mine/pi_course/{name}"
        else:
            before, label = make_starter(reference[name]), f"starter/pi_course/{name}"
        chunks += difflib.unified_diff(
            before.splitlines(keepends=True),
            target.splitlines(keepends=True),
            fromfile=label,
            tofile=f"target/pi_course/{name}",
        )
    return "".join(chunks)
