"""What ``check``'s runner and its pytest plugin agree on, written once: both import this module.

The plugin runs inside the tree under test's pytest process, imported from this folder rather than
through ``pi_course`` (the tree's own package), so this module imports nothing but the standard library.
"""

from __future__ import annotations

import json
from enum import StrEnum

PLUGIN = "pi_course_check.plugin"  # what the runner passes to pytest's -p
TIMEOUT_VARIABLE = "PI_COURSE_TEST_TIMEOUT"  # seconds per test
PROGRESS_VARIABLE = "PI_COURSE_CHECK_PROGRESS"  # a file the plugin appends JSON lines to
STEPS_VARIABLE = "PI_COURSE_CHECK_STEPS"  # JSON: which steps' tests to run (see step_selection)
REFERENCE_VARIABLE = "PI_COURSE_CHECK_REFERENCE"  # where the reference's side of comparisons is kept
TEST_TIMEOUT = 5.0  # the default bound per test; a correct solution needs milliseconds


class Fact(StrEnum):
    """The junit properties the plugin records on a test case and the runner reads back."""

    LABEL = "pi_course_label"  # a check's name (its docstring's first line)
    STEP = "pi_course_step"  # the last practice step a beyond check needs
    HINT = "pi_course_hint"  # a check's "下一步：" line
    TIMEOUT = "pi_course_timeout"  # the bound (seconds) the test ran past
    NEVER_AWAITS = "pi_course_never_awaits"  # "1": SIGALRM had to interrupt it
    DIFFERENCE = "pi_course_difference"  # JSON: the first difference of the failing ==
    ERROR_MESSAGE = "pi_course_error_message"  # JSON list: the error_message of every error seen
    WHERE = "pi_course_where"  # the innermost pi_course line on the traceback
    COMPARED = (
        "pi_course_compared"  # how many inputs a comparison with the reference ran (test_05_compare.py)
    )
    ORDER = "pi_course_order"  # the test's place among all tests collected: one order for every selection


def step_selection(keywords: dict[str, str], run: list[str], skip: list[str] | None = None) -> str:
    """The value of :data:`STEPS_VARIABLE`: every step's ``-k`` keyword, the steps to run, and the
    tests of those steps not to run (their results are kept)."""
    return json.dumps({"keywords": keywords, "run": run, "skip": skip or []})


def step_of_test(name: str, marked: str | None, keywords: dict[str, str]) -> str:
    """A test's step: its ``step`` marker, else the focused test's keyword, else the last step."""
    if marked is not None:
        return marked
    for number, keyword in keywords.items():
        if name.startswith(f"test_{keyword}"):
            return number
    return list(keywords)[-1]


def time_bound(value: str | None) -> float:
    """The per-test bound from the variable's text: :data:`TEST_TIMEOUT` unless a positive number."""
    try:
        seconds = float(value) if value is not None else TEST_TIMEOUT
    except ValueError:
        return TEST_TIMEOUT
    return seconds if seconds > 0 else TEST_TIMEOUT


def progress_line(nodeid: str, outcome: str | None = None) -> str:
    """One line of the progress file: a test started (no ``outcome``) or has its outcome."""
    record = {"start": nodeid} if outcome is None else {"nodeid": nodeid, "outcome": outcome}
    return json.dumps(record, ensure_ascii=False) + "\n"


def read_progress_line(line: str) -> tuple[str, str | None]:
    """``(nodeid, outcome)`` from a line :func:`progress_line` wrote; ``None``: it only started."""
    record = json.loads(line)
    if "start" in record:
        return record["start"], None
    return record["nodeid"], record["outcome"]
