"""Run chapter 05's tests in a fresh pytest process and read what happened into a :class:`Report`.

The tests run in ``python -m pytest`` with the chosen tree first on ``sys.path``, so a practice
copy is tested as it is on disk, and a notebook kernel's own event loop and imports are never
involved. Two sets, counted apart:

* the course's 11 focused tests (``tests/test_05_provider_adapter.py``), counted per practice
  step exactly as the chapter counts them (1/1, 3/3, 5/5, 2/2, 11/11);
* the checks "beyond the chapter" (``tests/test_05_beyond.py``), each tied to the last practice
  step it needs (its ``@pytest.mark.step``): it counts only once that step and every step
  before it pass, and is *pending* until then.

Nothing here can hang: every test has a time bound (the runner's own pytest plugin,
:mod:`pi_course_check.plugin`, applies it; :mod:`pi_course_check.contract` holds what both sides
agree on) and each process has one too (``RUN_TIMEOUT``). What the process leaves behind (junit XML
with the plugin's facts, or its progress file when it had to be stopped) is read back here;
:mod:`.advice` turns it into next steps.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ..chapter.steps import BEYOND_TEST, STEPS, Step
from . import inkernel
from .import_failure import (
    CHECK_COMMAND,
    ERROR_LINE,
    IMPORT_BOUND,
    blames_the_package,
    import_failure_from_text,
)
from .locate import beyond_test_file, course_root, focused_test_file
from .plugin_path.pi_course_check.contract import (
    PLUGIN,
    PROGRESS_VARIABLE,
    TEST_TIMEOUT,
    TIMEOUT_VARIABLE,
    Fact,
    read_progress_line,
)
from .stubs import Unfinished, unfinished

PLUGIN_PATH = Path(__file__).resolve().parent / "plugin_path"  # first on the test process's sys.path
RUN_TIMEOUT = 90.0  # seconds for each process (the import probe, pytest), whatever happens inside it

BeyondState = Literal["passed", "failed", "pending"]


@dataclass(frozen=True)
class Detail:
    """What the test process found out about one failing test (see :class:`.contract.Fact`)."""

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
class BeyondCheck:
    """One check beyond the chapter: its outcome and the last practice step it needs."""

    name: str
    passed: bool
    step: str | None = None  # None: the whole chapter (an older copy's checks carry no step)
    label: str | None = None

    @property
    def shown(self) -> str:
        return self.label or self.name


@dataclass(frozen=True)
class Report:
    """Per-step pass counts, or the one message that stopped the tests from being collected."""

    passed: dict[str, int]
    red_light: str | None = None
    import_error: bool = False  # red_light says pi_course does not import
    failures: tuple[tuple[str, str], ...] = ()  # (test name, the report's "E" lines), focused tests
    details: dict[str, Detail] = field(default_factory=dict)  # by test name, focused and beyond
    beyond: tuple[BeyondCheck, ...] | None = None  # None: not run
    beyond_note: str | None = None  # why the beyond checks did not run
    stopped: str | None = None  # the run did not finish: why
    timed_out: bool = False  # a process ran past RUN_TIMEOUT and was stopped
    output: str = ""  # pytest's own report
    unfinished: tuple[Unfinished, ...] = ()  # lab functions still in their starter form

    def line(self, step: Step) -> str:
        passed = self.passed.get(step.number, 0)
        verdict = "通过" if passed == step.expected else "未通过"
        return f"{step.label}：{passed}/{step.expected} {verdict}"

    @property
    def total(self) -> int:
        return sum(self.passed.values())

    def step_done(self, step: Step) -> bool:
        return self.red_light is None and self.passed.get(step.number, 0) == step.expected

    def ok(self, steps: tuple[Step, ...] = STEPS) -> bool:
        return self.red_light is None and all(self.step_done(step) for step in steps)

    def needed_steps(self, check: BeyondCheck) -> tuple[Step, ...]:
        """The steps a beyond check needs: its own and every step before it."""
        numbers = [step.number for step in STEPS]
        last = numbers.index(check.step) if check.step in numbers else len(STEPS) - 1
        return STEPS[: last + 1]

    def beyond_state(self, check: BeyondCheck) -> BeyondState:
        if not self.ok(self.needed_steps(check)):
            return "pending"  # a stub or an unfinished step: its pass or failure means nothing yet
        return "passed" if check.passed else "failed"

    def beyond_count(self, state: BeyondState) -> int:
        return sum(self.beyond_state(check) == state for check in self.beyond or ())

    def beyond_ok(self) -> bool:
        return self.beyond is None or self.beyond_count("passed") == len(self.beyond)


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
    # The plugin's folder holds nothing else, so the tree under test cannot shadow it.
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PLUGIN_PATH), str(root), env.get("PYTHONPATH")]))
    env.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    env.setdefault(TIMEOUT_VARIABLE, f"{TEST_TIMEOUT:g}")
    if progress is not None:
        env[PROGRESS_VARIABLE] = str(progress)
    # The same report everywhere: some kernels force colour, and pytest prints full, untruncated
    # assertion diffs when it sees a CI variable.
    for variable in ("FORCE_COLOR", "PY_COLORS", "CLICOLOR_FORCE", "CI", "BUILD_NUMBER"):
        env.pop(variable, None)
    return env


def _run(command: list[str], root: Path, env: dict[str, str]) -> tuple[int | None, str]:
    """Run pytest with a bound on the whole process (``None``: stopped); on Ctrl-C stop it, re-raise."""
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


def _probe(root: Path) -> Report | None:
    """Import the tree's ``pi_course`` alone: a red light before any test runs, else ``None``."""
    env = _environment(root)
    if inkernel.in_browser():  # no subprocesses in a browser: the probe runs in the kernel
        return _probe_verdict(*inkernel.run_code(_PROBE, root, env), root)
    process = subprocess.Popen(
        [sys.executable, "-c", _PROBE], cwd=root, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        stdout, stderr = process.communicate(timeout=IMPORT_BOUND)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        line = (
            f"import pi_course 超过 {IMPORT_BOUND:g} 秒没有结束，已被停止：某个模块在导入时进入了"
            "不会结束的循环（或在等待）。下一步：看各个模块顶层（函数之外）的代码，"
            f"再运行 {CHECK_COMMAND}。"
        )
        return Report({}, line, import_error=True, timed_out=True)
    except BaseException:
        process.kill()
        process.wait()
        raise
    return _probe_verdict(process.returncode, stdout, stderr, root)


def _probe_verdict(returncode: int, stdout: str, stderr: str, root: Path) -> Report | None:
    if returncode != 0:
        return Report({}, import_failure_from_text(stderr, root), import_error=True)
    if stdout.strip():
        return Report({}, f"第一次红灯：{stdout.strip()}。先完成实践 5.1 的两个类型。")
    return None


def run_tests(
    steps: tuple[Step, ...] = STEPS,
    path: str | Path | None = None,
    *,
    beyond: bool = False,
    verbose: bool = False,
    tests: Path | None = None,
) -> Report:
    """Run the focused tests of ``steps`` (with ``beyond``: every focused test and the beyond checks).

    ``tests`` is the folder holding the chapter's test files; by default the tree's own.
    """
    root = course_root(path)
    red = _probe(root)
    if red is not None:
        return red
    test_file = focused_test_file(tests or root)
    files = [test_file]
    beyond_file = beyond_test_file(tests or root) if beyond else None
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
            "-vv" if verbose else "-q", "-p", PLUGIN, "-p", "no:cacheprovider",
            # The focused tests need neither; importing nbval's and hypothesis' plugins costs seconds.
            "-p", "no:nbval", "-p", "no:hypothesispytest",
            "--rootdir", str(test_file.parent), "-o", "addopts=", "--color=no", "--code-highlight=no",
            f"--junitxml={junit}",
        ]  # fmt: skip
        returncode, output = _run(command, root, env)
        if returncode is None or not junit.exists():
            return read_progress(progress, steps, output, returncode, with_beyond=beyond_file is not None)
        collection = _collection_error(junit)
        if collection is not None:  # nothing ran: say why in the probe's words
            blamed = blames_the_package(collection, root)
            line = import_failure_from_text(collection, root) if blamed else _collection_failure(collection)
            return Report({}, line, import_error=blamed, output=output)
        report = read_junit(junit, steps, with_beyond=beyond_file is not None)
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
        unfinished=unfinished(root),
    )


