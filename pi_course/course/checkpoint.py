"""Run chapter 05's focused tests and report them per practice step (``check``, notebooks).

The tests run in a fresh ``python -m pytest`` process with the chosen tree first on
``sys.path``, so a practice copy is tested as it is on disk, and a notebook kernel's own event
loop and imports are never involved.

Two sets of tests, counted apart:

* the course's 11 focused tests (``tests/test_05_provider_adapter.py``), reported per practice
  step exactly as the chapter counts them (1/1, 3/3, 5/5, 2/2, 11/11);
* the checks "beyond the chapter" (``tests/test_05_beyond.py``): what the focused tests do not
  exercise but a real provider, the notebooks and the local provider need.

``python -m pi_course check 05`` runs both and succeeds only when both pass; ``--course-only``
or ``--step`` runs the focused tests alone. ``check()`` from Python (the notebooks' checkpoint
cells) runs the focused tests alone unless ``beyond=True``, so a step's checkpoint cell reports
the course's count and nothing else.

Nothing here can hang: every test has a time bound (``tests/conftest.py`` applies it, set by
``TEST_TIMEOUT``) and the whole pytest process has one too (``RUN_TIMEOUT``).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import traceback
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from ..chapter.steps import BEYOND_TEST, CHAPTER_TOTAL, FOCUSED_TEST, STEPS, Step
from . import inkernel

PACKAGE = Path(__file__).resolve().parents[1]  # the pi_course package this module belongs to

TEST_TIMEOUT = 5.0  # seconds per test; a correct solution needs milliseconds
RUN_TIMEOUT = 90.0  # seconds for the whole pytest process, whatever happens inside it
WIDTH = 110  # longest value shown in full on one line


@dataclass(frozen=True)
class Detail:
    """What the test process found out about one failing test (see ``tests/conftest.py``)."""

    message: str = ""  # the report's "E" lines
    timeout: float | None = None  # the bound the test ran past
    difference: dict[str, Any] | None = None  # first difference of the failing ==
    error_messages: tuple[str, ...] = ()  # error_message of the error events the test saw
    where: str | None = None  # innermost pi_course line on the traceback
    assertion: str | None = None  # the failing source line of the test
    label: str | None = None  # a beyond check's name (its docstring's first line)
    hint: str | None = None  # a beyond check's "下一步：" line
    never_awaits: bool = False  # past the bound inside code that never awaited (stopped by SIGALRM)


@dataclass(frozen=True)
class Report:
    """Per-step pass counts, or the one message that stopped the tests from being collected."""

    passed: dict[str, int]
    red_light: str | None = None
    failures: tuple[tuple[str, str], ...] = ()  # (test name, the report's "E" lines), focused tests
    details: dict[str, Detail] = field(default_factory=dict)  # by test name, focused and beyond
    beyond: tuple[tuple[str, bool], ...] | None = None  # (test name, passed); None: not run
    beyond_note: str | None = None  # why the beyond checks did not run
    stopped: str | None = None  # the run did not finish: why
    output: str = ""  # pytest's own report

    def line(self, step: Step) -> str:
        passed = self.passed.get(step.number, 0)
        verdict = "通过" if passed == step.expected else "未通过"
        return f"{step.label}：{passed}/{step.expected} {verdict}"

    @property
    def total(self) -> int:
        return sum(self.passed.values())

    def ok(self, steps: tuple[Step, ...] = STEPS) -> bool:
        return self.red_light is None and all(self.passed.get(s.number, 0) == s.expected for s in steps)

    def beyond_ok(self) -> bool:
        return self.beyond is None or all(passed for _, passed in self.beyond)


def course_root(path: str | Path | None = None) -> Path:
    """The tree to test: ``path`` if given, else the one this ``pi_course`` was imported from."""
    if path is not None:
        return Path(path).resolve()
    return PACKAGE.parent


def _test_file(root: Path, name: str) -> Path | None:
    for candidate in (root / "tests" / name, root / "pi_course" / "_course" / "tests" / name):
        if candidate.is_file():
            return candidate
    return None


def focused_test_file(root: Path) -> Path:
    found = _test_file(root, FOCUSED_TEST)
    if found is None:
        raise FileNotFoundError(f"{FOCUSED_TEST} not found under {root}")
    return found


def beyond_test_file(root: Path) -> Path | None:
    """The beyond-the-chapter checks next to the focused tests; ``None`` in an older copy."""
    return _test_file(root, BEYOND_TEST)


_PROBE = """
import dataclasses, pi_course
missing = []
if not hasattr(pi_course, "ToolDefinition"):
    missing.append("pi_course 没有导出 ToolDefinition")
