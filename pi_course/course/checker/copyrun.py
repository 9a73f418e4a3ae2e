"""The sandboxed run of one copy: its lesson files in the installed course's tree, checked there, bounded.

``check 05 --path COPY`` and ``grade`` (each copy of a class) both come here. The tree is built by
:mod:`..copies.assemble` in a temporary folder; the installed ``pi_course`` checks it
(``check 05 --assembled``) inside :mod:`..running.sandbox`'s runner, in its own process group, with a time
bound (:mod:`..running.process`).
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from ..copies.assemble import Assembled, Instructor, assemble
from ..running.process import Running, run_bounded
from ..running.sandbox import NOT_SANDBOXED, Sandbox
from .request import CheckRequest

DEFAULT_TIMEOUT = 120.0  # seconds per copy; a finished copy needs a few


GRADED = CheckRequest(as_json=True)  # what grade asks of every copy: the chapter's record


def assembled_check(tree: Path, request: CheckRequest = GRADED) -> list[str]:
    """The command that checks one assembled tree: the installed ``check 05`` asked ``request`` there."""
    inside = replace(request, path=str(tree), reference=False, sandbox="auto", assembled=True)
    return [sys.executable, "-m", "pi_course", "check", "05", *inside.flags(), "--path", str(tree)]


def writable(folder: Path) -> None:
    """Make everything under ``folder`` removable: a learner's read-only files must not stop the clean-up."""
    for root, folders, files in os.walk(folder):
        for name in folders + files:
            path = Path(root) / name
            if not path.is_symlink():
                path.chmod(path.stat().st_mode | stat.S_IWUSR | stat.S_IRUSR | stat.S_IXUSR)


@dataclass(frozen=True)
class CopyRun:
    """One sandboxed check of a copy: the tree it ran on, its status (``None``: stopped), its output."""

    assembled: Assembled
    status: int | None
    out: str
    err: str
    seconds: float
    flags: tuple[str, ...]  # the assembled tree's, and ``not-sandboxed`` when it ran without a sandbox


def run_copy(
    copy: Path,
    instructor: Instructor,
    sandbox: Sandbox,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    command: Callable[[Path], list[str]] = assembled_check,
    running: Running | None = None,
    environ: Mapping[str, str] | None = None,
) -> CopyRun:
    """Check ``copy``'s lesson files in a fresh tree of the installed course, sandboxed and bounded."""
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="pi-course-check-") as scratch:
        work = Path(scratch) / "run"  # the only folder the check may write to
        work.mkdir()
        assembled = assemble(copy, instructor, work / "copy")
        wrapped = sandbox.command(command(assembled.tree), work)
        env = sandbox.environment(work, environ)
        status, out, err = run_bounded(wrapped, work, env, timeout, running=running, encoding="utf-8")
        seconds = time.monotonic() - started
        with contextlib.suppress(OSError):
            writable(Path(scratch))
    flags = (*assembled.flags, *(() if sandbox.sandboxed else (NOT_SANDBOXED,)))
    return CopyRun(assembled, status, out, err, seconds, flags)
