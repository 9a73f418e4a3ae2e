"""Where a copy's subpackages load from in a browser tab: the installed wheel.

A practice copy in the browser edition lives in the browser's storage, where each stat or open of
a file is a request to the page (3-20 ms). Its lesson modules must come from there (through
``pi_course_here.CopyFinder``); the tooling subpackages (``chapter``, ``course``, ``notebook``,
``provider``) are the wheel's own files.
"""

from __future__ import annotations

import os
from collections.abc import Collection
from pathlib import Path

from pi_course_here import installed_subpackage, wheel_site


def tooling_path(path: list[str], name: str, site: Path | None = None) -> list[str]:
    """The ``__path__`` for subpackage ``name``: the one under ``site`` (in a browser, the
    installed wheel's) when it holds that subpackage, else ``path`` as it is."""
    site = site or wheel_site()
    installed = installed_subpackage(name, site) if site is not None else None
    if installed is None or str(installed) in path:
        return path
    return [str(installed)]


def left_to_the_wheel(directory: str, names: list[str], *, loaders: bool = True) -> set[str]:
    """Of ``names`` in ``directory``, what a copy of a ``pi_course`` need not hold because it loads
    from the installed wheel (in a browser tab): a tooling subpackage's files but its loaders, or,
    without ``loaders`` (a copy only a :class:`CopyFinder` imports), the whole subpackage."""
    folder = Path(directory)
    if not loaders and folder.name == "pi_course":
        return {name for name in names if _from_the_wheel(folder / name)}
    if folder.parent.name != "pi_course" or not _from_the_wheel(folder):
        return set()  # it loads from here: keep it whole
    return {name for name in names if name not in ("__init__.py", Path(__file__).name)}


def _from_the_wheel(folder: Path) -> bool:
    return tooling_path([str(folder)], f"pi_course.{folder.name}") != [str(folder)]


def copy_without_the_wheel(
    source: Path, target: Path, leave: Collection[str] = (), *, loaders: bool = True
) -> None:
    """``source`` (a copy, or its ``pi_course``) into ``target`` but ``leave`` (names in ``source``),
    each file read once, with no bytecode and nothing :func:`left_to_the_wheel` names: unlike
    ``shutil.copytree``, no stat of each file to compare it or copy its times (in a tab, each is a
    request to the page)."""
    target.mkdir(parents=True)
    entries = list(os.scandir(source))
    names = [entry.name for entry in entries]
    left = {*leave, *left_to_the_wheel(str(source), names, loaders=loaders)}
    for entry in entries:
        if entry.name in left or entry.name == "__pycache__" or entry.name.endswith(".pyc"):
            continue
        if entry.is_dir():
            copy_without_the_wheel(Path(entry.path), target / entry.name, loaders=loaders)
        else:
            (target / entry.name).write_bytes(Path(entry.path).read_bytes())
