"""What one ``check`` run found: per-step counts, the beyond checks, and the facts of each failure.

:mod:`.results` reads a finished (or stopped) pytest run into a :class:`Report`; :mod:`..check` and
:mod:`.advice` compute everything shown from it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from ...chapter.steps import STEPS, Step
from .stubs import StarterForm

BeyondState = Literal["passed", "failed", "pending"]


@dataclass(frozen=True)
class Detail:
    """What the test process found out about one failing test (see ``pi_course_check.contract.Fact``)."""

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
    starter_forms: tuple[StarterForm, ...] = ()  # lab functions still in their starter form
    rule_checks: tuple[BeyondCheck, ...] | None = None  # tests/test_05_rules.py; None: not run
    outcomes: dict[str, bool] = field(default_factory=dict)  # "file.py::test[case]" → passed, every test run
    compared: dict[str, int] = field(default_factory=dict)  # step → inputs compared with the reference
    defined: dict[str, frozenset[str]] = field(default_factory=dict)  # lesson file → its functions (stubs.py)

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
