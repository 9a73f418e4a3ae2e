"""Read back what a pytest run left: its junit XML (with the plugin's facts) or its progress file.

Only reading: :mod:`.testrun` runs the process, and the plugin (``pi_course_check``) writes both
files, under the names of ``pi_course_check.contract``.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from ...chapter.steps import BEYOND_TEST, COMPARE_TEST, FOCUSED_TEST, RULES_TEST, STEPS, Step, step_of
from ..edition import CHECK_VERBOSE
from .facts import BeyondCheck, Detail, Report
from .plugin_path.pi_course_check.contract import Fact, read_progress_line, step_of_test


def collection_error(junit: Path) -> str | None:
    """The report of a test file pytest could not collect (import it), if any."""
    for case in ET.parse(junit).getroot().iter("testcase"):
        for error in case.iter("error"):
            if error.get("message") == "collection failure":
                return error.text or ""
    return None


def _is_beyond(classname_or_nodeid: str) -> bool:
    return BEYOND_TEST.removesuffix(".py") in classname_or_nodeid


def _is_compare(classname_or_nodeid: str) -> bool:
    return COMPARE_TEST.removesuffix(".py") in classname_or_nodeid


def _is_rules(classname_or_nodeid: str) -> bool:
    """A rule check: ``test_05_rules.py``'s, or one of ``test_05_compare.py``'s comparisons."""
    return RULES_TEST.removesuffix(".py") in classname_or_nodeid or _is_compare(classname_or_nodeid)


def _file_of(classname_or_nodeid: str) -> str:
    """Which chapter test file a junit classname or a node id belongs to."""
    if _is_compare(classname_or_nodeid):
        return COMPARE_TEST
    if _is_rules(classname_or_nodeid):
        return RULES_TEST
    if _is_beyond(classname_or_nodeid):
        return BEYOND_TEST
    return FOCUSED_TEST


@dataclass(frozen=True)
class Case:
    """One test case as the run left it: what a :class:`Report` is built from, and a step's cache keeps."""

    file: str  # which chapter test file (FOCUSED_TEST, BEYOND_TEST, RULES_TEST, COMPARE_TEST)
    name: str
    passed: bool
    text: str | None  # the failure's report; None: passed
    properties: dict[str, str]  # the plugin's facts (contract.Fact)

    @property
    def order(self) -> int:
        """Its place among all the tests collected, the same whichever steps ran."""
        return int(self.properties.get(Fact.ORDER, "0"))

    @property
    def step(self) -> str:
        return step_of_test(self.name, self.properties.get(Fact.STEP), STEP_KEYWORDS)


STEP_KEYWORDS = {step.number: step.keyword for step in STEPS}


def read_cases(junit: Path) -> list[Case]:
    """Every test case of a finished pytest run's junit XML, with the plugin's facts."""
    cases = []
    for case in ET.parse(junit).getroot().iter("testcase"):
        module = case.get("classname", "").split(".")[-1]
        problems = [child for child in case if child.tag in ("failure", "error", "skipped")]
        properties = {
            prop.get("name", ""): prop.get("value", "") for prop in case.iter("property") if prop.get("name")
        }
        text = (problems[0].text or problems[0].get("message") or "") if problems else None
        cases.append(Case(_file_of(module), case.get("name", ""), not problems, text, properties))
    return cases


def report_of(cases: list[Case], steps: tuple[Step, ...] = STEPS, *, with_beyond: bool = False) -> Report:
    """The :class:`Report` of these cases, in their collection order."""
    passed: dict[str, int] = {}
    failures: list[tuple[str, str]] = []
    details: dict[str, Detail] = {}
    beyond: list[BeyondCheck] = []
    rules: list[BeyondCheck] = []  # the rule checks, read like the beyond checks and kept apart
    outcomes: dict[str, bool] = {}
    compared: dict[str, int] = {}
    for case in sorted(cases, key=lambda case: case.order):
        name, properties = case.name, case.properties
        is_rules = case.file in (RULES_TEST, COMPARE_TEST)
        is_beyond = is_rules or case.file == BEYOND_TEST
        if case.text is not None:
            detail = _detail(case.text, properties)
            details[name] = detail
            if not is_beyond:
                failures.append((name, detail.message))
        elif Fact.LABEL in properties:
            details[name] = Detail(label=properties[Fact.LABEL])
        outcomes[f"{case.file}::{name}"] = case.passed
        if Fact.COMPARED in properties and Fact.STEP in properties:
            step_number = properties[Fact.STEP]
            compared[step_number] = compared.get(step_number, 0) + int(properties[Fact.COMPARED] or 0)
        if is_beyond:
            label = properties.get(Fact.LABEL)
            step = properties.get(Fact.STEP) if label is not None else None  # as the junit said it before
            check = BeyondCheck(name, case.passed, step, label)
            (rules if is_rules else beyond).append(check)
            continue
        focused = step_of(name, steps)
        if focused is not None:
            passed[focused.number] = passed.get(focused.number, 0) + case.passed
    return Report(
        passed,
        failures=tuple(failures),
        details=details,
        beyond=tuple(beyond) if with_beyond else None,
        rule_checks=tuple(rules),
        outcomes=outcomes,
        compared=compared,
    )


def read_progress(
    progress: Path,
    steps: tuple[Step, ...],
    output: str,
    returncode: int | None,
    *,
    bound: float,
    with_beyond: bool = False,
) -> Report:
    """The pytest process was stopped at ``bound`` seconds (``returncode`` None) or died: count what
    its progress file saw finish."""
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
        stopped = f"测试进程超过 {bound:g} 秒，已被停止" if returncode is None else None
        return Report({}, "测试没有运行：" + " / ".join(tail), stopped=stopped, timed_out=returncode is None)
    passed: dict[str, int] = {}
    failures: list[tuple[str, str]] = []
    details: dict[str, Detail] = {}
    beyond: list[BeyondCheck] = []
    rules: list[BeyondCheck] = []
    seen: dict[str, bool] = {}
    for nodeid in started:
        name = nodeid.rsplit("::", 1)[-1]
        ok = outcomes.get(nodeid) == "passed"
        seen[f"{_file_of(nodeid)}::{name}"] = ok
        if nodeid not in outcomes:  # the test that was running when the process had to stop
            message = f"超过 {bound:g} 秒没有结束" if returncode is None else "测试进程意外退出"
            details[name] = Detail(message=message, timeout=bound if returncode is None else None)
        elif not ok:
            details[name] = Detail(message=f"未通过（测试进程没有留下报告；用 {CHECK_VERBOSE} 查看详情）")
        if _is_rules(nodeid):
            rules.append(BeyondCheck(name, ok))
            continue
        if _is_beyond(nodeid):
            beyond.append(BeyondCheck(name, ok))
            continue
        if not ok:
            failures.append((name, details[name].message))
        step = step_of(name, steps)
        if step is not None:
            passed[step.number] = passed.get(step.number, 0) + ok
    if returncode is None:
        stopped = f"测试进程超过 {bound:g} 秒，已被停止；后面的测试没有运行"
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
        rule_checks=tuple(rules),
        outcomes=seen,
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
