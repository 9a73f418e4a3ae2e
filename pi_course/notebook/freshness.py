"""Is the kernel still running the lesson files as they are on disk? If not, one line says why.

``%autoreload 2`` re-executes a changed module, but it cannot give an existing class a new
dataclass field, and it reloads ``pi_course/__init__.py`` before the module that now defines a
name it imports. Results would then mix old and new code. Before each cell, :func:`stale` compares
the kernel's lesson classes with the files and looks at what autoreload failed to reload; when
they disagree, a fresh import of the copy (a new module tree, in this process: no thread, no
subprocess, so the same in Pyodide) tells the two cases apart:

* the files themselves do not import: the learner's error, said in one line (file, line, what),
  with the traceback folded below;
* they import: only a kernel restart brings them in, said in one line (``重启内核：…``).
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import html
import importlib
import io
import os
import sys
import traceback
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pi_course_here import compiled_source

from ..chapter.steps import GIVEN_MODULES, LESSON_FILES

# The modules a cell uses: the lesson's and the given ones.
CELL_MODULES = tuple(name.removesuffix(".py") for name in (*LESSON_FILES, *GIVEN_MODULES))
RESTART = (
    "重启内核：{why}，这种改动自动重新加载（autoreload）接不上。"
    "菜单 Kernel → Restart Kernel…，再从第一格运行。"
)


@dataclass(frozen=True)
class Stale:
    """Why the kernel's lesson code differs from the files: a line, and details to fold below it."""

    line: str
    details: str = ""
    restart: bool = False  # sticky: only a restart clears it


_parsed: dict[Path, tuple[float, dict[str, set[str]]]] = {}


def dataclass_fields(
    path: Path, mtime: float | None = None, source: str | None = None
) -> dict[str, set[str]]:
    """The fields each top-level dataclass of ``path`` declares on disk (cached by mtime).

    ``mtime``: the file's modification time if the caller already knows it (autoreload looked);
    ``source``: its text if the caller has it (in a tab, a read is a request to the page).
    """
    if mtime is None:
        try:
            mtime = path.stat().st_mtime
        except OSError:
            return {}
    cached = _parsed.get(path)
    if cached is not None and cached[0] == mtime:
        return cached[1]
    try:
        tree = ast.parse(source if source is not None else path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return {}
    found: dict[str, set[str]] = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and any(_is_dataclass(d) for d in node.decorator_list):
            found[node.name] = {
                item.target.id
                for item in node.body
                if isinstance(item, ast.AnnAssign)
                and isinstance(item.target, ast.Name)
                and "ClassVar" not in ast.unparse(item.annotation)
            }
    _parsed[path] = (mtime, found)
    return found


def _is_dataclass(decorator: ast.expr) -> bool:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    return ast.unparse(target).split(".")[-1] == "dataclass"


def _lesson_modules(root: Path) -> dict[str, Any]:
    """The copy's lesson modules the kernel has imported (name → module)."""
    found = {}
    for name in CELL_MODULES:
        module = sys.modules.get(f"pi_course.{name}")
        file = getattr(module, "__file__", None)
        if module is not None and file and Path(file).parent == root / "pi_course":
            found[name] = module
    return found


def field_mismatch(
    root: Path, namespace: dict[str, Any] | None = None, mtimes: Mapping[str, float] | None = None
) -> str | None:
    """``pi_course/protocol.py 的 AgentContext 多了字段 tools`` when a loaded class lags its file.

    ``mtimes``: module name → file mtime, as autoreload recorded them just before this cell (its
    ``modules_mtimes``); a second stat of each file costs a request to the page in a browser tab.
    """
    for name, module in _lesson_modules(root).items():
        path = root / "pi_course" / f"{name}.py"
        first = compiled_source(module) if path not in _parsed else None  # as it was imported: unread
        for cls_name, on_disk in dataclass_fields(path, (mtimes or {}).get(module.__name__), first).items():
            loaded = [getattr(module, cls_name, None)]
            loaded += [value for value in (namespace or {}).values() if _same_class(value, module, cls_name)]
            for cls in loaded:
                if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):
                    continue
                have = {field.name for field in dataclasses.fields(cls)}
                if have != on_disk:
                    added, removed = sorted(on_disk - have), sorted(have - on_disk)
                    change = "，".join(
                        [f"多了字段 {'、'.join(added)}"] * bool(added)
                        + [f"少了字段 {'、'.join(removed)}"] * bool(removed)
                    )
                    return f"pi_course/{name}.py 的 {cls_name} {change}"
    return None