if "tools" not in {f.name for f in dataclasses.fields(pi_course.AgentContext)}:
    missing.append("AgentContext 没有 tools 字段")
print("；".join(missing))
"""


def _environment(root: Path, progress: Path | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(root), env.get("PYTHONPATH")]))
    env.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    env.setdefault("PI_COURSE_TEST_TIMEOUT", f"{TEST_TIMEOUT:g}")
    if progress is not None:
        env["PI_COURSE_CHECK_PROGRESS"] = str(progress)
    # The same report everywhere: some kernels force colour, and pytest prints full, untruncated
    # assertion diffs when it sees a CI variable.
    for variable in ("FORCE_COLOR", "PY_COLORS", "CLICOLOR_FORCE", "CI", "BUILD_NUMBER"):
        env.pop(variable, None)
    return env


# --- a pi_course that does not import ------------------------------------------------------------
#
# One line, the same wherever the failure is found: by `python -m pi_course` itself (the guard in
# pi_course/__init__.py calls stop_for_the_course_cli), by check's probe, or by pytest's collection.

CHECK_COMMAND = "python -m pi_course check 05"
CONSOLE_SCRIPT = "pi-course"  # [project.scripts] in pyproject.toml
_LOCATION = re.compile(
    r'^(?:E\s+)?\s*(?:File "(?P<file>[^"]+)", line (?P<line>\d+)'  # Python's traceback
    r'|(?P<short>[^\s"<>][^"<>]*?\.py):(?P<short_line>\d+): in )'  # pytest's
)
_ERROR_LINE = re.compile(r"^(?:E\s+)?(?P<error>[A-Za-z_][\w.]*(?:Error|Exception|Warning)(?::.*)?)$")
_NO_MODULE = re.compile(r"^ModuleNotFoundError: No module named '(?P<name>[^']+)'")


def import_failure_line(error: str, where: tuple[str, int] | None = None) -> str:
    """The one line for a pi_course that does not import: where, what, and the next step.

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


def _within(file: str, root: Path) -> str | None:
    """``file`` relative to ``root`` (``pi_course/sse.py``) when it lies in ``root/pi_course``."""
    path = Path(file) if Path(file).is_absolute() else root / file
    try:
        path, root = path.resolve(), root.resolve()
    except OSError:
        return None
    return path.relative_to(root).as_posix() if path.is_relative_to(root / "pi_course") else None


def _import_failure(text: str, root: Path) -> str:
    """The one line from a traceback as text: a probe's stderr or pytest's collection error."""
    error = "（没有输出）"
    where: tuple[str, int] | None = None
    for line in text.strip().splitlines():
        location = _LOCATION.match(line)
        if location:
            file, number = location["file"] or location["short"], location["line"] or location["short_line"]
            inside = _within(file, root)
            if inside is not None:
                where = (inside, int(number))
            continue
        found = _ERROR_LINE.match(line)
        if found:
            error = found["error"].strip()
    return import_failure_line(error, where)


def exception_failure_line(error: BaseException, package: Path = PACKAGE) -> str:
    """The same one line from the exception itself (the guard in ``pi_course/__init__.py``)."""
    root = package.parent
    where: tuple[str, int] | None = None
    for frame, number in traceback.walk_tb(error.__traceback__):
        inside = _within(frame.f_code.co_filename, root)
        if inside is not None:
            where = (inside, number)
    if isinstance(error, SyntaxError) and error.filename and error.lineno:
        inside = _within(error.filename, root)
        if inside is not None:
            where = (inside, error.lineno)
    last = traceback.format_exception_only(type(error), error)[-1].strip()
    return import_failure_line(last, where)


