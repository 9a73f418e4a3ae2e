"""Where a copy's modules load from in a browser tab: its lesson files, and the installed wheel.

A practice copy in the browser edition lives in the browser's storage, where each stat or open of
a file is a request to the page (3-20 ms). Its lesson modules must come from there; the tooling
subpackages (``chapter``, ``course``, ``notebook``, ``provider``) are the wheel's own files.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import sysconfig
from collections.abc import Collection, Sequence
from pathlib import Path
from types import ModuleType

BROWSER_STORAGE = Path("/drive")  # JupyterLite's files: each stat or open is a request to the page


def wheel_site() -> Path | None:
    """In a browser tab (Pyodide), the site-packages the wheel is installed in; elsewhere None."""
    if sys.platform != "emscripten":
        return None
    return Path("/" + sysconfig.get_paths()["purelib"].lstrip("/"))  # Pyodide's prefix "/": "//lib/…"


def _installed(name: str, site: Path) -> Path | None:
    """The folder of subpackage ``name`` under ``site``, when the wheel there holds it."""
    folder = site.joinpath(*name.split("."))
    return folder if (folder / "__init__.py").is_file() else None


def tooling_path(path: list[str], name: str, site: Path | None = None) -> list[str]:
    """The ``__path__`` for subpackage ``name``: the one under ``site`` (in a browser, the
    installed wheel's) when it holds that subpackage, else ``path`` as it is."""
    site = site or wheel_site()
    installed = _installed(name, site) if site is not None else None
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


class CopyFinder(importlib.abc.MetaPathFinder):
    """A copy's ``pi_course`` in a browser tab: one request per lesson module, tooling from the wheel.

    The import system's own finder asks the page about the folder, the file and its time (for
    bytecode) before it reads a module; this reads each lesson file once and compiles it.
    """

    def __init__(self, package: Path, site: Path) -> None:
        self.package = package  # the copy's pi_course folder
        self.site = site

    def find_spec(
        self, name: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if name == "pi_course":
            return self._read(name, self.package / "__init__.py", package=True)
        top, _, module = name.partition(".")
        if top != "pi_course" or not module or "." in module or str(self.package) not in (path or ()):
            return None  # not a module of this copy's pi_course
        if _installed(name, self.site) is not None:
            return importlib.machinery.PathFinder.find_spec(name, [str(self.site / "pi_course")])
        return self._read(name, self.package / f"{module}.py")

    @staticmethod
    def _read(name: str, file: Path, package: bool = False) -> importlib.machinery.ModuleSpec | None:
        try:
            source = file.read_bytes()
        except OSError:
            return None  # not in the copy: the import system's own finders look, and say why not
        locations = [str(file.parent)] if package else None
        loader = _SourceRead(name, str(file), source)
        return importlib.util.spec_from_file_location(
            name, file, loader=loader, submodule_search_locations=locations
        )


class _SourceRead(importlib.machinery.SourceFileLoader):
    """Compiles the source the finder read; never looks for bytecode (none is written in a tab)."""

    def __init__(self, name: str, path: str, source: bytes) -> None:
        super().__init__(name, path)
        self.compiled = source  # what the module runs: tools that need its source need not read it
        self._source: bytes | None = source

    def get_data(self, path: str) -> bytes:
        if path == self.path and self._source is not None:
            source, self._source = self._source, None  # once: get_source later reads the file as it is
            return source
        return super().get_data(path)

    def path_stats(self, path: str) -> dict[str, float]:
        raise OSError("no bytecode lookup: compiled from the source")


def compiled_source(module: ModuleType) -> str | None:
    """The source a :class:`CopyFinder` read and compiled ``module`` from, else None (read the file)."""
    loader = getattr(getattr(module, "__spec__", None), "loader", None)
    return importlib.util.decode_source(loader.compiled) if isinstance(loader, _SourceRead) else None


def copy_finder_first(package_path: Sequence[str]) -> None:
    """In a browser tab, a :class:`CopyFinder` for the ``pi_course`` at ``package_path`` goes first
    on ``sys.meta_path``, in place of any other: the package's modules still to come are read in one
    request each. (``chapter`` calls it: a kernel imports it before the lesson modules.)"""
    finder = copy_finder(Path(package_path[0])) if package_path else None
    if finder is not None:
        sys.meta_path[:] = [finder, *(found for found in sys.meta_path if not isinstance(found, CopyFinder))]


def copy_finder(package: Path) -> CopyFinder | None:
    """The finder for the tree whose ``pi_course`` folder is ``package`` (a copy, or the wheel's
    own), in a browser tab; elsewhere None."""
    site = wheel_site()
    return CopyFinder(package, site) if site is not None else None


def storage_last(storage: Path = BROWSER_STORAGE) -> None:
    """In a browser tab, the ``sys.path`` entries in ``storage`` (the notebook's folder, a copy's
    root) go after the installed packages: an import of one of those then asks the page nothing. A
    copy's ``pi_course`` comes through its :class:`CopyFinder` whatever the order."""
    if wheel_site() is not None:
        sys.path.sort(key=lambda entry: in_storage(entry, storage))


def in_storage(entry: str, storage: Path = BROWSER_STORAGE) -> bool:
    """A ``sys.path`` entry in the browser's storage (``""`` and relative ones: the working folder's)."""
    return Path(os.path.abspath(entry)).is_relative_to(storage)
