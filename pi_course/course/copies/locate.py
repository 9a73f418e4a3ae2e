"""Which tree ``check`` tests: a practice copy found from a folder, or the installed reference.

A *course tree* holds ``pi_course/__init__.py`` beside the focused tests (a clone, a practice
copy, or an installed wheel, which carries the tests in ``pi_course/_course/tests``). A
*practice copy* is a course tree made by ``practice 05``. ``check 05`` tests a practice copy
only, unless told ``--reference``: a learner who ran it in the wrong folder must not take the
reference's 11/11 for their own.
"""

from __future__ import annotations

import sys
from pathlib import Path

from pi_course_here import edition_of

from ...chapter.steps import BEYOND_TEST, COMPARE_TEST, FOCUSED_TEST, RULES_TEST

# The pi_course package this module was imported as part of: a copy's own folder, even when this
# module itself comes from the installed wheel (the browser edition, pi_course_here.CopyFinder).
PACKAGE = Path(sys.modules[__name__.partition(".")[0]].__file__ or "").resolve().parent
# What check keeps in a copy, beside pi_course/ and tests/.
CACHE_FILE = Path(".pi_course") / "check-cache.json"

__all__ = [
    "CACHE_FILE",
    "PACKAGE",
    "beyond_test_file",
    "check_target",
    "copies_below",
    "course_root",
    "find_course_tree",
    "focused_test_file",
    "is_practice_copy",
    "is_testable_tree",
    "practice_path_problem",
    "rules_test_file",
]


def course_root(path: str | Path | None = None) -> Path:
    """The tree to test: ``path`` if given, else the one this ``pi_course`` was imported from."""
    if path is not None:
        return Path(path).resolve()
    return PACKAGE.parent


def _test_file(root: Path, name: str) -> Path | None:
    for candidate in (root / "tests" / name, root / "pi_course" / "_course" / "tests" / name):
        if candidate.is_file():
            return candidate
    return None


def focused_test_file(root: Path) -> Path:
    found = _test_file(root, FOCUSED_TEST)
    if found is None:
        raise FileNotFoundError(f"{FOCUSED_TEST} not found under {root}")
    return found


def beyond_test_file(root: Path) -> Path | None:
    """The beyond-the-chapter checks next to the focused tests; ``None`` in an older copy."""
    return _test_file(root, BEYOND_TEST)


def rules_test_file(root: Path) -> Path | None:
    """The checks of the chapter's rules next to the focused tests; ``None`` in an older copy."""
    return _test_file(root, RULES_TEST)


def compare_test_file(root: Path) -> Path | None:
    """The comparison with the reference next to the focused tests; ``None`` in an older copy."""
    return _test_file(root, COMPARE_TEST)


def is_testable_tree(folder: Path) -> bool:
    """A folder ``check`` can test: ``pi_course/__init__.py`` beside the focused tests."""
    return (folder / "pi_course" / "__init__.py").is_file() and _test_file(folder, FOCUSED_TEST) is not None


def is_practice_copy(folder: Path) -> bool:
    """A tree made by ``practice 05``: its ``pi_course`` is of the practice edition."""
    package = folder / "pi_course"
    return (package / "__init__.py").is_file() and edition_of(package) == "practice"


def find_course_tree(start: Path) -> Path | None:
    """The nearest course tree at or above ``start`` (a copy's ``notebooks/`` or ``pi_course/``)."""
    for folder in (start, *start.parents):
        if is_testable_tree(folder):
            return folder
    return None


def copies_below(folder: Path, depth: int = 2) -> list[Path]:
    """The practice copies inside ``folder`` (not at it), down to ``depth`` levels, hidden folders skipped."""
    if depth == 0:
        return []
    try:
        children = sorted(
            child for child in folder.iterdir() if child.is_dir() and not child.name.startswith(".")
        )
    except OSError:
        return []
    found: list[Path] = []
    for child in children:
        if is_testable_tree(child) and is_practice_copy(child):
            found.append(child)
        elif child.name not in ("node_modules", "__pycache__", "venv"):
            found += copies_below(child, depth - 1)
    return found


def named(copies: list[Path], limit: int = 3) -> str:
    """Copies found below a folder, for one line: the first few and how many more."""
    shown = "、".join(str(copy) for copy in copies[:limit])
    return shown + (f" 等 {len(copies)} 份" if len(copies) > limit else "")


def practice_path_problem(path: str) -> str | None:
    """Why ``check --path PATH`` cannot run there (one line), or ``None`` for a usable tree."""
    folder = Path(path).expanduser()
    if not folder.exists():
        return (
            f"check --path {path}：这个文件夹不存在。"
            "请给出练习副本的目录（python -m pi_course practice 05 DIR 创建的那个）。"
        )
    if not folder.is_dir():
        return f"check --path {path}：这不是一个文件夹。请给出练习副本的目录。"
    if find_course_tree(folder.resolve()) is None:
        below = copies_below(folder.resolve())
        if below:
            return (
                f"check --path {path}：这里不是练习副本，它下面有：{named(below)}。"
                f"请写成 --path {below[0]}（要一次检查多份，用 python -m pi_course grade 05 {path}）。"
            )
        return (
            f"check --path {path}：这里不是练习副本（需要 pi_course/__init__.py 和 tests/{FOCUSED_TEST}）。"
            "请给出 python -m pi_course practice 05 DIR 创建的目录。"
        )
    return None


def check_target(
    path: str | None, cwd: Path, running: Path, *, reference: bool = False
) -> tuple[Path | None, str | None]:
    """Which tree ``check`` tests, with the one line to say about it; or ``None`` and why not.

    * ``--reference``: the tree of the running ``pi_course`` (``running``), if it is not a copy;
    * ``--path``: the nearest course tree at or above it, named when it is not a practice copy;
    * neither: the practice copy at or above ``cwd`` (its ``notebooks/``, its ``pi_course/``).
      Anywhere else ``check`` refuses in one line naming ``--path`` and ``--reference``.
    """
    if reference:
        if is_practice_copy(running) or not is_testable_tree(running):
            return None, (
                f"check 05 --reference：正在运行的 pi_course（{running / 'pi_course'}）不是参考实现。"
                "在练习副本之外运行它，或用 --path 指定要检查的副本。"
            )
        return running, None
    if path is not None:
        problem = practice_path_problem(path)
        if problem is not None:
            return None, problem
        found = find_course_tree(Path(path).expanduser().resolve())
        assert found is not None  # practice_path_problem looked for it
        if is_practice_copy(found):
            return found, None
        return found, f"check 05：{found} 不是练习副本，检查的是这里的参考实现（reference）。"
    found = find_course_tree(cwd)
    if found is not None and is_practice_copy(found):
        return found, None
    below = copies_below(cwd) if found is None else []
    if below:
        return None, (
            f"check 05：{cwd} 不是练习副本，它下面有：{named(below)}。"
            f"请先 cd {below[0]} 再运行，或加 --path {below[0]}；什么都没有检查。"
        )
    return None, (
        f"check 05：{cwd} 不在练习副本里，没有检查任何东西。"
        "请 cd 到练习副本（python -m pi_course practice 05 DIR 创建的目录）再运行，"
        "或加 --path 副本目录；要检查参考实现，加 --reference。"
    )
