"""Which copies a list of PATHs holds: folders, folders of copies, archives, and what is not a copy."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ...chapter.steps import FOCUSED_TEST

ARCHIVE_SUFFIXES = (".zip", ".tar.gz", ".tgz")
# What a copy of a learner's folder leaves out: version control, environments, caches.
SKIPPED = frozenset(
    {".git", ".hg", ".venv", "venv", "node_modules", "__pycache__", ".ipynb_checkpoints", ".pytest_cache",
     ".mypy_cache", ".ruff_cache", "__MACOSX"}
)  # fmt: skip


class GradeError(Exception):
    """A PATH that cannot be graded at all (it does not exist); the message is one line."""


@dataclass(frozen=True)
class Source:
    """One thing to grade: a copy's folder, an archive of one, or something that is not a copy."""

    name: str
    path: Path
    kind: str  # "folder" | "archive" | "not-a-copy"
    why: str | None = None  # for "not-a-copy": the one line saying why


def looks_like_a_copy(folder: Path) -> bool:
    """``pi_course/__init__.py`` beside ``tests/test_05_provider_adapter.py``: a tree check can test."""
    return (folder / "pi_course" / "__init__.py").is_file() and (folder / "tests" / FOCUSED_TEST).is_file()


def is_archive(path: Path) -> bool:
    return path.is_file() and path.name.lower().endswith(ARCHIVE_SUFFIXES)


def archive_stem(name: str) -> str:
    lowered = name.lower()
    for suffix in ARCHIVE_SUFFIXES:
        if lowered.endswith(suffix):
            return name[: -len(suffix)]
    return name


def _visible(path: Path) -> bool:
    """A learner's entry in a class folder (a symbolic link to a copy counts: it gets a row too)."""
    return not path.name.startswith(".") and path.name not in SKIPPED


def copies_in(folder: Path, depth: int = 2) -> list[Path]:
    """The copies at ``folder`` or below it, down to ``depth`` (a GitHub download's ``repo-main/``,
    a clone inside a learner's folder, two attempts side by side)."""
    if looks_like_a_copy(folder):
        return [folder]
    if depth == 0:
        return []
    try:
        children = sorted(child for child in folder.iterdir() if child.is_dir() and _visible(child))
    except OSError:
        return []
    return [copy for child in children for copy in copies_in(child, depth - 1)]


def find_tree(folder: Path, depth: int = 2) -> Path | None:
    """The one copy at or below ``folder``; ``None`` when there is none or more than one."""
    found = copies_in(folder, depth)
    return found[0] if len(found) == 1 else None


def _not_a_copy(path: Path, name: str | None = None) -> Source:
    try:
        empty = path.is_dir() and not any(_visible(child) for child in path.iterdir())
    except OSError:
        empty = False
    if empty:
        why = f"不是练习副本：{path} 是空文件夹（还没有交副本）"
    else:
        why = (
            f"不是练习副本：{path} 里没有 pi_course/__init__.py 和 tests/{FOCUSED_TEST}"
            "（python -m pi_course practice 05 DIR 创建的目录，或它的 .zip / .tar.gz）"
        )
    return Source(name or path.name, path, "not-a-copy", why)


def discover(paths: Sequence[str | Path]) -> list[Source]:
    """What each PATH holds: a copy, an archive of one, or a folder of copies and archives.

    In a folder of copies every visible subfolder (or link to one) and archive is one learner; a
    subfolder that is not a copy is reported as ``not-a-copy`` rather than silently left out, and
    a learner's folder holding several copies gives one row per copy (``name/sub``).
    """
    missing = [str(path) for path in paths if not Path(path).expanduser().exists()]
    if missing:
        raise GradeError(f"grade 05：这些路径不存在：{'、'.join(missing)}。没有检查任何副本。")
    sources: list[Source] = []
    for given in paths:
        path = Path(given).expanduser().absolute()
        if path.is_dir():
            if looks_like_a_copy(path):
                sources.append(Source(path.name, path, "folder"))
                continue
            found = [
                source for child in sorted(path.iterdir()) if _visible(child) for source in _sources(child)
            ]
            if any(source.kind != "not-a-copy" for source in found):
                sources += found
            else:
                sources.append(_not_a_copy(path))
        elif is_archive(path):
            sources.append(Source(archive_stem(path.name), path, "archive"))
        else:
            sources.append(_not_a_copy(path))
    if sources and all(source.kind == "not-a-copy" for source in sources):
        raise GradeError(nothing_to_grade(paths))
    return sources


def _why_nothing(path: Path) -> str:
    """What one PATH holds when it holds no copy: said so that the fix is plain."""
    if path.is_file():
        return f"{path} 是一个文件，不是文件夹，也不是 .zip / .tar.gz"
    above = next((folder for folder in path.parents if looks_like_a_copy(folder)), None)
    if above is not None:
        return f"{path} 在副本 {above} 里面（要评它，写 {above}）"
    try:
        empty = not any(child for child in path.iterdir() if _visible(child))
    except OSError:
        empty = False
    if empty:
        return f"{path} 是空文件夹"
    return (
        f"{path} 里没有练习副本（副本的根目录有 pi_course/__init__.py 和 tests/{FOCUSED_TEST}，"
        "可以在下面两层以内）"
    )


def nothing_to_grade(paths: Sequence[str | Path]) -> str:
    """The one line when no PATH holds a copy or an archive: nothing is graded and nothing written."""
    said = "；".join(_why_nothing(Path(given).expanduser().absolute()) for given in paths)
    return (
        f"grade 05：没有可以评的副本：{said}。请给出练习副本（practice 05 DIR 创建的目录）、"
        "装着副本的文件夹，或副本的 .zip / .tar.gz；没有评分，也没有写任何文件。"
    )


def _sources(child: Path) -> list[Source]:
    """One learner's entry: its copy, each of its copies, its archive, or a ``not-a-copy`` row."""
    if child.is_dir():
        found = copies_in(child)
        if not found:
            return [_not_a_copy(child)]
        if len(found) == 1:
            return [Source(child.name, found[0], "folder")]
        return [
            Source(f"{child.name}/{copy.relative_to(child).as_posix()}", copy, "folder") for copy in found
        ]
    if is_archive(child):
        return [Source(archive_stem(child.name), child, "archive")]
    return []  # a loose file beside the copies (a roster, a README): not a learner
