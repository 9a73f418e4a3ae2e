"""A class of copies checked in parallel: each one's source found, extracted, run by :mod:`..checker.copyrun`.

Each copy is checked by the installed ``pi_course`` (``check 05 --json --assembled``) on a tree
built in a temporary folder, sandboxed and bounded (:func:`..checker.copyrun.run_copy`); its record is
read back from the check's last line, with the flags grading adds and the time it was graded.
"""

from __future__ import annotations

import contextlib
import os
import tarfile
import tempfile
import time
import zipfile
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from ...chapter.steps import FOCUSED_TEST
from ..checker.copyrun import DEFAULT_TIMEOUT, assembled_check, run_copy, writable
from ..checker.record import CopyRecord, Status, in_order, nothing_ran, parse_record
from ..copies.assemble import Instructor, instructor_copy
from ..oserrors import reason
from ..running.process import Running
from ..running.sandbox import NOT_SANDBOXED, Sandbox, choose
from .archives import UnsafeArchive, extract
from .discovery import Source, find_tree
from .records import Graded, now
from .similarity import lesson_code

__all__ = ["DEFAULT_TIMEOUT", "grade", "grade_one"]


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


def grade_one(
    source: Source,
    instructor: Instructor,
    sandbox: Sandbox,
    timeout: float = DEFAULT_TIMEOUT,
    running: Running | None = None,
    command: Callable[[Path], list[str]] = assembled_check,
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
        notes: list[str] = []
        try:
            tree = _source_tree(source, Path(scratch), notes)
            if codes is not None:
                codes[source.name] = lesson_code(tree)
            ran = run_copy(
                tree, instructor, sandbox, timeout=timeout, command=command, running=running, environ=environ
            )
        except (UnsafeArchive, OSError, zipfile.BadZipFile, tarfile.TarError) as error:
            why = (
                str(error) if isinstance(error, UnsafeArchive) else f"无法读取 {source.path}：{reason(error)}"
            )
            seconds = time.monotonic() - started
            return Graded(_stopped(source, "not-a-copy", why, seconds, base_flags), why)
        finally:
            with contextlib.suppress(OSError):
                writable(Path(scratch))
    seconds = time.monotonic() - started
    notes += ran.assembled.notes
    flags = list(ran.flags)
    out, err = ran.out, ran.err
    if ran.status is None:
        why = f"超过 {timeout:g} 秒没有结束，已停止（导入时的死循环，或一个不结束的测试进程）"
        output = "\n".join([*notes, why, err.rstrip(), out.rstrip()]).strip()
        return Graded(_stopped(source, "timeout", why, seconds, flags), output)
    record = parse_record(out)
    if record is None:
        last = (err.strip().splitlines() or ["（没有输出）"])[-1]
        why = f"check 没有给出记录（返回码 {ran.status}）：{last}"
        output = "\n".join([*notes, err.rstrip(), out.rstrip()]).strip()
        return Graded(_stopped(source, "import-error", why, seconds, flags), output)
    if record["status"] == "import-error" and ran.assembled.missing:  # name the file, not its importer
        record["first_failure"] = f"副本里没有 {'、'.join(ran.assembled.missing)}：pi_course 无法导入。"
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
    command: Callable[[Path], list[str]] = assembled_check,
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
