"""``check``'s pytest plugin: a time bound per test, and the facts ``check`` reports, as junit properties.

The runner (:mod:`pi_course.course.checker.testrun`) registers it with ``-p`` (:data:`.contract.PLUGIN`)
for the chapter's test files it runs; a pytest run without it (the repository's suite, a learner's
own ``pytest``) is plain pytest.

* **A time bound.** :data:`.contract.TIMEOUT_VARIABLE` seconds (default 5). An async test is
  cancelled at the bound, which ends any read blocked in an ``await``; a test still running two
  seconds later (a loop that never awaits) is interrupted by ``SIGALRM`` where the platform has it.
  A test past its bound fails with ``超过 N 秒没有结束``. The session stops after the first test
  interrupted by ``SIGALRM``, or after three timeouts of any kind.
* **Report facts** (:class:`.contract.Fact`): the first difference of the failing ``==``, the
  ``error_message`` of every error the test saw, the innermost line of ``pi_course`` code on the
  traceback, the bound if it hit; a check's label, step and hint from its docstring and marker.
* **One step's tests.** With :data:`.contract.STEPS_VARIABLE` set, only the tests of the steps it
  names run (:func:`.contract.step_of_test`), less those it says to skip (kept from an earlier
  run); every test carries its step and its place among all the tests collected, so results of
  runs of different steps merge in one order.
* **Progress.** With :data:`.contract.PROGRESS_VARIABLE` naming a file, each test's start and
  outcome are appended to it as JSON lines, so a runner that had to stop a hung process can still
  name the test.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import json
import os
import sys
from collections.abc import Callable, Generator
from pathlib import Path
from types import FrameType, TracebackType
from typing import Any

import pytest

from .alarm import alarm
from .contract import (
    PROGRESS_VARIABLE,
    STEPS_VARIABLE,
    TIMEOUT_VARIABLE,
    Fact,
    progress_line,
    step_of_test,
    time_bound,
)

SYNC_GRACE = 2.0  # how much longer than the bound an async test may take to react to cancellation
BOUND_TIMES = "bound_times"  # a marker: a check that compares hundreds of inputs gets n bounds, not one
MAX_TIMEOUTS = 3  # a solution that hangs everywhere should not cost the learner a minute
GIVEN_FILES = ("protocol.py", "stream_rules.py")  # code the lesson calls but does not write
_HERE = Path(__file__).resolve().parent  # this plugin's frames are never the learner's line

_timed_out = pytest.StashKey[float]()
_interrupted = pytest.StashKey[bool]()  # SIGALRM stopped it: the code never gave the event loop back


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "step(number): the last practice step a beyond check needs")
    config.addinivalue_line("markers", f"{BOUND_TIMES}(n): this test may take n times the per-test bound")
    config.pluginmanager.register(CheckReporter(time_bound(os.environ.get(TIMEOUT_VARIABLE))))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Each test's order and step as properties; only the selected steps' tests kept."""
    selection = os.environ.get(STEPS_VARIABLE)
    chosen = json.loads(selection) if selection else None
    kept: list[pytest.Item] = []
    for order, item in enumerate(items):
        item.user_properties.append((Fact.ORDER.value, str(order)))
        marker = item.get_closest_marker("step")
        marked = str(marker.args[0]) if marker is not None and marker.args else None
        if marked is not None:
            item.user_properties.append((Fact.STEP.value, marked))
        if chosen is None or (
            step_of_test(item.name, marked, chosen["keywords"]) in chosen["run"]
            and item.name not in chosen.get("skip", ())
        ):
            kept.append(item)
    if len(kept) < len(items):
        config.hook.pytest_deselected(items=[item for item in items if all(item is not k for k in kept)])
        items[:] = kept


@pytest.fixture
def anyio_backend() -> str:
    """The chapter's tests run on asyncio (an installed trio would otherwise double them)."""
    return "asyncio"


def _timeout_text(seconds: float) -> str:
    return f"超过 {seconds:g} 秒没有结束"