def _same_class(value: object, module: Any, name: str) -> bool:
    return isinstance(value, type) and value.__name__ == name and value.__module__ == module.__name__


def failed_reloads(shell: Any, root: Path) -> list[str]:
    """The copy's files autoreload tried and failed to reload (``pi_course/__init__.py``…)."""
    reloader = autoreloader(shell)
    failed = getattr(reloader, "failed", None) or {}
    shown = []
    for file in failed:
        path = Path(file)
        if path.parent == root / "pi_course":
            shown.append(f"pi_course/{path.name}")
    return shown


def autoreloader(shell: Any) -> Any:
    """IPython's autoreload state, when ``%load_ext autoreload`` ran (else ``None``)."""
    magics = getattr(getattr(shell, "magics_manager", None), "registry", {}).get("AutoreloadMagics")
    return getattr(magics, "_reloader", None)


def fresh_import_error(root: Path) -> Stale | None:
    """Import the copy's ``pi_course`` afresh (a new module tree, then the kernel's is put back)."""
    from ..course.running.inkernel import tree_first

    out = io.StringIO()
    try:
        with (
            tree_first(root, dict(os.environ)),
            contextlib.redirect_stdout(out),
            contextlib.redirect_stderr(out),
        ):
            importlib.import_module("pi_course")
            for name in CELL_MODULES:
                if (root / "pi_course" / f"{name}.py").is_file():
                    importlib.import_module(f"pi_course.{name}")
    except Exception as error:
        return import_error(error, root)
    return None


def import_error(error: BaseException, root: Path) -> Stale:
    """One line (file, line, what to fix) and the traceback, for a lesson file that does not import."""
    where: tuple[str, int] | None = None
    for frame in traceback.extract_tb(error.__traceback__):  # the deepest frame in the copy's files
        where = _relative(frame.filename, root, frame.lineno or 0) or where
    if isinstance(error, SyntaxError) and error.filename:  # the line that does not parse
        where = _relative(error.filename, root, error.lineno or 0) or where
    what = traceback.format_exception_only(type(error), error)[-1].strip()
    place = f"{where[0]} 第 {where[1]} 行" if where else "pi_course"
    line = f"{place}：{what}。改好它再运行这一格（完整的 traceback 折叠在下面）。"
    frames = traceback.extract_tb(error.__traceback__)
    first = next((n for n, frame in enumerate(frames) if _relative(frame.filename, root, 0)), 0)
    shown = traceback.format_list(frames[first:]) if frames[first:] else []  # from the copy's files on
    details = "".join(
        ["Traceback (most recent call last):\n", *shown, *traceback.format_exception_only(error)]
    )
    return Stale(line, details)


def import_failure(error: BaseException, root: Path) -> Stale | None:
    """A cell's exception that is a lesson file failing to import (its own code, not the cell's)."""
    if isinstance(error, SyntaxError) and error.filename and _relative(error.filename, root, 0):
        return import_error(error, root)
    lesson = {f"pi_course/{name}.py" for name in (*CELL_MODULES, "__init__")}
    importing = [
        frame
        for frame in traceback.extract_tb(error.__traceback__)
        if frame.name == "<module>" and (_relative(frame.filename, root, 0) or ("", 0))[0] in lesson
    ]
    return import_error(error, root) if importing else None


def _relative(file: str, root: Path, number: int) -> tuple[str, int] | None:
    path = Path(file)
    if path.parent == root / "pi_course" or root / "pi_course" in path.parents:
        return path.relative_to(root).as_posix(), number
    return None


def stale(shell: Any, root: Path) -> Stale | None:
    """What differs between the kernel's lesson code and the files, checked before a cell."""
    namespace = getattr(shell, "user_ns", None)
    mismatch = field_mismatch(root, namespace, getattr(autoreloader(shell), "modules_mtimes", None))
    failed = failed_reloads(shell, root)
    if mismatch is None and not failed:
        return None
    broken = fresh_import_error(root)
    if broken is not None:
        return broken
    why = mismatch or f"{'、'.join(failed)} 改过了"
    return Stale(RESTART.format(why=why), restart=True)


def bundle(found: Stale) -> dict[str, str]:
    """The folded details as a display bundle: ``<details>`` in JupyterLab, the last lines as text."""
    tail = "\n".join(found.details.rstrip().splitlines()[-4:])
    folded = (
        "<details><summary>完整的 traceback（点开）</summary>"
        f'<pre style="margin:0">{html.escape(found.details)}</pre></details>'
    )
    return {"text/plain": f"（traceback 的最后几行）\n{tail}", "text/html": folded}
