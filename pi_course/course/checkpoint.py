"""Run chapter 05's focused tests and report them per practice step (``check``, notebooks).

The tests run in a fresh ``python -m pytest`` process with the chosen tree first on
``sys.path``, so a practice copy is tested as it is on disk, and a notebook kernel's own event
loop and imports are never involved.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

FOCUSED_TEST = "test_05_provider_adapter.py"
PACKAGE = Path(__file__).resolve().parents[1]  # the pi_course package this module belongs to


@dataclass(frozen=True)
class Step:
    number: str
    label: str
    keyword: str
    expected: int


STEPS = (
    Step("5.1", "出站转换", "outbound", 1),
    Step("5.2", "normalized transport 状态机", "normalized_transport", 3),
    Step("5.3", "SSE 与 unknown 边界", "sse", 5),
    Step("5.4", "fetch transport 与密钥脱敏", "fetch_transport", 2),
)
CHAPTER_TOTAL = sum(step.expected for step in STEPS)


@dataclass(frozen=True)
class Report:
    """Per-step pass counts, or the one message that stopped the tests from being collected."""

    passed: dict[str, int]
    red_light: str | None = None
    failures: tuple[tuple[str, str], ...] = ()  # (test name, the report's "E" lines)

    def line(self, step: Step) -> str:
        passed = self.passed.get(step.number, 0)
        verdict = "通过" if passed == step.expected else "未通过"
        return f"{step.label}：{passed}/{step.expected} {verdict}"

    @property
    def total(self) -> int:
        return sum(self.passed.values())

    def ok(self, steps: tuple[Step, ...] = STEPS) -> bool:
        return self.red_light is None and all(self.passed.get(s.number, 0) == s.expected for s in steps)


def course_root(path: str | Path | None = None) -> Path:
    """The tree to test: ``path`` if given, else the one this ``pi_course`` was imported from."""
    if path is not None:
        return Path(path).resolve()
    return PACKAGE.parent


def focused_test_file(root: Path) -> Path:
    for candidate in (root / "tests" / FOCUSED_TEST, root / "pi_course" / "_course" / "tests" / FOCUSED_TEST):
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(f"{FOCUSED_TEST} not found under {root}")


_PROBE = """
import dataclasses, pi_course
missing = []
if not hasattr(pi_course, "ToolDefinition"):
    missing.append("pi_course 没有导出 ToolDefinition")
if "tools" not in {f.name for f in dataclasses.fields(pi_course.AgentContext)}:
    missing.append("AgentContext 没有 tools 字段")
print("；".join(missing))
"""


def _environment(root: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(root), env.get("PYTHONPATH")]))
    env.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    # The same report everywhere: some kernels force colour, and pytest prints full, untruncated
    # assertion diffs when it sees a CI variable.
    for variable in ("FORCE_COLOR", "PY_COLORS", "CLICOLOR_FORCE", "CI", "BUILD_NUMBER"):
        env.pop(variable, None)
    return env


def run_focused(steps: tuple[Step, ...] = STEPS, path: str | Path | None = None) -> Report:
    """Run the focused tests of ``steps`` against the tree at ``path`` and count passes per step."""
    root = course_root(path)
    env = _environment(root)
    probe = subprocess.run(
        [sys.executable, "-c", _PROBE], cwd=root, env=env, capture_output=True, text=True, check=False
    )
    if probe.returncode != 0:
        return Report({}, f"pi_course 无法导入：{probe.stderr.strip().splitlines()[-1]}")
    if probe.stdout.strip():
        return Report({}, f"第一次红灯：{probe.stdout.strip()}。先完成实践 5.1 的两个类型。")

    test_file = focused_test_file(root)
    with tempfile.TemporaryDirectory() as scratch:
        junit = Path(scratch) / "junit.xml"
        keyword = " or ".join(step.keyword for step in steps)
        command = [
            sys.executable, "-m", "pytest", str(test_file), "-k", keyword, "-q", "-p", "no:cacheprovider",
            # The focused tests need neither; importing nbval's and hypothesis' plugins costs seconds.
            "-p", "no:nbval", "-p", "no:hypothesispytest",
            "--rootdir", str(test_file.parent), "-o", "addopts=", "--color=no", "--code-highlight=no",
            f"--junitxml={junit}",
        ]  # fmt: skip
        run = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, check=False)
        if not junit.exists():
            tail = (run.stdout + run.stderr).strip().splitlines()[-3:]
            return Report({}, "测试没有运行：" + " / ".join(tail))
        cases = ET.parse(junit).getroot().iter("testcase")
        passed: dict[str, int] = {}
        failures: list[tuple[str, str]] = []
        for case in cases:
            name = case.get("name", "")
            problems = [child for child in case if child.tag in ("failure", "error", "skipped")]
            failed = bool(problems)
            failures += [
                (name, _assertion_lines(problem.text or problem.get("message") or "")) for problem in problems
            ]
            for step in steps:
                if name.startswith(f"test_{step.keyword}"):
                    passed[step.number] = passed.get(step.number, 0) + (not failed)
    return Report(passed, failures=tuple(failures))


def _assertion_lines(report: str) -> str:
    """The ``E   ...`` lines of a pytest failure report: what was asserted and how it differed."""
    lines = [line[1:].strip() for line in report.splitlines() if line.startswith("E ")]
    return "\n".join(line for line in lines if line) or report.strip()


def steps_for(number: str | None) -> tuple[Step, ...]:
    if number is None:
        return STEPS
    for step in STEPS:
        if step.number == number:
            return (step,)
    raise ValueError(f"unknown step {number!r}; choose one of {', '.join(s.number for s in STEPS)}")


def report_lines(report: Report, steps: tuple[Step, ...]) -> list[str]:
    if report.red_light is not None:
        return [report.red_light]
    lines = [report.line(step) for step in steps]
    if len(steps) == len(STEPS):
        lines.append(f"第 05 章聚焦测试：{report.total}/{CHAPTER_TOTAL}")
    return lines


def check(step: str | None = None, path: str | Path | None = None) -> bool:
    """Print one line per step (and the chapter total); ``True`` when everything passed.

    This is what notebook checkpoint cells and ``python -m pi_course check 05`` call.
    """
    steps = steps_for(step)
    report = run_focused(steps, path)
    print("\n".join(report_lines(report, steps)))
    for name, message in report.failures:  # what to look at first, one line per failing test
        print(f"  ✗ {name}: {message.splitlines()[0] if message else ''}")
    return report.ok(steps)
