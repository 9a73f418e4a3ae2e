"""``check``: what notebook checkpoint cells and ``python -m pi_course check 05`` call.

One run of the tests gives one :class:`~.report.Report`; everything shown is computed from it:
the count lines, the next steps (:mod:`.advice`), the verdict (the last line, which the exit
status follows) and, with ``--json``, the record that ``grade`` collects per copy.

``python -m pi_course check 05`` runs the focused tests and the checks beyond the chapter; the
chapter is done when all 11 focused tests and every beyond check pass. ``--course-only`` or
``--step`` runs the focused tests alone. ``check()`` from Python (the notebooks' checkpoint
cells) runs the focused tests alone unless ``beyond=True``.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from ..chapter.rules import RULES
from ..chapter.steps import BEYOND_TEST, CHAPTER_TOTAL, FOCUSED_TEST, STEP_NUMBERS, STEPS, Step
from ..chapter.steps import step as step_named
from .advice import first_thing_to_fix, next_step_lines
from .assemble import instructor_copy
from .checkpoint import tested_tree
from .copyrun import DEFAULT_TIMEOUT, assembled_check, run_copy
from .exits import EXIT_DONE, EXIT_FAILED, EXIT_INTERRUPTED, EXIT_USAGE
from .locate import check_target, course_root, is_practice_copy, practice_path_problem
from .record import CopyRecord, Status, nothing_ran, parse_record, record_line
from .report import Report
from .rulestate import count_line, rule_name, rule_results, rules_ok, table_lines
from .sandbox import SandboxError, choose, not_sandboxed_line
from .testrun import run_tests

__all__ = [
    "Verdict",
    "check",
    "check_command",
    "check_record",
    "course_root",
    "record_of",
    "report_lines",
    "verdict_of",
]

CHAPTER = "第 05 章"


@dataclass(frozen=True)
class Verdict:
    """What was checked (``第 05 章``, ``实践 5.2``…), whether it is done, and what to fix first."""

    scope: str
    done: bool
    first_failure: str | None

    @property
    def line(self) -> str:
        return f"{self.scope}：完成" if self.done else f"{self.scope}：未完成——{self.first_failure}"


def verdict_of(report: Report, steps: tuple[Step, ...] = STEPS, *, beyond: bool = True) -> Verdict:
    """The verdict on what was asked: the whole chapter only with the beyond checks (``beyond``).

    A red light (pi_course does not import, or 5.1's types are missing) is the verdict's reason
    as it stands: nothing else was run.
    """
    if len(steps) == 1:
        scope = f"实践 {steps[0].number}"
    elif not beyond:
        scope = f"{CHAPTER}聚焦测试"
    else:
        scope = CHAPTER
    done = report.ok(steps) and report.beyond_ok() and rules_ok(report)
    if beyond and report.beyond_note is not None and report.ok(steps):  # a missing beyond file: never done
        missing = (
            f"没有找到 tests/{BEYOND_TEST}，本章之外的检查没有运行，不能算完成。"
            f"下一步：从新的练习副本（practice 05 新目录）拷回 tests/{BEYOND_TEST}"
        )
        return Verdict(scope, False, missing)
    if done:
        return Verdict(scope, True, None)
    first = first_thing_to_fix(report, steps) or "没有找到失败的测试（用 check -v 查看 pytest 的完整报告）"
    return Verdict(scope, False, first)


def report_lines(report: Report, steps: tuple[Step, ...], *, compact: bool = False) -> list[str]:
    """The count lines: one per step, the chapter total, then the beyond checks when they ran.

    None for a red light: the verdict says it.
    """
    if report.red_light is not None:
        return []
    lines = [report.line(step) for step in steps]
    if len(steps) == len(STEPS):
        lines.append(f"第 05 章聚焦测试：{report.total}/{CHAPTER_TOTAL}")
    rules = count_line(report)
    if rules is not None:
        lines.append(rules)
        lines += [  # the broken rules of a done step: the verdict names the first
            f"  ✗ {rule_name(result)}"
            for result in rule_results(report) or ()
            if result.state == "broken" and report.step_done(step_named(result.rule.step))
        ]
    if report.beyond_note is not None:
        lines.append(report.beyond_note)
    if report.beyond is not None and not report.beyond:
        lines.append("本章之外的检查：没有运行")
    elif report.beyond is not None:
        lines += _beyond_lines(report, compact=compact)
    if report.stopped is not None:
        lines.append(report.stopped)
    return lines


def _beyond_lines(report: Report, *, compact: bool = False) -> list[str]:
    """The beyond checks: passed ones by name, failed ones (details follow), pending ones per step.

    ``compact`` (a notebook's checkpoint cell): the passed ones are the count line alone.
    """
    checks = report.beyond or ()
    pending = report.beyond_count("pending")
    count = f"本章之外的检查：{report.beyond_count('passed')}/{len(checks)}"
    lines = [count + (f"（{pending} 项待完成）" if pending else "")]
    waiting: dict[str, int] = {}
    for beyond in checks:
        state = report.beyond_state(beyond)
        if state == "passed" and compact:
            continue
        if state == "passed":
            lines.append(f"  ✓ {beyond.shown}")
        elif state == "failed" and not report.ok(STEPS):  # with every step done, advice details it
            lines.append(f"  ✗ {beyond.shown}")
        elif state == "pending":
            first = next(step for step in report.needed_steps(beyond) if not report.step_done(step))
            waiting[first.number] = waiting.get(first.number, 0) + 1
    for number, count_waiting in sorted(waiting.items()):
        lines.append(f"  待完成 {count_waiting} 项：实践 {number} 的聚焦测试全部通过之后才算")
    return lines


def print_report(
    report: Report,
    steps: tuple[Step, ...],
    *,
    beyond: bool,
    verbose: bool = False,
    file: TextIO | None = None,
    rules: bool = False,
    compact: bool = False,
) -> Verdict:
    """Print what ``check`` shows, ending with the verdict; return the verdict.

    ``rules``: the chapter's rules table (``check 05 --rules``) instead of the count lines.
    """
    out = file or sys.stdout
    if verbose and report.output:
        print(report.output.rstrip(), end="\n\n", file=out)
    # --rules: the whole table at every stage (with a red light every rule is still to do)
    shown = table_lines(report) if rules else report_lines(report, steps, compact=compact)
    lines = shown + next_step_lines(report, steps)
    if lines:
        print("\n".join(lines), file=out)
    verdict = verdict_of(report, steps, beyond=beyond)
    print(verdict.line, file=out)
    return verdict


def check(
    step: str | None = None,
    path: str | Path | None = None,
    *,
    beyond: bool = False,
    verbose: bool = False,
) -> bool:
    """Print one line per step, the next steps and the verdict; ``True`` when it is done.

    This is what notebook checkpoint cells call: from Python it runs the course's focused tests
    only, unless ``beyond=True`` (the command line's default). ``verbose`` prints pytest's own
    report first. It tests the practice copy the kernel's folder belongs to, whatever
    ``pi_course`` the kernel imported, and says which tree in its first line; a step whose
    earlier steps are not done names the first of them before anything about its own files.
    """
    root, first_line = tested_tree(path)
    print(first_line)
    asked = None if step is None else step_named(step)
    steps = STEPS if asked is None else (asked,)
    beyond = beyond and asked is None
    before = tuple(earlier for earlier in STEPS if step is not None and earlier.number < step)
    report = run_tests((*before, *steps), root, beyond=beyond, verbose=verbose)
    blocking = next((earlier for earlier in before if not report.step_done(earlier)), None)
    if report.red_light is not None or blocking is None or asked is None:
        return print_report(report, steps, beyond=beyond, verbose=verbose, compact=True).done
    # 5.3 on a copy where 5.2 is still a stub fails for 5.2's reason: say that, with 5.2's hints,
    # then this step's own count (its failures likely follow from the earlier step's).
    print(f"先完成实践 {blocking.number}（{blocking.label}）：实践 {step} 用到它。{report.line(blocking)}")
    lines = next_step_lines(report, (*before, *steps))
    if lines:
        print("\n".join(line for line in lines if not line.startswith("  之后还未通过")))
    print(report.line(asked))
    first = f"实践 {blocking.number}（{blocking.label}）"
    if report.step_done(asked):
        print(f"实践 {step}：完成（它用到的{first}还没通过）")
        return True
    print(f"实践 {step}：未完成——先完成{first}")
    return False


# --- the record -----------------------------------------------------------------------------------


def record_of(report: Report, root: Path, seconds: float) -> CopyRecord:
    """The record of one whole-chapter run (focused and beyond): the same facts the text shows."""
    verdict = verdict_of(report, STEPS)
    status: Status
    if report.timed_out:
        status = "timeout"
    elif report.import_error:
        status = "import-error"
    else:
        status = "done" if verdict.done else "incomplete"
    return CopyRecord(
        name=root.name,
        path=str(root),
        status=status,
        focused={step.number: [report.passed.get(step.number, 0), step.expected] for step in STEPS},
        focused_passed=report.total,
        focused_total=CHAPTER_TOTAL,
        beyond_passed=report.beyond_count("passed"),
        beyond_total=len(report.beyond or ()),
        first_failure=verdict.first_failure,
        seconds=round(seconds, 2),
        rules_kept=sum(result.state == "kept" for result in rule_results(report) or ()),
        rules_total=len(RULES),
        compared={number: report.compared[number] for number in STEP_NUMBERS if number in report.compared},
        tests=_test_outcomes(report),
    )


def _test_outcomes(report: Report) -> dict[str, bool]:
    """Each focused test and beyond check by name: passed, or failed (a pending beyond check is left out)."""
    outcomes: dict[str, bool] = {}
    for nodeid, passed in report.outcomes.items():
        file, _, name = nodeid.partition("::")
        if file.endswith(FOCUSED_TEST):
            outcomes[name] = passed
    for beyond in report.beyond or ():
        state = report.beyond_state(beyond)
        if state != "pending":
            outcomes[beyond.name] = state == "passed"
    return outcomes


def check_record(path: str | Path) -> CopyRecord:
    """Check the practice copy at (or around) ``path``, print nothing, return its record."""
    problem = practice_path_problem(str(path))
    if problem is not None:
        folder = Path(path).expanduser().absolute()
        return nothing_ran(folder.name, folder, "not-a-copy", problem)
    root, _ = check_target(str(path), Path.cwd(), course_root())
    assert root is not None  # practice_path_problem found the tree
    started = time.monotonic()
    report = run_tests(STEPS, root, beyond=True)
    return record_of(report, root, time.monotonic() - started)


# --- the command ----------------------------------------------------------------------------------


def _cwd() -> Path:
    try:
        return Path.cwd()
    except OSError:  # the current folder was removed
        return Path(os.environ.get("PWD") or ".").absolute()


def check_command(
    step: str | None = None,
    path: str | None = None,
    *,
    reference: bool = False,
    as_json: bool = False,
    course_only: bool = False,
    verbose: bool = False,
    rules: bool = False,
    sandbox: str = "auto",
    assembled: bool = False,
) -> int:
    """``python -m pi_course check 05 …``: find the tree, run, print; the exit status follows the verdict.

    0: done; 1: not done; 2: nothing checked (not a copy). With ``as_json`` the record is the
    only thing printed on stdout (a path that is not a copy is a ``not-a-copy`` record), and the
    text a learner reads goes to stderr, so ``grade`` gets both from one run.

    ``--path`` to a practice copy checks its lesson files with this installation's tests, in the
    sandbox ``grade`` uses (:func:`.copyrun.run_copy`); ``assembled`` is that sandbox's own call,
    on the tree it built.
    """
    root, line = check_target(path, _cwd(), course_root(), reference=reference)
    if line is not None and not assembled:
        print(line, file=sys.stderr)
    if root is None:
        if as_json:
            folder = Path(path or _cwd()).expanduser().absolute()
            print(record_line(nothing_ran(folder.name, folder, "not-a-copy", line or "")))
        return EXIT_USAGE
    if path is not None and not assembled and is_practice_copy(root) and root != course_root():
        flags = [*(["--step", step] if step else []), *(["--json"] if as_json else [])]
        flags += [*(["--course-only"] if course_only else []), *(["-v"] if verbose else [])]
        flags += ["--rules"] if rules else []
        return _from_outside(root, flags, sandbox, as_json=as_json)
    steps = STEPS if step is None else (step_named(step),)
    beyond = step is None and not course_only
    started = time.monotonic()
    try:
        report = run_tests(steps, root, beyond=beyond, verbose=verbose)
    except KeyboardInterrupt:
        print("check 已中断（Ctrl-C）。", file=sys.stderr)
        return EXIT_INTERRUPTED
    seconds = time.monotonic() - started
    text = sys.stderr if as_json else sys.stdout  # with --json, stdout carries the record alone
    verdict = print_report(report, steps, beyond=beyond, verbose=verbose, file=text, rules=rules)
    if as_json:
        print(record_line(record_of(report, root, seconds)))
    return EXIT_DONE if verdict.done else EXIT_FAILED


def _from_outside(copy: Path, flags: list[str], sandbox_name: str, *, as_json: bool) -> int:
    """``check 05 --path COPY``: the copy's lesson files checked with the installed course's tests.

    The check's text and exit status are the inner ``check``'s; its record (``--json``) names the
    copy and carries the flags; the flags' lines go to stderr before it.
    """
    try:
        sandbox = choose(sandbox_name)
    except SandboxError as error:
        print(error, file=sys.stderr)
        return EXIT_USAGE
    with instructor_copy() as instructor:
        ran = run_copy(copy, instructor, sandbox, command=lambda tree: assembled_check(tree, flags))
    if not sandbox.sandboxed:
        print(not_sandboxed_line(sandbox), file=sys.stderr)
    for note in ran.assembled.notes:
        print(note, file=sys.stderr)
    if ran.status is None:
        print(f"check 05：超过 {DEFAULT_TIMEOUT:g} 秒没有结束，已停止。", file=sys.stderr)
        return EXIT_FAILED
    out = ran.out
    record = parse_record(out) if as_json else None
    if record is not None:
        record.update({"name": copy.name, "path": str(copy), "flags": list(ran.flags)})
        out = record_line(record) + "\n"
    sys.stderr.write(ran.err)
    sys.stdout.write(out)
    return ran.status