def _collection_error(junit: Path) -> str | None:
    """The report of a test file pytest could not collect (import it), if any."""
    for case in ET.parse(junit).getroot().iter("testcase"):
        for error in case.iter("error"):
            if error.get("message") == "collection failure":
                return error.text or ""
    return None


def _collection_failure(text: str) -> str:
    """A test file that does not import, for a reason outside pi_course."""
    errors = [found["error"] for line in text.splitlines() if (found := ERROR_LINE.match(line))]
    last = errors[-1] if errors else "（没有报告）"
    return f"聚焦测试无法收集：{last}。用 {CHECK_COMMAND} -v 查看 pytest 的完整报告。"


def step_of(name: str, steps: tuple[Step, ...] = STEPS) -> Step | None:
    """The practice step a focused test belongs to, by its name (``test_<keyword>…``)."""
    for step in steps:
        if name.startswith(f"test_{step.keyword}"):
            return step
    return None


def _is_beyond(classname_or_nodeid: str) -> bool:
    return BEYOND_TEST.removesuffix(".py") in classname_or_nodeid


def read_junit(junit: Path, steps: tuple[Step, ...] = STEPS, *, with_beyond: bool = False) -> Report:
    """A finished pytest run's junit XML (with the plugin's facts) as a :class:`Report`."""
    passed: dict[str, int] = {}
    failures: list[tuple[str, str]] = []
    details: dict[str, Detail] = {}
    beyond: list[BeyondCheck] = []
    for case in ET.parse(junit).getroot().iter("testcase"):
        name = case.get("name", "")
        is_beyond = _is_beyond(case.get("classname", "").split(".")[-1])
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
        elif Fact.LABEL in properties:
            details[name] = Detail(label=properties[Fact.LABEL])
        if is_beyond:
            label = properties.get(Fact.LABEL)
            beyond.append(BeyondCheck(name, not problems, properties.get(Fact.STEP), label))
            continue
        step = step_of(name, steps)
        if step is not None:
            passed[step.number] = passed.get(step.number, 0) + (not problems)
    return Report(
        passed, failures=tuple(failures), details=details, beyond=tuple(beyond) if with_beyond else None
    )


