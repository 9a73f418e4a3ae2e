"""``python -m pi_course grade 05 PATH...``: a class of practice copies at a glance.

A learner's copy is untrusted code, so each one is checked the same careful way:

* on a **temporary copy** of it (a folder is copied, an archive is extracted there), so the
  instructor's originals are only ever read;
* in its **own process group** (``python -m pi_course check 05 --json --path <copy>`` of the
  instructor's ``pi_course``), killed as a whole when it runs past the time bound, which also
  covers a learner module that loops forever while it is imported;
* with an **environment scrubbed** to a short allow-list: no provider settings, API keys or
  tokens of the instructor's reach the learner's code.

Copies run in parallel (``--jobs``, default: the CPU count). Each gives one record, the same
record as ``check 05 --json``; ``grade_report`` turns the records into a terminal table, JSON, CSV
and one self-contained HTML page.

This bounds time and protects the originals and the secrets in the environment; it is not a
sandbox. Learner code runs as the instructor's user and can read what that user can read.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import zipfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO, Any

from ..chapter.steps import CHAPTER_TOTAL, FOCUSED_TEST, STEPS

PACKAGE = Path(__file__).resolve().parents[1]  # the instructor's pi_course, which runs every check
STATUSES = ("done", "incomplete", "import-error", "timeout", "not-a-copy")
DEFAULT_TIMEOUT = 120.0  # seconds per copy; a finished copy needs a few
ARCHIVE_SUFFIXES = (".zip", ".tar.gz", ".tgz")
# What a copy of a learner's folder leaves out: version control, environments, caches.
SKIPPED = frozenset(
    {".git", ".hg", ".venv", "venv", "node_modules", "__pycache__", ".ipynb_checkpoints", ".pytest_cache",
     ".mypy_cache", ".ruff_cache", "__MACOSX"}
)  # fmt: skip
MAX_ARCHIVE_BYTES = 200 * 1024 * 1024  # extracted size; a practice copy is well under 10 MB
MAX_ARCHIVE_MEMBERS = 20_000

# The only variables of the instructor's environment a check sees: where programs and the user's
# packages are, the locale and the temporary folder. Everything else (PI_COURSE_*, OPENAI_*,
# *_API_KEY, *_TOKEN, cloud credentials, PYTHONPATH …) stays behind.
KEPT_VARIABLES = frozenset(
    {"PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TZ", "TMPDIR", "TEMP", "TMP",
     "SYSTEMROOT", "SYSTEMDRIVE", "WINDIR", "COMSPEC", "PATHEXT", "USERPROFILE", "APPDATA",
     "LOCALAPPDATA", "VIRTUAL_ENV", "CONDA_PREFIX"}
)  # fmt: skip
# Never kept, whatever its name starts with: anything that looks like a secret or a provider setting.
SECRET_NAME = re.compile(
    r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH|^PI_COURSE_|^OPENAI_", re.IGNORECASE
)


class GradeError(Exception):
    """A PATH that cannot be graded at all (it does not exist); the message is one line."""


class UnsafeArchive(Exception):
    """An archive that would write outside its folder (or is far too large): nothing is extracted."""


@dataclass(frozen=True)
class Source:
    """One thing to grade: a copy's folder, an archive of one, or something that is not a copy."""

    name: str
    path: Path
    kind: str  # "folder" | "archive" | "not-a-copy"
    why: str | None = None  # for "not-a-copy": the one line saying why


@dataclass(frozen=True)
class Graded:
    """The record of one copy (the contract's fields) and the full output of its check."""

    record: dict[str, Any]
    output: str


# --- finding the copies ---------------------------------------------------------------------------


def looks_like_a_copy(folder: Path) -> bool:
    """``pi_course/__init__.py`` beside ``tests/test_05_provider_adapter.py``: a tree check can test."""
    return (folder / "pi_course" / "__init__.py").is_file() and (folder / "tests" / FOCUSED_TEST).is_file()


