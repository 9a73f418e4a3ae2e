"""A ``pi_course`` that does not import, said in one line: where, what, and the next step.

The same line wherever the failure is found: by the command line's ``chat`` and ``serve`` (which
import the lesson, :func:`lesson_imported`), by ``check``'s red light, or by pytest's collection.
"""

from __future__ import annotations

import contextlib
import importlib
import re
import sys
import traceback
from pathlib import Path
from types import FrameType

from ..copies.locate import PACKAGE
from ..copies.pythons import course_python, use_instead
from ..edition import CHECK_COMMAND, IN_A_TAB
from .plugin_path.pi_course_check.alarm import alarm

IMPORT_BOUND = 20.0  # seconds for the command line to import pi_course; it needs about one

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
        if IN_A_TAB:
            return f"pi_course 无法导入：没有安装 {missing['name']}{place}。"
        fix = use_instead(course_python(PACKAGE.parent), _command_run())
        return f"pi_course 无法导入：这个 Python（{sys.executable}）没有安装 {missing['name']}{place}。{fix}"
    if where is None:
        return f"pi_course 无法导入：{error}。下一步：改好它，再运行 {CHECK_COMMAND}。"
    return (
        f"{where[0]} 第 {where[1]} 行：{error}（pi_course 无法导入）。"
        f"下一步：改好这一行，再运行 {CHECK_COMMAND}。"
    )


def _command_run() -> str:
    """The ``-m pi_course …`` command this process runs (``chat``, ``serve``), else ``check 05``'s."""
    main = Path(sys.argv[0]) if sys.argv else Path()
    if main.name == "__main__.py" and main.parent.name == "pi_course":
        return " ".join(["-m pi_course", *sys.argv[1:]])
    return CHECK_COMMAND.removeprefix("python ")


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
    """The one line from a traceback as text: the red light's stderr or pytest's collection error."""
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
        if frame.f_code.co_filename == __file__:
            continue  # the import bound's own alarm handler: the stuck line is the frame before it
        inside = within_package(frame.f_code.co_filename, root)
        if inside is not None:
            where = (inside, number)
    if isinstance(error, SyntaxError) and error.filename and error.lineno:
        inside = within_package(error.filename, root)
        if inside is not None:
            where = (inside, error.lineno)
    last = traceback.format_exception_only(type(error), error)[-1].strip()
    return import_failure_line(last, where)


def lesson_imported(seconds: float = IMPORT_BOUND) -> str | None:
    """Import every public name of the running ``pi_course``: ``None``, or the one line saying why not.

    A module that loops forever at its top level is stopped after ``seconds`` (where the platform
    has ``SIGALRM``), at the line where it is stuck.
    """
    try:
        with _import_bound(seconds):
            package = importlib.import_module("pi_course")
            for name in package.__all__:
                getattr(package, name)
    except Exception as error:
        if not importing_a_module(error):
            raise
        return exception_failure_line(error)
    return None


def importing_a_module(error: BaseException, package: Path = PACKAGE) -> bool:
    """A module of ``package`` failed to import: its source does not compile, or its top level raised."""
    root = package.resolve()
    if isinstance(error, SyntaxError) and error.filename:
        return Path(error.filename).resolve().is_relative_to(root)
    return any(
        frame.f_code.co_name == "<module>" and Path(frame.f_code.co_filename).resolve().is_relative_to(root)
        for frame, _ in traceback.walk_tb(error.__traceback__)
    )


def _import_bound(seconds: float, package: Path = PACKAGE) -> contextlib.AbstractContextManager[None]:
    """Stop an import of the package that never ends (a loop at a module's top level), where it is stuck."""
    root = package.resolve()

    def stuck(signum: int, frame: FrameType | None) -> None:
        while frame is not None:
            code = frame.f_code
            if code.co_name == "<module>" and Path(code.co_filename).resolve().is_relative_to(root):
                raise TimeoutError(
                    f"import pi_course 超过 {seconds:g} 秒没有结束——模块顶层（函数之外）的代码进入了"
                    "不会结束的循环（或在等待）"
                )
            frame = frame.f_back

    return alarm(seconds, stuck)