def _running_module(argv: list[str]) -> str | None:
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
    module = _running_module(orig_argv)
    if module is not None:
        return module == "pi_course" or module.startswith("pi_course.")
    return bool(argv) and Path(argv[0]).stem == CONSOLE_SCRIPT


def _importing_the_package(tb: TracebackType | None, package: Path = PACKAGE) -> bool:
    """The traceback runs through ``pi_course/__init__.py``'s module code: importing it failed."""
    init = (package / "__init__.py").resolve()
    return any(
        frame.f_code.co_name == "<module>" and Path(frame.f_code.co_filename).resolve() == init
        for frame, _ in traceback.walk_tb(tb)
    )


def report_import_failures_in_one_line() -> None:
    """In the course's command line: a ``pi_course`` that does not import is one line, exit 1.

    ``pi_course/__init__.py`` calls this before it imports the lesson modules, only when it is
    being imported by ``python -m pi_course`` or the ``pi-course`` script. It installs an
    ``excepthook`` for exceptions raised while importing the package; every other exception, and
    every other process (notebooks, pytest, ``import pi_course``), keeps Python's traceback.
    """
    if not is_course_cli():
        return
    previous = sys.excepthook

    def hook(kind: type[BaseException], error: BaseException, tb: TracebackType | None) -> None:
        if isinstance(error, Exception) and _importing_the_package(tb):
            print(exception_failure_line(error), file=sys.stderr)
        else:
            previous(kind, error, tb)

    sys.excepthook = hook


