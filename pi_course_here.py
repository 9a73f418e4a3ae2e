"""Which ``pi_course`` a notebook's kernel imports: the one beside its ``notebooks/`` folder.

A top-level module of the installed distribution, so that a notebook's first cell can import it
before any ``pi_course`` is chosen. It is also the browser edition's wing: :func:`in_a_tab` is the
one place that says whether this is a browser tab, and there a :class:`CopyFinder` is the one
mechanism that decides where a copy's modules load from: its lesson modules from the copy, read
once each, its tooling subpackages from the installed wheel. A practice copy lives in the
browser's storage, where each stat or open of a file is a request to the page (3-20 ms), and the
import system's own finder would list each folder and ask about each file, its bytecode and its time.
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


def use_beside_notebooks(notebooks: Path | None = None) -> None:
    """``import pi_course`` from then on loads the ``pi_course`` beside ``notebooks`` (the working
    folder), when there is one: the repository's, or a practice copy's. What an earlier cell
    imported from elsewhere is dropped; run again, it changes nothing."""
    root = Path(notebooks or os.getcwd()).parent
    if str(root) in sys.path or not (root / "pi_course").is_dir():
        return
    sys.path.insert(0, str(root))
    for name in [name for name in sys.modules if name.split(".")[0] == "pi_course"]:
        del sys.modules[name]
    copy_finder_first([str(root / "pi_course")])
    storage_last()


def in_a_tab() -> bool:
    """True in a browser tab (JupyterLite's Pyodide kernel): no subprocess, no socket, files in the page."""
    return sys.platform == "emscripten"


def edition_of(package: str | os.PathLike[str]) -> str:
    """``"practice"`` for the ``pi_course`` folder of a copy ``practice 05`` made, else ``"reference"``.

    Read from the copy (its ``LEARNING.md`` beside the package), never from the package's own
    files, which a learner may paste over with the reference's.
    """
    return "practice" if (Path(package).parent / "LEARNING.md").is_file() else "reference"


def wheel_site() -> Path | None:
    """In a browser tab, the site-packages the wheel is installed in; elsewhere None."""
    if not in_a_tab():
        return None
    return Path("/" + sysconfig.get_paths()["purelib"].lstrip("/"))  # Pyodide's prefix "/": "//lib/…"


def installed_subpackage(name: str, site: Path) -> Path | None:
    """The folder of subpackage ``name`` under ``site``, when the wheel there holds it."""
    folder = site.joinpath(*name.split("."))
    return folder if (folder / "__init__.py").is_file() else None


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
        if installed_subpackage(name, self.site) is not None:
            return importlib.machinery.PathFinder.find_spec(name, [str(self.site / "pi_course")])
        return self._read(name, self.package / f"{module}.py")

    @staticmethod
    def _read(name: str, file: Path, package: bool = False) -> importlib.machinery.ModuleSpec | None:
        try:
            source = file.read_bytes()
        except OSError:
            return None  # not in the copy: the import system's own finders look, and say why not
        locations = [str(file.parent)] if package else None
        loader = SourceRead(name, str(file), source)
        return importlib.util.spec_from_file_location(
            name, file, loader=loader, submodule_search_locations=locations
        )


class SourceRead(importlib.machinery.SourceFileLoader):
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
    return importlib.util.decode_source(loader.compiled) if isinstance(loader, SourceRead) else None


def copy_finder_first(package_path: Sequence[str]) -> None:
    """In a browser tab, a :class:`CopyFinder` for the ``pi_course`` at ``package_path`` goes first
    on ``sys.meta_path``, in place of any other: the package's modules still to come are read in one
    request each."""
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


def left_to_the_wheel(directory: str, names: list[str]) -> set[str]:
    """Of ``names`` in ``directory``, what a copy of a ``pi_course`` need not hold in a browser tab:
    the tooling subpackages, which its :class:`CopyFinder` loads from the installed wheel."""
    site = wheel_site()
    folder = Path(directory)
    if site is None or folder.name != "pi_course":
        return set()
    return {name for name in names if installed_subpackage(f"pi_course.{name}", site) is not None}


def copy_without_the_wheel(source: Path, target: Path, leave: Collection[str] = ()) -> None:
    """``source`` (a copy, or its ``pi_course``) into ``target`` but ``leave`` (names in ``source``),
    each file read once, with no bytecode and nothing :func:`left_to_the_wheel` names: unlike
    ``shutil.copytree``, no stat of each file to compare it or copy its times (in a tab, each is a
    request to the page). What imports the copy puts its :class:`CopyFinder` first."""
    target.mkdir(parents=True)
    entries = list(os.scandir(source))
    left = {*leave, *left_to_the_wheel(str(source), [entry.name for entry in entries])}
    for entry in entries:
        if entry.name in left or entry.name == "__pycache__" or entry.name.endswith(".pyc"):
            continue
        if entry.is_dir():
            copy_without_the_wheel(Path(entry.path), target / entry.name)
        else:
            (target / entry.name).write_bytes(Path(entry.path).read_bytes())
