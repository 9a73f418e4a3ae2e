"""Run one process with a bound on its time, its output in files: what ``check``'s runner needs."""

from __future__ import annotations

import locale
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import IO


def _text(file: IO[bytes]) -> str:
    file.seek(0)
    return file.read().decode(locale.getpreferredencoding(False), errors="replace")


def run_bounded(
    command: list[str], cwd: Path, env: Mapping[str, str], seconds: float, *, merged: bool = False
) -> tuple[int | None, str, str]:
    """Run ``command`` for at most ``seconds``: (status, stdout, stderr); status ``None``: it was stopped.

    Its output goes to files, and only the process itself is waited for: a child it leaves behind
    holding the output open does not hold this up. With ``merged``, stderr goes into stdout.
    On Ctrl-C (any exception) the process is stopped before it is re-raised.
    """
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        process = subprocess.Popen(
            command, cwd=cwd, env=dict(env), stdin=subprocess.DEVNULL, stdout=out,
            stderr=subprocess.STDOUT if merged else err,
        )  # fmt: skip
        try:
            status = process.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            return None, _text(out), _text(err)
        except BaseException:
            process.kill()
            process.wait()
            raise
        return status, _text(out), _text(err)
