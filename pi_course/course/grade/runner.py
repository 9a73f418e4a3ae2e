"""One copy's check, bounded and sandboxed; a class of them in parallel; ``check --path`` on one copy.

Each copy is checked by the installed ``pi_course`` (``check 05 --json --assembled``) on a tree
:mod:`.assemble` built in a temporary folder, inside :mod:`.sandbox`'s runner, in its own process
group, with a time bound. Its output goes to files and only the check itself is waited for, so a
child it leaves holding the output open stalls nothing; the group (and, in bubblewrap, the whole
PID namespace) is stopped when the check ends.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import zipfile
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import IO, Any

from ...chapter.steps import FOCUSED_TEST
from ..record import CopyRecord, Status, in_order, nothing_ran, parse_record, record_line
from .archives import UnsafeArchive, extract, writable
from .assemble import NOT_SANDBOXED, Assembled, Instructor, assemble, instructor_copy
from .discovery import Source, find_tree
from .records import Graded, now
from .sandbox import Sandbox, choose, not_sandboxed_line
from .similarity import lesson_code

DEFAULT_TIMEOUT = 120.0  # seconds per copy; a finished copy needs a few
MAX_OUTPUT_CHARS = 1_000_000  # what is kept of a check's output (the file itself is bounded too)


def check_command(tree: Path, flags: Sequence[str] = ("--json",)) -> list[str]:
    """The command that checks one assembled tree: the installed ``check 05`` (``--json`` for grade)."""
    command = [sys.executable, "-m", "pi_course", "check", "05", *flags]
    return [*command, "--path", str(tree), "--assembled"]


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    """Stop the check and everything it started in its group (pytest, a probe, a learner's child)."""
    if os.name == "posix":
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
    else:  # pragma: no cover - Windows: the process itself (job objects would be needed for more)
        process.kill()


class Running:
    """The checks running now, so that Ctrl-C or SIGTERM in the main thread can stop them all at once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._processes: set[subprocess.Popen[bytes]] = set()
        self._stopping = False

    def start(
        self, command: list[str], cwd: Path, env: Mapping[str, str], out: IO[bytes], err: IO[bytes]
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
        """Stopped by Ctrl-C: what finishes now was cut short and is no row."""
        return self._stopping

    def done(self, process: subprocess.Popen[bytes]) -> None:
        with self._lock:
            self._processes.discard(process)

    def stop(self) -> None:
        with self._lock:
            self._stopping = True
            for process in self._processes:
                _kill_group(process)


def _text(file: IO[bytes]) -> str:
    file.seek(0)
    return file.read(MAX_OUTPUT_CHARS).decode("utf-8", "replace")


def run_bounded(
    command: list[str], cwd: Path, env: Mapping[str, str], timeout: float, running: Running | None = None
) -> tuple[int | None, str, str, float]:
    """Run ``command`` in a new process group; (return code or ``None`` past ``timeout``, out, err, s).

    The output goes to files and only the process is waited for; whatever it left in its group is
    stopped when it ends.
    """
    started = time.monotonic()
    running = running or Running()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        process = running.start(command, cwd, env, out, err)
        try:
            code: int | None = process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            code = None
        except BaseException:  # Ctrl-C: never leave a learner's process behind
            _kill_group(process)
            process.wait()
            raise
        finally:
            _kill_group(process)  # whatever the check left running in its group
            running.done(process)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=10)
        return code, _text(out), _text(err), time.monotonic() - started


def _source_tree(source: Source, scratch: Path, notes: list[str]) -> Path:
    """The learner's copy to read lesson files from: the folder itself, or the archive extracted."""
    if source.kind != "archive":
        tree = find_tree(source.path)
        if tree is None:
            raise UnsafeArchive(f"{source.path} 里没有（唯一的）练习副本")
        return tree
    skipped = extract(source.path, scratch / "extracted")
    if skipped:
        notes.append(f"没有解压的链接或特殊文件：{', '.join(skipped)}")
    tree = find_tree(scratch / "extracted")
    if tree is None:
        raise UnsafeArchive(f"压缩包 {source.path.name} 里没有练习副本（pi_course/ 和 tests/{FOCUSED_TEST}）")
    return tree


def _flags(assembled: Assembled, sandbox: Sandbox) -> list[str]:
    return [*assembled.flags, *([] if sandbox.sandboxed else [NOT_SANDBOXED])]


def grade_one(
    source: Source,
    instructor: Instructor,
    sandbox: Sandbox,
    timeout: float = DEFAULT_TIMEOUT,
    running: Running | None = None,
    command: Callable[[Path], list[str]] = check_command,
    environ: Mapping[str, str] | None = None,
    codes: dict[str, str] | None = None,
) -> Graded:
    """Check one copy: its lesson files in the instructor's tree, sandboxed and bounded; record and output.

    ``command`` is ``check 05 --json``: the record on stdout, and on stderr the full text a
    learner would read, which is the output kept for the HTML page.
    """
    started = time.monotonic()
    base_flags = [] if sandbox.sandboxed else [NOT_SANDBOXED]
    if source.kind == "not-a-copy":
        return Graded(_stopped(source, "not-a-copy", source.why, 0.0, base_flags), source.why or "")
    with tempfile.TemporaryDirectory(prefix="pi-course-grade-") as scratch:
        work = Path(scratch) / "run"  # the only folder the check may write to
        work.mkdir()
        notes: list[str] = []
        try:
            tree = _source_tree(source, Path(scratch), notes)
            if codes is not None:
                codes[source.name] = lesson_code(tree)
            assembled = assemble(tree, instructor, work / "copy")
        except (UnsafeArchive, OSError, zipfile.BadZipFile, tarfile.TarError) as error:
            why = str(error) if isinstance(error, UnsafeArchive) else f"无法读取 {source.path}：{error}"
            seconds = time.monotonic() - started
            return Graded(_stopped(source, "not-a-copy", why, seconds, base_flags), why)
        notes += assembled.notes
        wrapped = sandbox.command(command(assembled.tree), work)
        code, out, err, _ = run_bounded(wrapped, work, sandbox.environment(work, environ), timeout, running)
        seconds = time.monotonic() - started
        with contextlib.suppress(OSError):
            writable(Path(scratch))  # a learner's read-only files must not stop the clean-up
    flags = _flags(assembled, sandbox)
    if code is None:
        why = f"超过 {timeout:g} 秒没有结束，已停止（导入时的死循环，或一个不结束的测试进程）"
        output = "\n".join([*notes, why, err.rstrip(), out.rstrip()]).strip()
        return Graded(_stopped(source, "timeout", why, seconds, flags), output)
    record = parse_record(out)
    if record is None:
        last = (err.strip().splitlines() or ["（没有输出）"])[-1]
        why = f"check 没有给出记录（返回码 {code}）：{last}"
        output = "\n".join([*notes, err.rstrip(), out.rstrip()]).strip()
        return Graded(_stopped(source, "import-error", why, seconds, flags), output)
    if record["status"] == "import-error" and assembled.missing:  # name the file, not its importer
        record["first_failure"] = f"副本里没有 {'、'.join(assembled.missing)}：pi_course 无法导入。"
    record.update({"name": source.name, "path": str(source.path), "seconds": round(seconds, 2)})
    record.update({"flags": flags, "graded_at": now()})
    return Graded(in_order(record), "\n".join([*notes, err.rstrip()]).strip())


def _stopped(source: Source, status: Status, why: str | None, seconds: float, flags: list[str]) -> CopyRecord:
    """The record of a copy whose check gave none (stopped, not a copy), with grading's flags and time."""
    record = nothing_ran(source.name, source.path, status, why, seconds)
    record.update({"flags": flags, "graded_at": now()})
    return in_order(record)


def grade(
    sources: Sequence[Source],
    *,
    sandbox: Sandbox | None = None,
    jobs: int | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    command: Callable[[Path], list[str]] = check_command,
    environ: Mapping[str, str] | None = None,
    progress: Callable[[Graded], None] | None = None,
    codes: dict[str, str] | None = None,
) -> list[Graded]:
    """Grade every source, ``jobs`` at a time; the results in the order of ``sources``.

    On Ctrl-C (or SIGTERM made an exception) no new check starts, every running one is stopped
    with what it started, and the exception goes on: ``progress`` has seen every row finished.
    """
    workers = max(1, jobs or os.cpu_count() or 1)
    sandbox = sandbox or choose("auto")
    running = Running()
    with instructor_copy() as instructor:

        def one(source: Source) -> Graded:
            graded = grade_one(source, instructor, sandbox, timeout, running, command, environ, codes)
            if progress is not None and not running.stopping:
                progress(graded)
            return graded

        pool = ThreadPoolExecutor(max_workers=workers)
        try:
            futures = [pool.submit(one, source) for source in sources]
            return [future.result() for future in futures]
        except BaseException:
            running.stop()
            pool.shutdown(wait=True, cancel_futures=True)
            raise
        finally:
            pool.shutdown(wait=True)


def check_path(copy: Path, flags: Sequence[str], *, sandbox_name: str = "auto", as_json: bool = False) -> int:
    """``check 05 --path COPY``: the copy's lesson files checked with the installed course's tests.

    The check's text and exit status are the inner ``check``'s; its record (``--json``) names the
    copy and carries the flags; the flags' lines go to stderr before it.
    """
    sandbox = choose(sandbox_name)
    source = Source(copy.name, copy, "folder")
    with instructor_copy() as instructor, tempfile.TemporaryDirectory(prefix="pi-course-check-") as scratch:
        work = Path(scratch) / "run"
        work.mkdir()
        assembled = assemble(copy, instructor, work / "copy")
        inner = check_command(assembled.tree, flags)
        wrapped = sandbox.command(inner, work)
        code, out, err, _ = run_bounded(wrapped, work, sandbox.environment(work), DEFAULT_TIMEOUT)
        with contextlib.suppress(OSError):
            writable(Path(scratch))
    if not sandbox.sandboxed:
        print(not_sandboxed_line(sandbox), file=sys.stderr)
    for note in assembled.notes:
        print(note, file=sys.stderr)
    if code is None:
        print(f"check 05：超过 {DEFAULT_TIMEOUT:g} 秒没有结束，已停止。", file=sys.stderr)
        return 1
    if as_json:
        record = parse_record(out)
        if record is not None:
            record.update({"name": source.name, "path": str(copy), "flags": _flags(assembled, sandbox)})
            out = record_line(record) + "\n"
    sys.stderr.write(err)
    sys.stdout.write(out)
    return code
