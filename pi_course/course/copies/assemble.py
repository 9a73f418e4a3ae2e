"""The tree a copy is graded in: the installed course's tests, plugin and package, the copy's lesson files.

A copy could otherwise grade itself (a conftest hook that passes every test, a deleted test file).
So the tree a check runs on is a fresh practice copy of the *installed* course with only the lesson
files (the LAB-marked modules a learner edits) taken from the learner's copy. What the copy did to
the rest is recorded as flags: ``tests-modified`` (its tests or conftest differ from the shipped
ones) and ``matches-reference`` (its lesson code is the reference's, up to comments, docstrings and
formatting).
"""

from __future__ import annotations

import ast
import contextlib
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ...chapter.steps import LESSON_FILES
from .practice import write_course_tree
from .starters import reference_sources

TESTS_MODIFIED = "tests-modified"
MATCHES_REFERENCE = "matches-reference"
# Files of a copy's root that pytest would read when the copy's tests run.
_PYTEST_FILES = ("conftest.py", "pytest.ini", "tox.ini", "setup.cfg")


def lesson_files() -> tuple[str, ...]:
    """The package files a learner edits: the LAB-marked modules (``__init__.py`` exports 5.1's type)."""
    return tuple(sorted(reference_sources()))


@dataclass(frozen=True)
class Instructor:
    """A fresh practice copy of the installed course, built once per run: what every tree starts from."""

    root: Path
    reference: dict[str, str]  # the reference lesson modules, by file name


@contextlib.contextmanager
def instructor_copy() -> Iterator[Instructor]:
    """A pristine practice copy of the installed course in a temporary folder, removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="pi-course-instructor-") as scratch:
        root = Path(scratch) / "course"
        root.mkdir()
        write_course_tree(root)
        yield Instructor(root, reference_sources())


@dataclass(frozen=True)
class Assembled:
    """The tree to check, what the copy changed outside its lesson files, and the flags it earns."""

    tree: Path
    flags: tuple[str, ...]
    notes: tuple[str, ...]
    missing: tuple[str, ...] = ()  # lesson files the copy does not have, as pi_course/NAME


def assemble(copy: Path, instructor: Instructor, destination: Path) -> Assembled:
    """Build ``destination``: the instructor's package and tests, with the copy's lesson files."""
    shutil.copytree(instructor.root / "pi_course", destination / "pi_course")
    shutil.copytree(instructor.root / "tests", destination / "tests")
    notes: list[str] = []
    missing: list[str] = []
    for name in lesson_files():
        mine = copy / "pi_course" / name
        target = destination / "pi_course" / name
        if mine.is_file() and not mine.is_symlink():
            shutil.copyfile(mine, target)
        else:
            target.unlink()
            missing.append(f"pi_course/{name}")
            notes.append(f"副本里没有 pi_course/{name}")
    flags: list[str] = []
    changed = modified_tests(copy, instructor.root)
    if changed:
        flags.append(TESTS_MODIFIED)
        notes.append(
            f"{TESTS_MODIFIED}：副本改动了测试文件（{'、'.join(changed)}）；评分用的是课程自带的测试"
        )
    if matches_reference(copy, instructor.reference):
        flags.append(MATCHES_REFERENCE)
        notes.append(
            f"{MATCHES_REFERENCE}：{'、'.join(LESSON_FILES)} 与参考实现相同（不计注释、文档字符串和格式）"
        )
    return Assembled(destination, tuple(flags), tuple(notes), tuple(missing))


def modified_tests(copy: Path, shipped: Path) -> list[str]:
    """The copy's test files (and pytest configuration) that differ from the shipped ones, by name."""
    changed = []
    for original in sorted((shipped / "tests").iterdir()):
        mine = copy / "tests" / original.name
        if not mine.is_file() or mine.read_bytes() != original.read_bytes():
            changed.append(f"tests/{original.name}")
    extra = [
        path for path in sorted((copy / "tests").glob("*.py")) if not (shipped / "tests" / path.name).exists()
    ]
    changed += [f"tests/{path.name}" for path in extra]
    changed += [name for name in _PYTEST_FILES if (copy / name).exists() and not (shipped / name).exists()]
    return changed


def normalized(source: str) -> str | None:
    """The module's syntax tree without docstrings, as text; ``None`` when it does not parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if not isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        assert isinstance(body, list)
        first = body[0] if body else None
        if (
            isinstance(first, ast.Expr)
            and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)
        ):
            body.pop(0)
            if not body:
                body.append(ast.Pass())
    return ast.dump(tree)


def matches_reference(copy: Path, reference: dict[str, str]) -> bool:
    """Every teaching module of the copy is the reference's, up to comments, docstrings and layout."""
    for name in LESSON_FILES:
        mine = copy / "pi_course" / name
        if name not in reference or not mine.is_file():
            return False
        try:
            text = mine.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return False
        ours = normalized(text)
        if ours is None or ours != normalized(reference[name]):
            return False
    return True