def is_archive(path: Path) -> bool:
    return path.is_file() and path.name.lower().endswith(ARCHIVE_SUFFIXES)


def archive_stem(name: str) -> str:
    lowered = name.lower()
    for suffix in ARCHIVE_SUFFIXES:
        if lowered.endswith(suffix):
            return name[: -len(suffix)]
    return name


def _visible(path: Path) -> bool:
    return not path.name.startswith(".") and path.name not in SKIPPED and not path.is_symlink()


def find_tree(folder: Path, depth: int = 2) -> Path | None:
    """The copy at ``folder`` or in its only subfolder, down to ``depth`` (a GitHub download's
    ``repo-main/``, a clone inside a learner's folder)."""
    if looks_like_a_copy(folder):
        return folder
    if depth == 0:
        return None
    subfolders = [child for child in folder.iterdir() if child.is_dir() and _visible(child)]
    if len(subfolders) != 1:
        return None
    return find_tree(subfolders[0], depth - 1)


def _not_a_copy(path: Path, name: str | None = None) -> Source:
    why = (
        f"不是练习副本：{path} 里没有 pi_course/__init__.py 和 tests/{FOCUSED_TEST}"
        "（python -m pi_course practice 05 DIR 创建的目录，或它的 .zip / .tar.gz）"
    )
    return Source(name or path.name, path, "not-a-copy", why)


def discover(paths: Sequence[str | Path]) -> list[Source]:
    """What each PATH holds: a copy, an archive of one, or a folder of copies and archives.

    In a folder of copies every visible subfolder and archive is one learner; a subfolder that is
    not a copy is reported as ``not-a-copy`` rather than silently left out.
    """
    missing = [str(path) for path in paths if not Path(path).expanduser().exists()]
    if missing:
        raise GradeError(f"grade 05：这些路径不存在：{'、'.join(missing)}。没有检查任何副本。")
    sources: list[Source] = []
    for given in paths:
        path = Path(given).expanduser().absolute()
        if path.is_dir():
            tree = find_tree(path, depth=0)
            if tree is not None:
                sources.append(Source(path.name, path, "folder"))
                continue
            found = [_source(child) for child in sorted(path.iterdir()) if _visible(child)]
            inside = [source for source in found if source is not None]
            if any(source.kind != "not-a-copy" for source in inside):
                sources += inside
            else:
                sources.append(_not_a_copy(path))
        elif is_archive(path):
            sources.append(Source(archive_stem(path.name), path, "archive"))
        else:
            sources.append(_not_a_copy(path))
    return sources


def _source(child: Path) -> Source | None:
    if child.is_dir():
        return Source(child.name, child, "folder") if find_tree(child) else _not_a_copy(child)
    if is_archive(child):
        return Source(archive_stem(child.name), child, "archive")
    return None  # a loose file beside the copies (a roster, a README): not a learner


# --- a temporary copy of it -------------------------------------------------------------------------


def _ignored(folder: str, names: list[str]) -> set[str]:
    """Leave out caches and environments, and every symbolic link (it could lead anywhere)."""
    return {name for name in names if name in SKIPPED or os.path.islink(os.path.join(folder, name))}


def copy_folder(source: Path, destination: Path) -> Path:
    """Copy the learner's copy (found at or below ``source``) to ``destination``; return it."""
    tree = find_tree(source)
    if tree is None:
        raise UnsafeArchive(_not_a_copy(source).why or "")
    shutil.copytree(tree, destination, ignore=_ignored)
    return destination


def _member_path(name: str) -> PurePosixPath | None:
    """The member's relative path, or ``None`` when it would land outside the extraction folder."""
    normal = name.replace("\\", "/")
    if normal.startswith("/") or re.match(r"^[A-Za-z]:", normal):
        return None
    parts = [part for part in normal.split("/") if part not in ("", ".")]
    if any(part == ".." for part in parts):
        return None
    return PurePosixPath(*parts) if parts else PurePosixPath(".")


