"""Which Python has the course: the one that made a practice copy (recorded in it), or a clone's ``.venv``.

Advice to "use the Python that has pi-course" names it by its real path, never a placeholder. This
module imports nothing of the course, so ``pi_course/__init__.py`` can use it in a Python that has
none of the course's packages.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

# In a practice copy's root: the interpreter that ran ``practice`` (one line, its absolute path).
MADE_BY = ".pi_course_python"
# What the course's commands import beyond the standard library ([lab]): a Python without one of
# them cannot check a copy (TO_CHECK), or cannot open its notebooks either (NEEDED).
TO_CHECK = ("httpx", "pytest", "anyio")
NEEDED = (*TO_CHECK, "jupyterlab")


def _runs(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def recorded_python(root: Path) -> Path | None:
    """The Python recorded in the copy at ``root``, if it is still there."""
    try:
        text = (root / MADE_BY).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return Path(text) if text and _runs(Path(text)) else None


def clone_python(root: Path) -> Path | None:
    """The ``.venv`` Python ``make lab`` creates in a clone at ``root``, if there is one."""
    for candidate in (root / ".venv" / "bin" / "python", root / ".venv" / "Scripts" / "python.exe"):
        if _runs(candidate):
            return candidate.absolute()
    return None


def course_python(root: Path) -> Path | None:
    """The Python that has the course for the tree at ``root``; ``None``: unknown, or the running one."""
    for found in (recorded_python(root), clone_python(root)):
        if found is not None and found.absolute() != Path(sys.executable).absolute():
            return found
    return None


def record(root: Path) -> None:
    """Write the running Python into the copy being made at ``root``."""
    (root / MADE_BY).write_text(str(Path(sys.executable).absolute()) + "\n", encoding="utf-8")


def missing_packages(needed: tuple[str, ...] = NEEDED) -> list[str]:
    """What of ``needed`` the running Python lacks."""
    import importlib.util

    return [name for name in needed if importlib.util.find_spec(name) is None]


def name_of(python: Path) -> str:
    """How to write ``python`` in a command: ``python`` when that is the one on PATH, else its path."""
    found = shutil.which("python")
    if found is not None and Path(found).absolute().parent == python.absolute().parent:
        return "python"
    return str(python.absolute())


def use_instead(python: Path | None, command: str) -> str:
    """The fix, in the learner's words: run ``command`` (``-m pi_course …``) with ``python``."""
    if python is None:
        return (
            "请用装了 pi-course[lab] 的 Python（课程仓库里 make lab 创建的 .venv/bin/python，"
            f'或 pip install "pi-course[lab]" 装好的那个）运行 {command}。'
        )
    activate = python.parent / "activate"
    also = f"（或先 source {activate}，之后的 python 就是它）" if activate.is_file() else ""
    return f"请写成 {python} {command}{also}。"