class CheckReporter:
    """One run's state: the bound, the failing comparison of the current test, the timeouts so far."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.comparisons: list[tuple[str, object, object]] = []
        self.timeouts = 0

    # --- the time bound -------------------------------------------------------------------------

    @pytest.hookimpl(wrapper=True)
    def pytest_pyfunc_call(self, pyfuncitem: pytest.Function) -> Generator[None, object, object]:
        test = pyfuncitem.obj
        if not asyncio.iscoroutinefunction(test):
            return (yield)
        pyfuncitem.obj = _bounded(test, pyfuncitem, self.bound(pyfuncitem))
        try:
            return (yield)
        finally:
            pyfuncitem.obj = test

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, object, object]:
        is_async = asyncio.iscoroutinefunction(getattr(item, "obj", None))
        seconds = self.bound(item)
        after = seconds + SYNC_GRACE if is_async else seconds

        def interrupt(signum: int, frame: FrameType | None) -> None:
            item.stash[_timed_out] = seconds
            item.stash[_interrupted] = True
            pytest.fail(_timeout_text(seconds))

        with alarm(after, interrupt):
            return (yield)

    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        self.comparisons.clear()

    def bound(self, item: pytest.Item) -> float:
        """This test's bound: the run's, times its ``bound_times`` marker's factor when it has one."""
        marker = item.get_closest_marker(BOUND_TIMES)
        return self.seconds * float(marker.args[0]) if marker is not None and marker.args else self.seconds

    # --- report facts ---------------------------------------------------------------------------

    def pytest_assertrepr_compare(self, op: str, left: object, right: object) -> None:
        """Remember the failing comparison's operands; pytest's own explanation is left unchanged."""
        self.comparisons.append((op, left, right))

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, Any, Any]:
        report = yield
        if call.when != "call":
            return report
        item.user_properties.extend(_described(item))
        report.user_properties = list(item.user_properties)
        if not report.failed or call.excinfo is None:
            return report
        facts = self._timeout_facts(item)
        facts += _failure_facts(call.excinfo, item.path, self.comparisons, lesson_only=bool(facts))
        item.user_properties.extend(facts)
        report.user_properties = list(item.user_properties)
        if facts:
            shown = "\n".join(f"{name}: {value}" for name, value in facts)
            report.sections.append(("pi_course check", shown))
        return report

    def _timeout_facts(self, item: pytest.Item) -> list[tuple[str, str]]:
        timed_out = item.stash.get(_timed_out, None)
        if timed_out is None:
            return []
        self.timeouts += 1
        facts = [(Fact.TIMEOUT.value, f"{timed_out:g}")]
        if item.stash.get(_interrupted, False):
            facts.append((Fact.NEVER_AWAITS.value, "1"))
            item.session.shouldstop = "一项测试停在一个从不 await 的循环里，其余测试不再运行"
        elif self.timeouts >= MAX_TIMEOUTS:
            item.session.shouldstop = f"{self.timeouts} 项测试超时，其余测试不再运行"
        return facts

    # --- progress -------------------------------------------------------------------------------

    def pytest_runtest_logstart(self, nodeid: str) -> None:
        _progress(progress_line(nodeid))

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "call" or (report.when == "setup" and not report.passed):
            _progress(progress_line(report.nodeid, report.outcome))


def _bounded(test: Callable[..., Any], item: pytest.Item, seconds: float) -> Callable[..., Any]:
    @functools.wraps(test)
    async def bounded(*args: Any, **kwargs: Any) -> Any:
        deadline = asyncio.timeout(seconds)
        try:
            async with deadline:
                return await test(*args, **kwargs)
        except TimeoutError:
            if not deadline.expired():
                raise  # the test's own TimeoutError
            item.stash[_timed_out] = seconds
            pytest.fail(_timeout_text(seconds))

    return bounded


def _failure_facts(
    excinfo: pytest.ExceptionInfo[BaseException],
    test_file: Path,
    comparisons: list[tuple[str, object, object]],
    *,
    lesson_only: bool,
) -> list[tuple[str, str]]:
    """What the failure shows: a fact that cannot be computed is left out, never fatal."""
    facts: list[tuple[str, str]] = []
    with contextlib.suppress(Exception):
        if comparisons and isinstance(excinfo.value, AssertionError):
            op, left, right = comparisons[-1]
            if op == "==":
                difference = json.dumps(first_difference(left, right), ensure_ascii=False)
                facts.append((Fact.DIFFERENCE.value, difference))
    with contextlib.suppress(Exception):
        messages = _error_messages(excinfo.tb, test_file)
        if messages:
            facts.append((Fact.ERROR_MESSAGE.value, json.dumps(messages, ensure_ascii=False)))
    with contextlib.suppress(Exception):
        where = _innermost_package_line(excinfo.value, lesson_only=lesson_only)
        if where:
            facts.append((Fact.WHERE.value, where))
    return facts


def _described(item: pytest.Item) -> list[tuple[str, str]]:
    """A check's name (its docstring's first line) and its ``下一步：`` line, when it has them."""
    doc = getattr(getattr(item, "function", None), "__doc__", None) or ""
    lines = [line.strip() for line in doc.strip().splitlines()]
    if not lines or not lines[0]:
        return []
    label = lines[0]
    callspec = getattr(item, "callspec", None)
    if callspec is not None:
        label += f"（{callspec.id}）"
    described = [(Fact.LABEL.value, label)]  # the step is a property from collection on
    hint = " ".join(line.removeprefix("下一步：") for line in lines if line.startswith("下一步："))
    if hint:
        described.append((Fact.HINT.value, hint))
    return described


