"""Run ``check``'s red light and pytest inside this interpreter: the browser edition (no subprocess).

In a browser tab (``pi_course_here.in_a_tab()``) there is no subprocess to run pytest in,
so ``check`` runs it here, in the kernel, with the same arguments and the same junit report, read
by the same code as the subprocess runner. What a subprocess gives for free is done by hand:

* **the tree under test first on ``sys.path``**, and every module it could shadow (``pi_course``
  and its submodules, the test files, their ``conftest``) set aside while it runs, so the tests
  import the learner's files as they are now, not what the kernel imported before;
* **afterwards everything is put back**: the kernel's own modules, ``sys.path`` and the
  environment (the runner passes its variables, e.g. the time bound, as the environment);
* **time bounds by asyncio**: each async test is cancelled at its bound by the runner's plugin
  (``asyncio.timeout``); there is no ``SIGALRM`` to interrupt a loop that never awaits.

Async tests are awaited by :func:`await_each_test` on the kernel's own, already running, event
loop: Pyodide's ``run_sync`` suspends the synchronous pytest call until the test's task ends,
which needs stack switching (JSPI: Chromium-family browsers).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import inspect
import io
import os
import sys
import tempfile
import traceback
from collections.abc import Coroutine, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from pi_course_here import BROWSER_STORAGE, copy_finder_first, copy_without_the_wheel, in_a_tab, in_storage

from ...chapter.steps import SHIPPED_TESTS
from .process import run_bounded

# Modules a run must import afresh from the tree under test (and drop again afterwards).
SET_ASIDE = ("pi_course", "conftest", *(name.removesuffix(".py") for name in SHIPPED_TESTS))
BROWSER_PYCACHE = "/tmp/pi-course-pycache"  # in memory (Pyodide's /tmp); never written: looked up only


def _ours(name: str) -> bool:
    return any(name == root or name.startswith(root + ".") for root in SET_ASIDE)


@contextlib.contextmanager
def tree_first(root: Path, env: Mapping[str, str]) -> Iterator[None]:
    """``root`` first on ``sys.path``, ``env`` as the environment, the tree's modules fresh; then restore."""
    saved_path = list(sys.path)
    saved_environ = dict(os.environ)
    saved_modules = {name: module for name, module in sys.modules.items() if _ours(name)}
    saved_dont_write, saved_prefix = sys.dont_write_bytecode, sys.pycache_prefix
    saved_finders = list(sys.meta_path)  # a tab's CopyFinder for the tree goes first (see below)
    for name in saved_modules:
        del sys.modules[name]
    # As in a subprocess: the environment's PYTHONPATH (the runner's plugin folder, the tree) first,
    # and not the kernel's own folders in the browser's storage (in a tab: a request per import).
    entries = [entry for entry in env.get("PYTHONPATH", "").split(os.pathsep) if entry]
    kernels = [  # "" stays: the run's own folder (it runs there)
        entry for entry in saved_path if not (in_a_tab() and entry and in_storage(entry, BROWSER_STORAGE))
    ]
    sys.path[:] = [*entries, *([str(root)] if str(root) not in entries else []), *kernels]
    os.environ.clear()
    os.environ.update(env)
    sys.dont_write_bytecode = True  # the learner's tree stays as they wrote it; always compiled anew
    copy_finder_first([str(root / "pi_course")])  # in a tab: the tree's lesson files read once each
    if in_a_tab():  # no __pycache__ lookup in the browser's storage: a request to the page per module
        sys.pycache_prefix = BROWSER_PYCACHE
    importlib.invalidate_caches()
    try:
        yield
    finally:
        sys.meta_path[:] = saved_finders
        for name in [name for name in sys.modules if _ours(name)]:
            del sys.modules[name]
        sys.modules.update(saved_modules)
        sys.path[:] = saved_path
        os.environ.clear()
        os.environ.update(saved_environ)
        sys.dont_write_bytecode, sys.pycache_prefix = saved_dont_write, saved_prefix
        importlib.invalidate_caches()


@contextlib.contextmanager
def read_into_memory(root: Path) -> Iterator[Path]:
    """In a browser tab, a tree in the browser's storage as a copy in memory, read file by file
    once: all but its notebooks and what loads from the wheel. Everything a check does afterwards
    (imports, pytest's lookups) then costs no request to the page. Elsewhere: ``root`` itself."""
    if not in_a_tab() or BROWSER_STORAGE not in root.parents:
        yield root
        return
    with tempfile.TemporaryDirectory(prefix="pi-course-check-") as scratch:
        tree = Path(scratch) / root.name
        copy_without_the_wheel(root, tree, leave=("notebooks",))  # tree_first puts its finder first
        yield tree