def read_progress(
    progress: Path,
    steps: tuple[Step, ...],
    output: str,
    returncode: int | None,
    *,
    with_beyond: bool = False,
) -> Report:
    """The pytest process was stopped (or died): count what its progress file saw finish."""
    started: list[str] = []
    outcomes: dict[str, str] = {}
    if progress.exists():
        for line in progress.read_text(encoding="utf-8").splitlines():
            nodeid, outcome = read_progress_line(line)
            if outcome is None:
                started.append(nodeid)
            else:
                outcomes[nodeid] = outcome
    if not started:
        tail = output.strip().splitlines()[-3:]
        stopped = f"测试进程超过 {RUN_TIMEOUT:g} 秒，已被停止" if returncode is None else None
        return Report({}, "测试没有运行：" + " / ".join(tail), stopped=stopped, timed_out=returncode is None)
    passed: dict[str, int] = {}
    failures: list[tuple[str, str]] = []
    details: dict[str, Detail] = {}
    beyond: list[BeyondCheck] = []
    for nodeid in started:
        name = nodeid.rsplit("::", 1)[-1]
        ok = outcomes.get(nodeid) == "passed"
        if nodeid not in outcomes:  # the test that was running when the process had to stop
            message = f"超过 {RUN_TIMEOUT:g} 秒没有结束" if returncode is None else "测试进程意外退出"
            details[name] = Detail(message=message, timeout=RUN_TIMEOUT if returncode is None else None)
        elif not ok:
            details[name] = Detail(message="未通过（测试进程没有留下报告；用 check -v 查看详情）")
        if _is_beyond(nodeid):
            beyond.append(BeyondCheck(name, ok))
            continue
        if not ok:
            failures.append((name, details[name].message))
        step = step_of(name, steps)
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
        timed_out=returncode is None,
        output=output,
    )


def _detail(report: str, properties: dict[str, str]) -> Detail:
    timeout = properties.get(Fact.TIMEOUT)
    difference = properties.get(Fact.DIFFERENCE)
    errors = properties.get(Fact.ERROR_MESSAGE)
    return Detail(
        message=_assertion_lines(report),
        timeout=float(timeout) if timeout else None,
        difference=json.loads(difference) if difference else None,
        error_messages=tuple(json.loads(errors)) if errors else (),
        where=properties.get(Fact.WHERE),
        assertion=_failing_line(report),
        label=properties.get(Fact.LABEL),
        hint=properties.get(Fact.HINT),
        never_awaits=properties.get(Fact.NEVER_AWAITS) == "1",
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