def first_difference(left: object, right: object) -> dict[str, Any]:
    """Where ``left`` (actual) and ``right`` (expected) first differ, descending into containers.

    Returns ``path`` (like ``[0].content[1].text``), the reprs of both values there, and the
    outermost differing element's path and reprs as context.
    """
    steps: list[tuple[str, object, object]] = []
    while True:
        step = _differing_child(left, right)
        if step is None:
            break
        name, left, right = step
        steps.append((name, left, right))
        if left is _MISSING or right is _MISSING:
            break
    path = "".join(name for name, _, _ in steps)
    found: dict[str, Any] = {"path": path, "actual": repr(left), "expected": repr(right)}
    if type(left) is not type(right) and _MISSING not in (left, right):
        found["types"] = [type(left).__name__, type(right).__name__]
    if len(steps) > 1:
        outer, outer_left, outer_right = steps[0]
        found["outer"] = {"path": outer, "actual": repr(outer_left), "expected": repr(outer_right)}
    return found


class _Missing:
    def __repr__(self) -> str:
        return "<没有这一项>"


_MISSING = _Missing()


def _differing_child(left: object, right: object) -> tuple[str, object, object] | None:
    """The first child position where the two differ, or ``None`` to stop descending here."""
    if type(left) is not type(right) or isinstance(left, str | bytes):
        return None
    if isinstance(left, list | tuple) and isinstance(right, list | tuple):
        for index in range(max(len(left), len(right))):
            a = left[index] if index < len(left) else _MISSING
            b = right[index] if index < len(right) else _MISSING
            if a is _MISSING or b is _MISSING or a != b:
                return f"[{index}]", a, b
        return None
    if isinstance(left, dict) and isinstance(right, dict):
        for key in [*right, *(key for key in left if key not in right)]:
            a, b = left.get(key, _MISSING), right.get(key, _MISSING)
            if a is _MISSING or b is _MISSING or a != b:
                return f"[{key!r}]", a, b
        return None
    if dataclasses.is_dataclass(left) and not isinstance(left, type):
        for field in dataclasses.fields(left):
            a, b = getattr(left, field.name, _MISSING), getattr(right, field.name, _MISSING)
            if a != b:
                return f".{field.name}", a, b
    return None


def _error_messages(tb: TracebackType | None, test_file: Path) -> list[str]:
    """The ``error_message`` of every error event or error result in the test file's frames."""
    seen: list[str] = []

    def visit(value: object, depth: int = 0) -> None:
        if isinstance(value, list | tuple) and depth == 0:
            for item in value[:1000]:
                visit(item, 1)
            return
        message = getattr(value, "error", None) if getattr(value, "type", None) == "error" else value
        if getattr(message, "stop_reason", None) in ("error", "aborted"):
            text = getattr(message, "error_message", None)
            if isinstance(text, str) and text not in seen:
                seen.append(text)

    while tb is not None:
        frame = tb.tb_frame
        if Path(frame.f_code.co_filename) == test_file:
            for value in list(frame.f_locals.values()):
                with contextlib.suppress(Exception):
                    visit(value)
        tb = tb.tb_next
    return seen


def _innermost_package_line(error: BaseException, *, lesson_only: bool = False) -> str | None:
    """``pi_course/transport.py:87 (OpenAICompatibleTransport._reads)``: the deepest frame of the package.

    ``protocol.py`` is never named; with ``lesson_only`` (a timeout: where was it stuck?) neither is
    the given code, so a loop that calls a given helper is named by its own line.
    """
    skipped = GIVEN_FILES if lesson_only else GIVEN_FILES[:1]
    package = sys.modules.get("pi_course")  # the tree under test's package
    package_file = getattr(package, "__file__", None)
    if package_file is None:
        return None
    root = Path(package_file).resolve().parent
    found: str | None = None
    chain: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and current not in chain and len(chain) < 10:
        chain.append(current)
        current = current.__cause__ or current.__context__
    for exception in chain:
        tb = exception.__traceback__
        while tb is not None:
            code = tb.tb_frame.f_code
            path = Path(code.co_filename).resolve()
            if path.is_relative_to(root) and path.name not in skipped and not path.is_relative_to(_HERE):
                name = getattr(code, "co_qualname", code.co_name)
                found = f"pi_course/{path.relative_to(root).as_posix()}:{tb.tb_lineno} ({name})"
            tb = tb.tb_next
        if found:
            return found
    return found


def _progress(line: str) -> None:
    path = os.environ.get(PROGRESS_VARIABLE)
    if path:
        with open(path, "a", encoding="utf-8") as progress:
            progress.write(line)