def run_python(
    command: list[str], root: Path, env: Mapping[str, str], bound: float, *, merged: bool = False
) -> tuple[int | None, str, str]:
    """``python -c CODE`` or ``python -m pytest …`` at ``root``: (status, stdout, stderr), ``None``: stopped.

    The one place that chooses how: a process of its own with a time bound, or in a browser tab,
    which has no processes, in this kernel. ``merged``: stderr is part of stdout.
    """
    if not in_a_tab():
        return run_bounded(command, root, env, bound, merged=merged)
    if command[1:2] == ["-c"]:
        return run_code(command[2], root, env)
    status, output = run_pytest(command, root, env)
    return status, output, ""


def run_code(code: str, root: Path, env: Mapping[str, str]) -> tuple[int, str, str]:
    """Execute ``code`` as ``python -c`` would in ``root``: (exit status, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    status = 0
    with (
        tree_first(root, env),
        contextlib.chdir(root),
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
    ):
        try:
            exec(compile(code, "<string>", "exec"), {"__name__": "__main__"})
        except SystemExit as stop:
            status = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
        except Exception:
            err.write(_traceback_without_this_frame())
            status = 1
    return status, out.getvalue(), err.getvalue()


def _traceback_without_this_frame() -> str:
    kind, error, tb = sys.exc_info()
    assert error is not None and tb is not None
    return "".join(traceback.format_exception(kind, error, tb.tb_next))


# anyio's pytest plugin by its module: named by its entry point ("anyio"), pytest would mark the whole
# anyio package for assertion rewriting and rewrite ~30 modules at every run (no bytecode is written).
ANYIO_PLUGIN = "anyio.pytest_plugin"


def pytest_arguments(command: Sequence[str]) -> list[str]:
    """The arguments of a ``python -m pytest …`` command line (what the subprocess runner builds)."""
    parts = list(command)
    if len(parts) >= 3 and parts[1:3] == ["-m", "pytest"]:
        return parts[3:]
    raise ValueError(f"not a `python -m pytest` command: {parts[:3]}")


def await_here(coroutine: Coroutine[Any, Any, object]) -> object:
    """Run one test's coroutine to its end from synchronous code.

    With no event loop running (CPython, a plain call) a fresh loop runs it. In a browser kernel
    the loop is already running (a cell is a task on it): the test becomes a task on that same
    loop and Pyodide's ``run_sync`` suspends this call until it ends (stack switching, JSPI).
    """
    __tracebackhide__ = True  # a failing test's report shows the test, as under anyio
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        ok, value = asyncio.run(_outcome(coroutine))
    else:
        if not in_a_tab():
            coroutine.close()
            raise RuntimeError("only in a browser (Pyodide) can a test be awaited on a running loop")
        from pyodide.ffi import run_sync  # type: ignore[import-not-found]

        ok, value = run_sync(asyncio.ensure_future(_outcome(coroutine)))
    if not ok:
        assert isinstance(value, BaseException)
        raise value
    return value


async def _outcome(coroutine: Coroutine[Any, Any, object]) -> tuple[bool, object]:
    """The test's result or its exception, as a value: the task itself never fails, so the kernel
    never reports its failure a second time as an unhandled error of the cell."""
    __tracebackhide__ = True
    try:
        return True, await coroutine
    except BaseException as error:  # re-raised by await_here, in the caller's frame
        return False, error


def await_each_test() -> object:
    """A pytest plugin: await each async test with :func:`await_here`, not on anyio's own loop.

    anyio's runner starts a second event loop, which a browser kernel cannot block on, so anyio's
    plugin is left out of the run (``-p no:anyio``) and this one calls each async test as
    the runner's plugin wrapped it (inside its time bound).
    """
    import pytest

    class AwaitEachTest:
        @staticmethod
        def pytest_configure(config: pytest.Config) -> None:
            config.addinivalue_line("markers", "anyio: an async test (awaited by pi_course's runner)")

        @staticmethod
        @pytest.hookimpl(tryfirst=True)
        def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
            test = pyfuncitem.obj
            if not inspect.iscoroutinefunction(test):
                return None
            __tracebackhide__ = True
            arguments = {name: pyfuncitem.funcargs[name] for name in pyfuncitem._fixtureinfo.argnames}
            await_here(test(**arguments))
            return True

    return AwaitEachTest()


def run_pytest(command: Sequence[str], root: Path, env: Mapping[str, str]) -> tuple[int, str]:
    """Run ``python -m pytest …`` here: (exit status, everything pytest printed)."""
    import pytest

    # No fd-level capture in a browser; async tests are awaited by await_each_test, not anyio.
    arguments = [*pytest_arguments(command), "--capture=sys", "-p", "no:anyio", "-p", f"no:{ANYIO_PLUGIN}"]
    output = io.StringIO()
    with (
        tree_first(root, env),
        contextlib.chdir(root),
        contextlib.redirect_stdout(output),
        contextlib.redirect_stderr(output),
    ):
        status = pytest.main(arguments, plugins=[await_each_test()])
    return int(status), output.getvalue()
