"""A practice copy's GitHub Classroom autograding workflow, one graded step per practice step."""

from __future__ import annotations

from ..chapter.steps import STEPS
from .locate import PACKAGE

# What `check 05` needs in a copy's CI (the copy's own pi_course is what runs): pytest and anyio for
# the tests, httpx for the transport, uvicorn and starlette for the local provider of the beyond checks.
CI_REQUIREMENTS = ("httpx>=0.27", "pytest>=8.0", "anyio>=4.3", "uvicorn>=0.30", "starlette>=0.37")
CHAPTER_RUNNER = "chapter-05"


def classroom_workflow() -> str:
    """The copy's GitHub Classroom autograding workflow: one graded step per practice step.

    Each step is worth its focused tests (1 + 3 + 5 + 2 points); the last runs the whole
    ``check 05`` (beyond checks included) for no points, so the run fails until the chapter is done.
    """
    template = (PACKAGE / "course" / "templates" / "classroom.yml").read_text(encoding="utf-8")
    graders = [
        (
            f"step-{step.number.replace('.', '-')}",
            f"{step.number} {step.label}",
            f"--step {step.number}",
            step.expected,
        )
        for step in STEPS
    ]
    graders.append((CHAPTER_RUNNER, "第 05 章：完成（聚焦测试与本章之外的检查）", "", 0))
    blocks = [
        f'      - name: "{title}"\n        id: {runner}\n'
        "        uses: classroom-resources/autograding-command-grader@v1\n        with:\n"
        f'          test-name: "{title}"\n          command: python -m pi_course check 05 {flags}'.rstrip()
        + f"\n          timeout: 5\n          max-score: {points}"
        for runner, title, flags, points in graders
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
