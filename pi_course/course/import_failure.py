"""A ``pi_course`` that does not import, said in one line: where, what, and the next step.

The same line wherever the failure is found: by ``python -m pi_course`` itself (the excepthook
that ``pi_course/__init__.py`` installs), by ``check``'s probe, or by pytest's collection. This
module is small and imports nothing from the lesson: the package imports it before its own
modules, for the course's command line only.
"""

from __future__ import annotations

import re
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

PACKAGE = Path(__file__).resolve().parents[1]  # the pi_course package this module belongs to
CHECK_COMMAND = "python -m pi_course check 05"
CONSOLE_SCRIPT = "pi-course"  # [project.scripts] in pyproject.toml

# A traceback's location line: Python's (`File "…", line N`) or pytest's short form (`x.py:N: in`).
LOCATION = re.compile(
    r'^(?:E\s+)?\s*(?:File "(?P<file>[^"]+)", line (?P<line>\d+)'
    r'|(?P<short>[^\s"<>][^"<>]*?\.py):(?P<short_line>\d+): in )'
)
ERROR_LINE = re.compile(r"^(?:E\s+)?(?P<error>[A-Za-z_][\w.]*(?:Error|Exception|Warning)(?::.*)?)$")
_NO_MODULE = re.compile(r"^ModuleNotFoundError: No module named '(?P<name>[^']+)'")


def import_failure_line(error: str, where: tuple[str, int] | None = None) -> str:
    """The one line for a pi_course that does not import.

    ``error`` is the exception's last line (``SyntaxError: expected ':'``); ``where`` the file
    relative to the tree (``pi_course/sse.py``) and line, when it is inside ``pi_course/``.
    """
    missing = _NO_MODULE.match(error)
    if missing and missing["name"].split(".")[0] != "pi_course":  # a dependency, not the lesson
        place = f"（{where[0]} 第 {where[1]} 行要用它）" if where else ""
        return (
            f"pi_course 无法导入：没有安装 {missing['name']}{place}。下一步：用安装了 pi-course[lab] 的 "
            f"Python 运行（先激活它的虚拟环境，例如 source .venv/bin/activate），再运行 {CHECK_COMMAND}。"
        )
    if where is None:
        return f"pi_course 无法导入：{error}。下一步：改好它，再运行 {CHECK_COMMAND}。"
    return (
        f"{where[0]} 第 {where[1]} 行：{error}（pi_course 无法导入）。"
        f"下一步：改好这一行，再运行 {CHECK_COMMAND}。"
    )


def within_package(file: str, root: Path) -> str | None:
    """``file`` relative to ``root`` (``pi_course/sse.py``) when it lies in ``root/pi_course``."""
    path = Path(file) if Path(file).is_absolute() else root / file
    try:
        path, root = path.resolve(), root.resolve()
    except OSError:
        return None
    return path.relative_to(root).as_posix() if path.is_relative_to(root / "pi_course") else None


def blames_the_package(text: str, root: Path) -> bool:
    """A traceback (as text) that runs through a file of ``root/pi_course``."""
    return any(
        (found := LOCATION.match(line)) is not None
        and within_package(found["file"] or found["short"], root) is not None
        for line in text.splitlines()
    )


def import_failure_from_text(text: str, root: Path) -> str:
    """The one line from a traceback as text: a probe's stderr or pytest's collection error."""
    error = "（没有输出）"
    where: tuple[str, int] | None = None
    for line in text.strip().splitlines():
        location = LOCATION.match(line)
        if location:
            file, number = location["file"] or location["short"], location["line"] or location["short_line"]
            inside = within_package(file, root)
            if inside is not None:
                where = (inside, int(number))
            continue
        found = ERROR_LINE.match(line)
        if found:
            error = found["error"].strip()
    return import_failure_line(error, where)


def exception_failure_line(error: BaseException, package: Path = PACKAGE) -> str:
    """The same one line from the exception itself (the excepthook below)."""
    root = package.parent
    where: tuple[str, int] | None = None
    for frame, number in traceback.walk_tb(error.__traceback__):
        inside = within_package(frame.f_code.co_filename, root)
        if inside is not None:
            where = (inside, number)
    if isinstance(error, SyntaxError) and error.filename and error.lineno:
        inside = within_package(error.filename, root)
        if inside is not None:
            where = (inside, error.lineno)
    last = traceback.format_exception_only(type(error), error)[-1].strip()
    return import_failure_line(last, where)


def running_module(argv: list[str]) -> str | None:
    """The module of ``python [options] -m MODULE ...``; ``None`` for a script or ``-c``."""
    options_with_a_value = {"-W", "-X", "--check-hash-based-pycs"}
    index = 1
    while index < len(argv):
        token = argv[index]
        if token == "-m":
            return argv[index + 1] if index + 1 < len(argv) else None
        if token.startswith("-m"):
            return token[2:]
        if token == "-c" or token == "-" or not token.startswith("-"):
            return None
        index += 2 if token in options_with_a_value else 1
    return None


def is_course_cli(orig_argv: list[str] | None = None, argv: list[str] | None = None) -> bool:
    """``python -m pi_course …`` or the ``pi-course`` script: the course's command line is running."""
    orig_argv = list(getattr(sys, "orig_argv", [])) if orig_argv is None else orig_argv
    argv = sys.argv if argv is None else argv
    module = running_module(orig_argv)
    if module is not None:
        return module == "pi_course" or module.startswith("pi_course.")
    return bool(argv) and Path(argv[0]).stem == CONSOLE_SCRIPT


def importing_the_package(tb: TracebackType | None, package: Path = PACKAGE) -> bool:
    """The traceback runs through ``pi_course/__init__.py``'s module code: importing it failed."""
    init = (package / "__init__.py").resolve()
    return any(
        frame.f_code.co_name == "<module>" and Path(frame.f_code.co_filename).resolve() == init
        for frame, _ in traceback.walk_tb(tb)
    )


def _to_stderr(line: str) -> None:
    print(line, file=sys.stderr)


def report_import_failures_in_one_line() -> None:
    """In the course's command line: a ``pi_course`` that does not import is one line, exit 1.

    ``pi_course/__init__.py`` calls this before it imports the lesson modules. Only when the
    course's command line is running, it installs an ``excepthook`` for exceptions raised while
    importing the package; every other exception, and every other process (notebooks, pytest,
    ``import pi_course``), keeps Python's traceback.
    """
    if not is_course_cli():
        return
    previous = sys.excepthook
    say: Callable[[str], None] = _to_stderr
    if sys.argv[1:2] == ["check"]:  # check's own way to say it: its verdict, or its --json record
        try:
            from .check import import_failure_teller  # imports no lesson module

            say = import_failure_teller(sys.argv[1:], PACKAGE.parent)
        except Exception:  # the tooling itself is broken: the plain line still helps
            pass

    def hook(kind: type[BaseException], error: BaseException, tb: TracebackType | None) -> None:
        if isinstance(error, Exception) and importing_the_package(tb):
            say(exception_failure_line(error))
        else:
            previous(kind, error, tb)

    sys.excepthook = hook