class _Budget:
    """Counts what an extraction writes, so a small archive cannot fill the disk."""

    def __init__(self) -> None:
        self.bytes = 0
        self.members = 0

    def member(self) -> None:
        self.members += 1
        if self.members > MAX_ARCHIVE_MEMBERS:
            raise UnsafeArchive(f"压缩包里的文件超过 {MAX_ARCHIVE_MEMBERS} 个，没有解压")

    def write(self, stream: IO[bytes], target: Path) -> None:
        target.parent.mkdir(parents=True, exist_ok=True)
        with target.open("wb") as out:
            while block := stream.read(1 << 16):
                self.bytes += len(block)
                if self.bytes > MAX_ARCHIVE_BYTES:
                    raise UnsafeArchive(f"压缩包解压后超过 {MAX_ARCHIVE_BYTES // 2**20} MB，没有解压")
                out.write(block)


def _checked_names(names: Iterable[str]) -> None:
    for name in names:
        if _member_path(name) is None:
            raise UnsafeArchive(f"压缩包里有指向解压目录之外的路径 {name!r}，整个压缩包没有解压")


def extract(archive: Path, destination: Path) -> list[str]:
    """Extract a .zip or .tar.gz safely into ``destination``; return the members left out.

    Any member whose path is absolute or climbs out (``..``) refuses the whole archive. Only
    regular files and folders are written: symbolic and hard links, devices and pipes are left
    out (and named), so nothing can point outside. Sizes are counted as they are written.
    """
    destination.mkdir(parents=True, exist_ok=True)
    budget = _Budget()
    skipped: list[str] = []
    with contextlib.ExitStack() as stack:
        entries = _entries(archive, stack)
        _checked_names(name for name, _, _ in entries)
        for name, kind, open_member in entries:
            budget.member()
            relative = _member_path(name)
            assert relative is not None
            if kind == "dir":
                (destination / relative).mkdir(parents=True, exist_ok=True)
            elif kind == "file":
                with open_member() as stream:
                    budget.write(stream, destination / relative)
            else:
                skipped.append(name)
    return skipped


_Entry = tuple[str, str, Callable[[], IO[bytes]]]  # name, "dir" | "file" | "other", how to read it


def _entries(archive: Path, stack: contextlib.ExitStack) -> list[_Entry]:
    """The members of a .zip or a tar archive, each with its kind, read lazily."""
    if archive.name.lower().endswith(".zip"):
        zipped = stack.enter_context(zipfile.ZipFile(archive))

        def zip_kind(info: zipfile.ZipInfo) -> str:
            mode = info.external_attr >> 16  # a Unix zip stores a symbolic link's type here
            return "dir" if info.is_dir() else "file" if not mode or stat.S_ISREG(mode) else "other"

        members = zipped.infolist()
        return [(info.filename, zip_kind(info), functools.partial(zipped.open, info)) for info in members]
    tarred = stack.enter_context(tarfile.open(archive, "r:*"))  # noqa: SIM115 (the stack closes it)

    def tar_member(member: tarfile.TarInfo) -> IO[bytes]:
        stream = tarred.extractfile(member)
        assert stream is not None
        return stream

    return [
        (member.name, "dir" if member.isdir() else "file" if member.isreg() else "other",
         functools.partial(tar_member, member))
        for member in tarred.getmembers()
    ]  # fmt: skip


# --- one check, bounded ---------------------------------------------------------------------------


def scrubbed_environment(environ: dict[str, str] | None = None) -> dict[str, str]:
    """The environment a learner's check runs with: the allow-list, minus anything secret-looking."""
    source = dict(os.environ if environ is None else environ)
    env = {
        name: value
        for name, value in source.items()
        if (name in KEPT_VARIABLES or name.startswith("LC_")) and not SECRET_NAME.search(name)
    }
    # The instructor's pi_course runs the check (found even when it is not installed, a clone),
    # and bytecode never lands in the temporary copy.
    env["PYTHONPATH"] = str(PACKAGE.parent)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["PYTHONIOENCODING"] = "utf-8"
    return env