def _run(command: list[str], root: Path, env: dict[str, str]) -> tuple[int | None, str]:
    """Run pytest with a bound on the whole process; on Ctrl-C stop it and re-raise."""
    if inkernel.in_browser():  # no subprocesses in a browser: pytest runs in the kernel
        return inkernel.run_pytest(command, root, env)
    process = subprocess.Popen(
        command, cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    try:
        output, _ = process.communicate(timeout=RUN_TIMEOUT)
    except subprocess.TimeoutExpired:
        process.kill()
        output, _ = process.communicate()
        return None, output
    except BaseException:  # KeyboardInterrupt: never leave a hung pytest behind
        process.kill()
        process.wait()
        raise
    return process.returncode, output


def run_focused(
    steps: tuple[Step, ...] = STEPS,
    path: str | Path | None = None,
    *,
    beyond: bool = False,
    verbose: bool = False,
) -> Report:
    """Run the focused tests of ``steps`` (and, with ``beyond``, the beyond checks) and count passes."""
    root = course_root(path)
    env = _environment(root)
    if inkernel.in_browser():
        probe = subprocess.CompletedProcess([], *inkernel.run_code(_PROBE, root, env))
    else:
        probe = subprocess.run(
            [sys.executable, "-c", _PROBE],
            cwd=root, env=env, capture_output=True, text=True, check=False, timeout=RUN_TIMEOUT,
        )  # fmt: skip
    if probe.returncode != 0:
        return Report({}, _import_failure(probe.stderr, root))
    if probe.stdout.strip():
        return Report({}, f"第一次红灯：{probe.stdout.strip()}。先完成实践 5.1 的两个类型。")

    test_file = focused_test_file(root)
    files = [test_file]
    beyond_file = beyond_test_file(root) if beyond else None
    beyond_note = None
    if beyond and beyond_file is None:
        beyond_note = f"本章之外的检查：没有找到 tests/{BEYOND_TEST}，跳过"
    if beyond_file is not None:
        files.append(beyond_file)
    with tempfile.TemporaryDirectory() as scratch:
        junit = Path(scratch) / "junit.xml"
        progress = Path(scratch) / "progress.jsonl"
        env = _environment(root, progress)
        selection = [] if beyond_file is not None else ["-k", " or ".join(step.keyword for step in steps)]
        command = [
            sys.executable, "-m", "pytest", *map(str, files), *selection,
            "-vv" if verbose else "-q", "-p", "no:cacheprovider",
            # The focused tests need neither; importing nbval's and hypothesis' plugins costs seconds.
            "-p", "no:nbval", "-p", "no:hypothesispytest",
            "--rootdir", str(test_file.parent), "-o", "addopts=", "--color=no", "--code-highlight=no",
            f"--junitxml={junit}",
        ]  # fmt: skip
        returncode, output = _run(command, root, env)
        if returncode is None or not junit.exists():
            return _from_progress(progress, steps, output, returncode, beyond_file is not None)
        collection = _collection_error(junit)
        if collection is not None:  # nothing ran: say why in the probe's words
            return Report({}, _collection_failure(collection, root), output=output)
        report = _from_junit(junit, steps, beyond_file is not None)
    stopped = None
    interrupted = re.search(r"Interrupted: (.*?) !*$", output, re.MULTILINE)
    if interrupted:
        stopped = f"测试提前停止：{interrupted[1]}"
    return Report(
        report.passed,
        failures=report.failures,
        details=report.details,
        beyond=report.beyond,
        beyond_note=beyond_note,
        stopped=stopped,
        output=output,
    )


def _collection_error(junit: Path) -> str | None:
    """The report of a test file pytest could not collect (import it), if any."""
    for case in ET.parse(junit).getroot().iter("testcase"):
        for error in case.iter("error"):
            if error.get("message") == "collection failure":
                return error.text or ""
    return None


def _collection_failure(text: str, root: Path) -> str:
    """A test file that does not import: the import-failure line when pi_course is the cause."""
    if any(
        (found := _LOCATION.match(line)) and _within(found["file"] or found["short"], root) is not None
        for line in text.splitlines()
    ):
        return _import_failure(text, root)
    errors = [found["error"] for line in text.splitlines() if (found := _ERROR_LINE.match(line))]
    last = errors[-1] if errors else "（没有报告）"
    return f"聚焦测试无法收集：{last}。用 {CHECK_COMMAND} -v 查看 pytest 的完整报告。"


def _step_of(name: str, steps: tuple[Step, ...]) -> Step | None:
    for step in steps:
        if name.startswith(f"test_{step.keyword}"):
            return step
    return None


def _from_junit(junit: Path, steps: tuple[Step, ...], with_beyond: bool) -> Report:
    passed: dict[str, int] = {}
    failures: list[tuple[str, str]] = []
    details: dict[str, Detail] = {}
    beyond: list[tuple[str, bool]] = []
    for case in ET.parse(junit).getroot().iter("testcase"):
        name = case.get("name", "")
        is_beyond = case.get("classname", "").split(".")[-1] == BEYOND_TEST.removesuffix(".py")
        problems = [child for child in case if child.tag in ("failure", "error", "skipped")]
        properties = {
            prop.get("name", ""): prop.get("value", "") for prop in case.iter("property") if prop.get("name")
        }
        if problems:
            report = problems[0].text or problems[0].get("message") or ""
            detail = _detail(report, properties)
            details[name] = detail
            if not is_beyond:
                failures.append((name, detail.message))
        elif "pi_course_label" in properties:
            details[name] = Detail(label=properties["pi_course_label"])
        if is_beyond:
            beyond.append((name, not problems))
            continue
        step = _step_of(name, steps)
        if step is not None:
            passed[step.number] = passed.get(step.number, 0) + (not problems)
    return Report(
        passed, failures=tuple(failures), details=details, beyond=tuple(beyond) if with_beyond else None
    )


def _from_progress(
    progress: Path, steps: tuple[Step, ...], output: str, returncode: int | None, with_beyond: bool
) -> Report:
    """The pytest process was stopped (or died): count what the progress file saw finish."""
    started: list[str] = []
    outcomes: dict[str, str] = {}
    if progress.exists():
        for line in progress.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            if "start" in record:
                started.append(record["start"])
            else:
                outcomes[record["nodeid"]] = record["outcome"]
    if not started:
        tail = output.strip().splitlines()[-3:]
        return Report({}, "测试没有运行：" + " / ".join(tail))
    passed: dict[str, int] = {}
    failures: list[tuple[str, str]] = []
    details: dict[str, Detail] = {}
    beyond: list[tuple[str, bool]] = []
    for nodeid in started:
        name = nodeid.rsplit("::", 1)[-1]
        ok = outcomes.get(nodeid) == "passed"
        if nodeid not in outcomes:  # the test that was running when the process had to stop
            message = f"超过 {RUN_TIMEOUT:g} 秒没有结束" if returncode is None else "测试进程意外退出"
            details[name] = Detail(message=message, timeout=RUN_TIMEOUT if returncode is None else None)
        elif not ok:
            details[name] = Detail(message="未通过（测试进程没有留下报告；用 check -v 查看详情）")
        if BEYOND_TEST.removesuffix(".py") in nodeid:
            beyond.append((name, ok))
            continue
        if not ok:
            failures.append((name, details[name].message))
        step = _step_of(name, steps)
        if step is not None:
            passed[step.number] = passed.get(step.number, 0) + ok
    if returncode is None:
        stopped = f"测试进程超过 {RUN_TIMEOUT:g} 秒，已被停止；后面的测试没有运行"
    else:
        stopped = f"测试进程意外退出（返回码 {returncode}）；后面的测试没有运行"
    return Report(
        passed,
        failures=tuple(failures),
        details=details,
        beyond=tuple(beyond) if with_beyond else None,
        stopped=stopped,
        output=output,
    )


def _detail(report: str, properties: dict[str, str]) -> Detail:
    timeout = properties.get("pi_course_timeout")
    difference = properties.get("pi_course_difference")
    errors = properties.get("pi_course_error_message")
    label = properties.get("pi_course_label")
    return Detail(
        message=_assertion_lines(report),
        timeout=float(timeout) if timeout else None,
        difference=json.loads(difference) if difference else None,
        error_messages=tuple(json.loads(errors)) if errors else (),
        where=properties.get("pi_course_where"),
        assertion=_failing_line(report),
        label=label,
        hint=properties.get("pi_course_hint"),
        never_awaits=properties.get("pi_course_never_awaits") == "1",
    )


def _assertion_lines(report: str) -> str:
    """The ``E   ...`` lines of a pytest failure report: what was asserted and how it differed."""
    lines = [line[1:].strip() for line in report.splitlines() if line.startswith("E ")]
    return "\n".join(line for line in lines if line) or report.strip()


def _failing_line(report: str) -> str | None:
    """The test's source line pytest marked with ``>``: the first one is in the test itself."""
    for line in report.splitlines():
        if line.startswith(">"):
            return line[1:].strip()
    return None


def steps_for(number: str | None) -> tuple[Step, ...]:
    if number is None:
        return STEPS
    for step in STEPS:
        if step.number == number:
            return (step,)
    raise ValueError(f"unknown step {number!r}; choose one of {', '.join(s.number for s in STEPS)}")


def report_lines(report: Report, steps: tuple[Step, ...]) -> list[str]:
    """The count lines: one per step, the chapter total, then the beyond checks when they ran."""
    if report.red_light is not None:
        return [report.red_light]
    lines = [report.line(step) for step in steps]
    if len(steps) == len(STEPS):
        lines.append(f"第 05 章聚焦测试：{report.total}/{CHAPTER_TOTAL}")
    if report.beyond_note is not None:
        lines.append(report.beyond_note)
    if report.beyond is not None and not report.beyond:
        lines.append("本章之外的检查：没有运行")
    elif report.beyond is not None:
        passed = sum(ok for _, ok in report.beyond)
        lines.append(f"本章之外的检查：{passed}/{len(report.beyond)}")
        if report.ok(steps):  # the failing ones follow, each with its next step (next_step_lines)
            for name, ok in report.beyond:
                detail = report.details.get(name)
                if ok:
                    lines.append(f"  ✓ {detail.label if detail is not None and detail.label else name}")
        else:
            lines.append("  （先让聚焦测试全部通过，再看这几项）")
    if report.stopped is not None:
        lines.append(report.stopped)
    return lines


# --- what to look at next -----------------------------------------------------------------------

# The next step for each focused test: the file and function a failure usually comes from.
HINTS = {
    "test_outbound": "pi_course/outbound.py 的 to_provider_messages()、_assistant_to_wire()、"
    "to_provider_tools()；protocol.py 的 ToolDefinition、AgentContext.tools",
    "test_normalized_transport_orders": "pi_course/adapter.py 的 _events()：content 槽位"
    "（第一次出现时的 len(content)，不是 chunk.index）与每个事件的 partial 快照",
    "test_normalized_transport_exception": "pi_course/adapter.py：fixed_transport 的 stream() 在列表里的"
    "异常处抛出；_events() 把异常变成 error 终态并保留 partial",
    "test_normalized_transport_length": "pi_course/adapter.py 的 _events()：finish 为 length 时不解析参数，"
    "原文留在 arguments 与 raw_arguments",
    "test_sse_interleaved": "pi_course/sse.py 的 SSEDecoder.feed()（行缓冲：一次网络读取不是一条 event）、"
    "parse_payload()、iter_provider_chunks()（finish reason 与尾随 usage 合成一个 finish chunk）",
    "test_sse_missing_finish": "pi_course/sse.py 的 iter_provider_chunks()：没有 finish reason 时不产出 "
    "finish chunk；pi_course/transport.py 的 _reads()：在 finally 中关闭响应",
    "test_sse_abort": "pi_course/transport.py 的 _reads()：请求交给 AbortRace.run()，读取交给 "
    "AbortRace.iterate()（pi_course/given.py），并在 finally 中关闭响应",
    "test_sse_invalid_chunk": "pi_course/sse.py 的 parse_payload() 与 _record()：choices 必须是数组，"
    "错误信息写出字段路径",
    "test_sse_unknown_finish_reason": "pi_course/sse.py 的 _finish_reason()：只能是 stop、length、"
    "tool_calls，错误信息写出 finish_reason 与收到的值",
    "test_fetch_transport_sends": "pi_course/transport.py 的 chat_completions_url()、_headers()、"
    "request_body()",
    "test_fetch_transport_redacts": "pi_course/transport.py 的 _Secret.redact() 与 stream() 的错误出口",
}

# What running past the time bound usually means, per test: only when the test was stuck where
# that meaning applies (see _timeout_meaning).
TIMEOUT_MEANINGS = {
    "test_sse_abort": "被阻塞的读取没有被 abort 信号打断——只在两次读取之间检查 signal 是不够的；"
    "每一次读取都要和 abort 信号竞争：用给定的 given.AbortRace 包住响应体的读取",
}
TIMEOUT_MEANING = "通常是某次读取在等一段永远不会到来的字节，或一个循环没有结束"
NEVER_AWAITS = "一个从不 await 的循环没有结束（测试在这里被强行打断；没有哪次读取在等字节）"
# Where a blocked read waits: the transport's reads, the given abort race, the SSE reader's `async for`.
READ_PATH_FILES = ("pi_course/transport.py", "pi_course/given.py")
READ_PATH_FUNCTIONS = ("iter_sse_events",)
_WHERE = re.compile(r"^(?P<file>\S+):(?P<line>\d+) \((?P<function>[^)]*)\)$")

# A JSON parser's complaint about a payload: the focused tests only send well-formed JSON payloads.
_CUT_JSON = re.compile(
    r"not valid JSON|Expecting (?:value|property name|',' delimiter|':' delimiter)|Unterminated string|"
    r"Extra data|Invalid control character"
)
FRAMING_HINT = (
    "pi_course/sse.py 的 SSEDecoder.feed()：行缓冲——测试发出的每条 data 都是完整、合法的 JSON，"
    "到了 parse_json() 却不是：一次网络读取不是一条 event，还没等到换行的那段要留到下一次读取"
)
DONE_HINT = (
    "pi_course/sse.py 的 iter_provider_chunks()：data 为 [DONE] 的 event 表示流结束，它不是 JSON，"
    "不能交给 parse_json()"
)


def _lookup(table: dict[str, str], name: str) -> str | None:
    for prefix, text in table.items():
        if name.startswith(prefix):
            return text
    return None


def _shorten(text: str, limit: int = WIDTH) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _aligned(actual: str, expected: str, limit: int = WIDTH) -> tuple[str, str]:
    """Both values in full when short; else the same window of each around the first difference."""
    if len(actual) <= limit and len(expected) <= limit:
        return actual, expected
    first = next((i for i, (a, b) in enumerate(zip(actual, expected, strict=False)) if a != b), None)
    if first is None:
        first = min(len(actual), len(expected))
    start = max(0, first - limit // 3)

    def window(text: str) -> str:
        piece = text[start : start + limit]
        return ("…" if start else "") + piece + ("…" if start + limit < len(text) else "")

    return window(actual), window(expected)


def _difference_lines(difference: dict[str, Any]) -> list[str]:
    outer = difference.get("outer")
    # The outermost differing element reads best when it is short; else go to the exact spot.
    chosen = outer if outer and max(len(outer["actual"]), len(outer["expected"])) <= WIDTH else difference
    path = chosen["path"]
    actual, expected = _aligned(chosen["actual"], chosen["expected"])
    where = f" {path}" if path else ""
    lines = [f"实际{where}：{actual}", f"期望{where}：{expected}"]
    if difference.get("types"):
        actual_type, expected_type = difference["types"]
        lines.append(f"（类型不同：实际是 {actual_type}，期望是 {expected_type}）")
    elif chosen is outer and difference["path"] != outer["path"]:
        inner_actual, inner_expected = _aligned(difference["actual"], difference["expected"], WIDTH // 2)
        lines.append(f"（第一处不同：{difference['path']}，{inner_actual} ≠ {inner_expected}）")
    return lines


def _bare_assert(message: str) -> bool:
    """A plain ``assert`` without a message of its own: its source line says what was checked."""
    return message.startswith(("assert ", "AssertionError: assert "))


def _where_parts(where: str | None) -> re.Match[str] | None:
    return _WHERE.match(where) if where else None


def _in_read_path(where: str | None) -> bool:
    """Stuck in an ``await`` on the response body (or nowhere known), not in a loop of its own."""
    parts = _where_parts(where)
    if parts is None:
        return True
    function = parts["function"].rsplit(".", 1)[-1]
    return parts["file"] in READ_PATH_FILES or function in READ_PATH_FUNCTIONS


def _timeout_meaning(name: str, detail: Detail) -> str | None:
    """The test's own timeout meaning, only when it was stuck where that meaning applies."""
    if detail.never_awaits or not _in_read_path(detail.where):
        return None
    return _lookup(TIMEOUT_MEANINGS, name)


def _diagnosis(name: str, detail: Detail) -> str | None:
    """The next step the evidence points at, when it is clear; else ``None`` (the test's own hint)."""
    if detail.timeout is not None:
        parts = _where_parts(detail.where)
        if parts is not None and (detail.never_awaits or not _in_read_path(detail.where)):
            return f"{parts['file']} 的 {parts['function']}()：第 {parts['line']} 行所在的循环没有结束"
        return None
    if name.startswith("test_sse") and any(_CUT_JSON.search(m) for m in detail.error_messages):
        later = detail.assertion is not None and not detail.assertion.startswith("assert deltas")
        if name.startswith("test_sse_interleaved") and later:
            return DONE_HINT  # every tool delta arrived, so framing worked: the one non-JSON data is [DONE]
        return FRAMING_HINT
    return None


def next_step(report: Report, name: str, *, beyond: bool = False) -> str:
    """What to look at for one failing test: the evidence's diagnosis, else the test's own hint."""
    detail = report.details.get(name, Detail())
    if beyond:
        return _diagnosis(name, detail) or detail.hint or "见 tests/test_05_beyond.py 中这项检查的说明"
    own = _lookup(HINTS, name) or "见 tests/test_05_provider_adapter.py 中这项测试"
    return f"看 {_diagnosis(name, detail) or own}"


def failure_lines(report: Report, name: str, *, beyond: bool = False, same_hint: bool = False) -> list[str]:
    """One line naming the test and the next step, then the decisive lines, indented.

    ``same_hint``: the test before it had the same next step, which is then said once ("同上").
    """
    detail = report.details.get(name, Detail())
    if detail.timeout is not None:
        meaning = _timeout_meaning(name, detail)
        general = NEVER_AWAITS if detail.never_awaits else TIMEOUT_MEANING
        decisive = [f"超过 {detail.timeout:g} 秒没有结束：{meaning or general}。"]
        if detail.where and meaning is None:  # a known meaning already names the place to look
            decisive.append(f"停在 {detail.where}")
    else:
        decisive = []
        if detail.assertion and (detail.difference is not None or _bare_assert(detail.message)):
            statement = detail.assertion + ("…" if detail.assertion[-1:] in "([{" else "")
            decisive.append(f"断言：{_shorten(statement)}")
        if detail.difference is not None:
            decisive += _difference_lines(detail.difference)
        elif detail.message:
            first = detail.message.splitlines()[0]
            decisive.append(_shorten(first.removeprefix("AssertionError: "), 2 * WIDTH))
        for message in detail.error_messages:
            decisive.append(f"你的代码发出了 error 事件，error_message：{_shorten(repr(message), 2 * WIDTH)}")
        if detail.where and detail.difference is None:
            decisive.append(f"出错位置：{detail.where}")
    shown = "同上" if same_hint else next_step(report, name, beyond=beyond)
    if beyond:
        head = f"  ✗ {detail.label or name}（{name}）— 下一步：{shown}"
    else:
        head = f"  ✗ {name} — 下一步：{shown}"
    return [head, *(f"      {line}" for line in decisive)]


def next_step_lines(report: Report, steps: tuple[Step, ...]) -> list[str]:
    """The failures to look at first: those of the first unfinished step (then the beyond checks).

    Consecutive failures with the same next step (one cause, several tests) name it once.
    """
    if report.red_light is not None:
        return []
    unfinished = [step for step in steps if report.passed.get(step.number, 0) < step.expected]
    lines: list[str] = []
    previous: str | None = None
    hint: str | None
    if unfinished:
        first = unfinished[0]
        for name, _ in report.failures:
            if _step_of(name, (first,)) is not None:
                hint = next_step(report, name)
                lines += failure_lines(report, name, same_hint=hint == previous)
                previous = hint
        if not any(_step_of(name, (first,)) for name, _ in report.failures):
            lines.append(f"  ✗ 实践 {first.number} 的测试没有全部运行——用 check -v 查看 pytest 的完整报告")
        later = [step.number for step in unfinished[1:]]
        if later:
            lines.append(f"  之后还未通过：实践 {'、'.join(later)}（先完成实践 {first.number}）")
        return lines
    for name, ok in report.beyond or ():
        if not ok:
            detail = report.details.get(name, Detail())
            hint = next_step(report, name, beyond=True) if detail.hint or _diagnosis(name, detail) else None
            lines += failure_lines(report, name, beyond=True, same_hint=hint is not None and hint == previous)
            previous = hint
    return lines


def check(
    step: str | None = None,
    path: str | Path | None = None,
    *,
    beyond: bool = False,
    verbose: bool = False,
) -> bool:
    """Print one line per step (and the chapter total); ``True`` when everything passed.

    This is what notebook checkpoint cells and ``python -m pi_course check 05`` call. From
    Python it runs the course's focused tests only; the command line passes ``beyond=True``
    unless given ``--course-only`` or ``--step``. ``verbose`` prints pytest's own report first.
    """
    steps = steps_for(step)
    report = run_focused(steps, path, beyond=beyond and step is None, verbose=verbose)
    if verbose and report.output:
        print(report.output.rstrip())
        print()
    print("\n".join(report_lines(report, steps)))
    lines = next_step_lines(report, steps)
    if lines:
        print("\n".join(lines))
    return report.ok(steps) and report.beyond_ok()
