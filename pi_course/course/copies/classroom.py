"""A practice copy's GitHub Classroom autograding workflow: one graded step per focused test.

Each step runs one focused test and is worth that test's points (1 each unless the instructor
set ``--points``), the same points ``grade 05`` counts, so a copy at 10/11 scores the same in both.
"""

from __future__ import annotations

import ast
from pathlib import Path

from ...chapter.steps import FOCUSED_TEST, STEPS, step_of
from .locate import PACKAGE, course_root
from .points import DEFAULT_POINTS, Points, _number

# What `check 05` needs in a copy's CI (the copy's own pi_course is what runs): pytest and anyio for
# the tests, httpx for the transport, uvicorn and starlette for the local provider of the beyond checks.
CI_REQUIREMENTS = ("httpx>=0.27", "pytest>=8.0", "anyio>=4.3", "uvicorn>=0.30", "starlette>=0.37")
CHAPTER_RUNNER = "chapter-05"
# check's own pytest plugin (the per-test time bound), imported through the copy's package.
PLUGIN = "pi_course.course.checker.plugin_path.pi_course_check.plugin"


def focused_tests(test_file: Path) -> list[tuple[str, str]]:
    """The focused tests as (step number, test name), in the order of the steps, then of the file."""
    tree = ast.parse(test_file.read_text(encoding="utf-8"))
    names = [
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test_")
    ]
    found = []
    for step in STEPS:
        found += [
            (step.number, name) for name in names if (owner := step_of(name)) and owner.number == step.number
        ]
    return found


def _shipped_test_file() -> Path:
    """The focused tests beside the package (a clone) or packed inside it (a wheel)."""
    for base in (course_root(), PACKAGE / "_course"):
        if (base / "tests" / FOCUSED_TEST).is_file():
            return base / "tests" / FOCUSED_TEST
    raise FileNotFoundError(f"tests/{FOCUSED_TEST} not found beside {PACKAGE}")


def grader_command(name: str) -> str:
    """The command one Classroom step runs: one focused test, with check's time bound."""
    return f"python -m pytest -q -p no:cacheprovider -p {PLUGIN} tests/{FOCUSED_TEST}::{name}"


def classroom_workflow(points: Points = DEFAULT_POINTS, test_file: Path | None = None) -> str:
    """The copy's GitHub Classroom autograding workflow: one graded step per focused test.

    Each test is worth its step's points per test (1 by default); the last step runs the whole
    ``check 05`` (beyond checks included) for no points, so the run fails until the chapter is done.
    """
    template = (PACKAGE / "course" / "copies" / "templates" / "classroom.yml").read_text(encoding="utf-8")
    tests = focused_tests(test_file or _shipped_test_file())
    graders = [
        (
            f"test-{index:02d}-{number.replace('.', '-')}",
            f"{number} {name}",
            grader_command(name),
            points.of(number),
        )
        for index, (number, name) in enumerate(tests, start=1)
    ]
    graders.append(
        (CHAPTER_RUNNER, "第 05 章：完成（聚焦测试与本章之外的检查）", "python -m pi_course check 05", 0)
    )
    blocks = [
        f'      - name: "{title}"\n        id: {runner}\n'
        "        uses: classroom-resources/autograding-command-grader@v1\n        with:\n"
        f'          test-name: "{title}"\n          command: {command}'
        + f"\n          timeout: 5\n          max-score: {_number(score)}"
        for runner, title, command, score in graders
    ]
    results = [
        f'          {runner.upper()}_RESULTS: "${{{{ steps.{runner}.outputs.result }}}}"'
        for runner, *_ in graders
    ]
    return (
        template.replace("@REQUIREMENTS@", " ".join(f'"{requirement}"' for requirement in CI_REQUIREMENTS))
        .replace("@GRADERS@", "\n".join(blocks))
        .replace("@RESULTS@", "\n".join(results))
        .replace("@RUNNERS@", ",".join(runner for runner, *_ in graders))
    )
