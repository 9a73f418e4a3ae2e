"""Run one process with a bound on its time, its output in files, in a process group of its own.

What ``check`` runs (the red light's import, pytest) and what ``grade`` runs (a copy's sandboxed check)
go through :func:`run_bounded`: only the process itself is waited for, so a child it leaves
holding the output open holds nothing up, and whatever it left in its group is stopped when it ends.
"""

from __future__ import annotations

import contextlib
import locale
import os
import signal
import subprocess
import tempfile
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

MAX_OUTPUT_CHARS = 1_000_000  # what is kept of a process's output (a sandbox bounds the file itself too)


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    """Stop the process and everything it started in its group (pytest, the red light, a learner's child)."""
    if os.name == "posix":
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
    else:  # pragma: no cover - Windows: the process itself (job objects would be needed for more)
        process.kill()


class Running:
    """The processes running now, so that Ctrl-C or SIGTERM in the main thread can stop them all at once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._processes: set[subprocess.Popen[bytes]] = set()
        self._stopping = False

    def start(
        self, command: list[str], cwd: Path, env: Mapping[str, str], out: IO[bytes], err: IO[bytes] | int
    ) -> subprocess.Popen[bytes]:
        options: dict[str, Any] = {"start_new_session": True} if os.name == "posix" else {}
        with self._lock:
            if self._stopping:
                raise KeyboardInterrupt
            process = subprocess.Popen(
                command, cwd=cwd, env=dict(env), stdin=subprocess.DEVNULL, stdout=out, stderr=err, **options
            )
            self._processes.add(process)
        return process

    @property
    def stopping(self) -> bool:
        """Stopped by Ctrl-C: what finishes now was cut short."""
        return self._stopping

    def done(self, process: subprocess.Popen[bytes]) -> None:
        with self._lock:
            self._processes.discard(process)

    def stop(self) -> None:
        with self._lock:
            self._stopping = True
            for process in self._processes:
                _kill_group(process)


def _text(file: IO[bytes], encoding: str | None) -> str:
    file.seek(0)
    return file.read(MAX_OUTPUT_CHARS).decode(encoding or locale.getpreferredencoding(False), "replace")


def run_bounded(
    command: list[str],
    cwd: Path,
    env: Mapping[str, str],
    seconds: float,
    *,
    merged: bool = False,
    running: Running | None = None,
    encoding: str | None = None,
) -> tuple[int | None, str, str]:
    """Run ``command`` for at most ``seconds``: (status, stdout, stderr); status ``None``: it was stopped.

    With ``merged``, stderr goes into stdout; ``encoding`` is the output's (default: the locale's).
    On Ctrl-C (any exception) the process group is stopped before it is re-raised.
    """
    running = running or Running()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        process = running.start(command, cwd, env, out, subprocess.STDOUT if merged else err)
        try:
            status: int | None = process.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            status = None
        except BaseException:  # Ctrl-C: never leave a learner's process behind
            _kill_group(process)
            process.wait()
            raise
        finally:
            _kill_group(process)  # whatever it left running in its group
            running.done(process)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=10)
        return status, _text(out, encoding), _text(err, encoding)
