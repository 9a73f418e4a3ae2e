"""The chapter's four practice steps, defined once.

Everything that names a step (``check``, ``checkpoint``, the CLI's ``--step`` choices, the
notebooks' "finish step 5.x first" lines, the practice copy's starters) reads it from here.
"""

from __future__ import annotations

from dataclasses import dataclass

FOCUSED_TEST = "test_05_provider_adapter.py"  # the chapter's 11 focused tests
BEYOND_TEST = "test_05_beyond.py"  # the checks beyond the chapter, counted apart
RULES_TEST = "test_05_rules.py"  # the chapter's rules checked on the learner's own code (chapter/rules.py)
COMPARE_TEST = "test_05_compare.py"  # the learner's pieces beside the reference's (read as rule checks)


@dataclass(frozen=True)
class Step:
    """One practice step: what it is called, which files a learner edits, how it is tested."""

    number: str
    label: str
    files: tuple[str, ...]
    keyword: str  # the pytest ``-k`` filter over FOCUSED_TEST
    expected: int  # how many focused tests that filter selects
    notebook: str  # the practice notebook that ends with this step's checkpoint cell


STEPS = (
    Step(
        "5.1", "出站转换", ("pi_course/protocol.py", "pi_course/outbound.py"), "outbound", 1, "05-1-outbound"
    ),
    Step(
        "5.2",
        "normalized transport 状态机",
        ("pi_course/adapter.py",),
        "normalized_transport",
        3,
        "05-2-state-machine",
    ),
    Step("5.3", "SSE 与 unknown 边界", ("pi_course/sse.py", "pi_course/transport.py"), "sse", 5, "05-3-sse"),
    Step(
        "5.4",
        "fetch transport 与密钥脱敏",
        ("pi_course/transport.py",),
        "fetch_transport",
        2,
        "05-4-http-and-redaction",
    ),
)
STEP_NUMBERS = tuple(step.number for step in STEPS)
CHAPTER_TOTAL = sum(step.expected for step in STEPS)  # 1 + 3 + 5 + 2 = 11

# What a practice copy is made of, said once; everything that lists these files reads them here.
LESSON_FILES = tuple(dict.fromkeys(file.removeprefix("pi_course/") for step in STEPS for file in step.files))
# The code the lesson calls but does not write; the chapter's test files, in the order check runs them.
GIVEN_MODULES = ("seam.py", "stream_rules.py", "payload_reading.py")
SHIPPED_TESTS = (FOCUSED_TEST, BEYOND_TEST, RULES_TEST, COMPARE_TEST)
START_NOTEBOOK = "notebooks/05-0-overview.ipynb"  # where a learner's JupyterLab opens (Makefile: LAB_START)


def step(number: str) -> Step:
    """The step called ``number`` ("5.1" … "5.4"); KeyError for any other."""
    for candidate in STEPS:
        if candidate.number == number:
            return candidate
    raise KeyError(f"unknown step {number!r}; choose one of {', '.join(STEP_NUMBERS)}")


def step_of(name: str, steps: tuple[Step, ...] = STEPS) -> Step | None:
    """The practice step a focused test belongs to, by its name (``test_<keyword>…``)."""
    for candidate in steps:
        if name.startswith(f"test_{candidate.keyword}"):
            return candidate
    return None