def check_command(copy: Path) -> list[str]:
    """The command that checks one temporary copy: the instructor's ``check 05 --json``."""
    return [sys.executable, "-m", "pi_course", "check", "05", "--json", "--path", str(copy)]


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    """Stop the check and everything it started (pytest, a probe, a learner's stray child)."""
    if os.name == "posix":
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
    else:  # pragma: no cover - Windows: the process itself (job objects would be needed for more)
        process.kill()


class _Running:
    """The checks running now, so that Ctrl-C in the main thread can stop them all at once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._processes: set[subprocess.Popen[bytes]] = set()
        self._stopping = False

    def start(self, command: list[str], cwd: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
        options: dict[str, Any] = {"start_new_session": True} if os.name == "posix" else {}
        with self._lock:
            if self._stopping:
                raise KeyboardInterrupt
            process = subprocess.Popen(
                command, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, **options,
            )  # fmt: skip
            self._processes.add(process)
        return process

    def done(self, process: subprocess.Popen[bytes]) -> None:
        with self._lock:
            self._processes.discard(process)

    def stop(self) -> None:
        with self._lock:
            self._stopping = True
            for process in self._processes:
                _kill_group(process)


def run_bounded(
    command: list[str], cwd: Path, env: dict[str, str], timeout: float, running: _Running | None = None
) -> tuple[int | None, str, str, float]:
    """Run ``command`` in a new process group; (return code or ``None`` past ``timeout``, out, err, s)."""
    started = time.monotonic()
    running = running or _Running()
    process = running.start(command, cwd, env)
    try:
        out, err = process.communicate(timeout=timeout)
        code: int | None = process.returncode
    except subprocess.TimeoutExpired:
        _kill_group(process)
        out, err = process.communicate()
        code = None
    except BaseException:  # Ctrl-C: never leave a learner's process behind
        _kill_group(process)
        process.wait()
        raise
    finally:
        running.done(process)
    _kill_group(process)  # whatever the check left running
    seconds = time.monotonic() - started
    return code, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"), seconds


def empty_record(
    name: str, path: Path, status: str, first_failure: str | None, seconds: float
) -> dict[str, Any]:
    """A record for a copy whose check gave none (stopped, not a copy): nothing passed."""
    return {
        "name": name,
        "path": str(path),
        "status": status,
        "focused": {step.number: [0, step.expected] for step in STEPS},
        "focused_passed": 0,
        "focused_total": CHAPTER_TOTAL,
        "beyond_passed": 0,
        "beyond_total": 0,
        "first_failure": first_failure,
        "seconds": round(seconds, 2),
    }


def parse_record(stdout: str) -> dict[str, Any] | None:
    """The record ``check --json`` printed: its last line, a JSON object with a known status."""
    lines = stdout.strip().splitlines()
    try:
        value = json.loads(lines[-1]) if lines else None
    except ValueError:
        return None
    return value if isinstance(value, dict) and value.get("status") in STATUSES else None


CONTRACT_FIELDS = (
    "name", "path", "status", "focused", "focused_passed", "focused_total", "beyond_passed", "beyond_total",
    "first_failure", "seconds",
)  # fmt: skip


def grade_one(
    source: Source,
    timeout: float = DEFAULT_TIMEOUT,
    command: Callable[[Path], list[str]] = check_command,
    environ: dict[str, str] | None = None,
    running: _Running | None = None,
) -> Graded:
    """Check one copy on a temporary copy of it, bounded and scrubbed; its record and output.

    ``command`` is ``check 05 --json``: the record on stdout, and on stderr the full text a
    learner would read, which is the output kept for the HTML page.
    """
    started = time.monotonic()
    if source.kind == "not-a-copy":
        return Graded(empty_record(source.name, source.path, "not-a-copy", source.why, 0.0), source.why or "")
    env = scrubbed_environment(environ)
    with tempfile.TemporaryDirectory(prefix="pi-course-grade-") as scratch:
        work = Path(scratch)
        notes: list[str] = []
        try:
            copy = _temporary_copy(source, work, notes)
        except (UnsafeArchive, OSError, zipfile.BadZipFile, tarfile.TarError) as error:
            why = str(error) if isinstance(error, UnsafeArchive) else f"无法读取 {source.path}：{error}"
            seconds = time.monotonic() - started
            return Graded(empty_record(source.name, source.path, "not-a-copy", why, seconds), why)
        code, out, err, _ = run_bounded(command(copy), work, env, timeout, running)
        seconds = time.monotonic() - started
        with contextlib.suppress(OSError):
            _writable(work)  # a learner's read-only files must not stop the clean-up
    if code is None:
        why = f"超过 {timeout:g} 秒没有结束，已停止（导入时的死循环，或一个不结束的测试进程）"
        output = "\n".join([*notes, why, err.rstrip(), out.rstrip()]).strip()
        return Graded(empty_record(source.name, source.path, "timeout", why, seconds), output)
    record = parse_record(out)
    if record is None:
        last = (err.strip().splitlines() or ["（没有输出）"])[-1]
        why = f"check 没有给出记录（返回码 {code}）：{last}"
        output = "\n".join([*notes, err.rstrip(), out.rstrip()]).strip()
        return Graded(empty_record(source.name, source.path, "import-error", why, seconds), output)
    shaped = {key: record.get(key) for key in CONTRACT_FIELDS}
    shaped.update(name=source.name, path=str(source.path), seconds=round(seconds, 2))
    return Graded(shaped, "\n".join([*notes, err.rstrip()]).strip())


def _temporary_copy(source: Source, work: Path, notes: list[str]) -> Path:
    """The copy to check, inside ``work``: the folder copied, or the archive extracted."""
    if source.kind != "archive":
        return copy_folder(source.path, work / "copy")
    skipped = extract(source.path, work / "extracted")
    if skipped:
        notes.append(f"没有解压的链接或特殊文件：{', '.join(skipped)}")
    tree = find_tree(work / "extracted")
    if tree is None:
        raise UnsafeArchive(f"压缩包 {source.path.name} 里没有练习副本（pi_course/ 和 tests/{FOCUSED_TEST}）")
    return tree


def _writable(folder: Path) -> None:
    for root, folders, files in os.walk(folder):
        for name in folders + files:
            path = Path(root) / name
            if not path.is_symlink():
                path.chmod(path.stat().st_mode | stat.S_IWUSR | stat.S_IRUSR | stat.S_IXUSR)


def grade(
    sources: Sequence[Source],
    *,
    jobs: int | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    command: Callable[[Path], list[str]] = check_command,
    environ: dict[str, str] | None = None,
    progress: Callable[[Graded], None] | None = None,
) -> list[Graded]:
    """Grade every source, ``jobs`` at a time; the results in the order of ``sources``."""
    workers = max(1, jobs or os.cpu_count() or 1)
    running = _Running()

    def one(source: Source) -> Graded:
        graded = grade_one(source, timeout, command, environ, running)
        if progress is not None:
            progress(graded)
        return graded

    pool = ThreadPoolExecutor(max_workers=workers)
    try:
        futures = [pool.submit(one, source) for source in sources]
        return [future.result() for future in futures]
    except BaseException:  # Ctrl-C: no new check starts, and every running one is stopped now
        running.stop()
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    finally:
        pool.shutdown(wait=True)


def unfinished_first(results: Iterable[Graded]) -> Iterator[Graded]:
    """Unfinished copies first (the worst first), then the finished ones; by name within."""
    order = {
        status: index for index, status in enumerate(("import-error", "timeout", "not-a-copy", "incomplete"))
    }

    def key(graded: Graded) -> tuple[int, int, str]:
        record = graded.record
        rank = order.get(str(record["status"]), len(order))
        return rank, int(record.get("focused_passed") or 0), str(record["name"])

    return iter(sorted(results, key=key))
