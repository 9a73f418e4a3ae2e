"""Where a tooling subpackage loads its modules from: in a browser tab, the installed wheel.

A practice copy in the browser edition lives in the browser's storage, where each stat or open of
a file is a request to the page (3-20 ms). Its lesson modules must come from there; the tooling
subpackages (``chapter``, ``course``, ``notebook``, ``provider``) are the wheel's own files.
"""

from __future__ import annotations

import sys
import sysconfig
from pathlib import Path


def tooling_path(path: list[str], name: str, site: Path | None = None) -> list[str]:
    """The ``__path__`` for subpackage ``name``: the one under ``site`` (in a browser, the
    installed wheel's) when it holds that subpackage, else ``path`` as it is."""
    if site is None:
        if sys.platform != "emscripten":
            return path
        site = Path("/" + sysconfig.get_paths()["purelib"].lstrip("/"))  # Pyodide's prefix "/": "//lib/…"
    installed = site.joinpath(*name.split("."))
    if str(installed) in path or not (installed / "__init__.py").is_file():
        return path
    return [str(installed)]


def left_to_the_wheel(directory: str, names: list[str]) -> set[str]:
    """A ``shutil.copytree`` ignore: what a copy of a ``pi_course`` need not hold because it loads
    from the installed wheel (in a browser tab: a tooling subpackage's files but its loaders)."""
    folder = Path(directory)
    if folder.parent.name != "pi_course":
        return set()
    if tooling_path([directory], f"pi_course.{folder.name}") == [directory]:
        return set()  # it loads from here: keep it whole
    return {name for name in names if name not in ("__init__.py", Path(__file__).name)}
