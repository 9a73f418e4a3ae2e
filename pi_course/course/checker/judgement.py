"""One check's judgement: computed once from a run's facts, read by every door.

:func:`judge` turns a :class:`~.facts.Report` (what the run found) into a frozen
:class:`Judgement`: the steps judged, the earlier step that blocks the asked one, the rules'
states, whether it is done and the first thing to fix. The text report (:func:`text_lines`),
the advice, ``--json``'s record (:func:`record_of`), the notebook's ``check()`` and ``grade``
all read it; none of them judges again.

Checking one step means the same at every door (``check("5.x")``, ``--step 5.x``, a sandboxed
run of either): the step and every step before it run, with their rules, their comparisons and
the beyond checks that need no later step (:attr:`.facts.BeyondCheck.step`), and an earlier step
that is not done is named first; the step is done only when the whole chapter's verdict would say
nothing against it or an earlier step. The focused tests alone (``beyond=False``) say so in the
verdict's scope, so they never claim the step.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ...chapter.rules import RULES
from ...chapter.steps import BEYOND_TEST, CHAPTER_TOTAL, FOCUSED_TEST, STEP_NUMBERS, STEPS, Step
from .advice import first_thing_to_fix, next_step_lines
from .facts import Report
from .record import CopyRecord, Status
from .rulestate import Rules, count_line, rule_name, rule_results, rules_ok, table_lines

CHAPTER = "第 05 章"


@dataclass(frozen=True)
class Judgement:
    """What was asked and what the run's facts say about it: the one answer of one check."""

    facts: Report
    steps: tuple[Step, ...]  # judged: every step, or the asked one and every step before it
    asked: Step | None  # one step (``--step``, ``check("5.3")``); None: the chapter
    beyond: bool  # the checks beyond the focused tests were asked for (rules, comparisons, beyond)
    rules: Rules  # the judged steps' rules, computed once; None: not checked
    blocked_by: Step | None  # the first earlier step of the asked one that is not done
    scope: str  # 第 05 章, 实践 5.3; the focused tests alone: 第 05 章聚焦测试, 实践 5.3 聚焦测试
    done: bool
    first_failure: str | None

    @property
    def line(self) -> str:
        """The verdict, the last line printed (the exit status follows it)."""
        return f"{self.scope}：完成" if self.done else f"{self.scope}：未完成——{self.first_failure}"


def judged_steps(asked: Step | None) -> tuple[Step, ...]:
    """The steps a check of ``asked`` runs: every step, or ``asked`` and every step before it."""
    return STEPS if asked is None else STEPS[: STEPS.index(asked) + 1]


def judge(report: Report, asked: Step | None = None, *, beyond: bool = True) -> Judgement:
    """The judgement of one run, from its facts alone.

    A red light (pi_course does not import, or 5.1's types are missing) is the reason as it
    stands: nothing else was run.
    """
    steps = judged_steps(asked)
    rules = rule_results(report, steps)
    blocked_by = None
    if asked is not None and report.red_light is None:
        blocked_by = next((step for step in steps[:-1] if not report.step_done(step)), None)
    scope = CHAPTER if asked is None else f"实践 {asked.number}"
    if not beyond:  # the focused tests alone: never the step's or the chapter's own verdict
        scope += "聚焦测试" if asked is None else " 聚焦测试"
    done = report.ok(steps) and report.beyond_ok() and rules_ok(rules)
    first: str | None = None
    if beyond and report.beyond_note is not None and report.ok(steps):
        done = False  # a missing beyond file: never done, a step no more than the chapter
        first = (
            f"没有找到 tests/{BEYOND_TEST}，本章之外的检查没有运行，不能算完成。"
            f"下一步：从新的练习副本（practice 05 新目录）拷回 tests/{BEYOND_TEST}"
        )
    elif blocked_by is not None:
        first = f"先完成实践 {blocked_by.number}（{blocked_by.label}）"
    elif not done:
        found = first_thing_to_fix(report, steps, rules)
        first = found or "没有找到失败的测试（用 check -v 查看 pytest 的完整报告）"
    return Judgement(report, steps, asked, beyond, rules, blocked_by, scope, done, first)


# --- the text ---------------------------------------------------------------------------------------


def text_lines(judgement: Judgement, *, compact: bool = False, table: bool = False) -> list[str]:
    """Everything printed before the verdict: the counts (or the rules table), then the next steps.

    ``compact`` (a notebook's checkpoint cell): passed beyond checks are the count line alone.
    ``table`` (``check 05 --rules``): every rule, at every stage.
    """
    report = judgement.facts
    blocked = judgement.blocked_by
    if blocked is not None and judgement.asked is not None:
        # 5.3 on a copy where 5.2 is still a stub fails for 5.2's reason: say that, with 5.2's hints,
        # then this step's own count (its failures likely follow from the earlier step's).
        lines = [f"先完成实践 {blocked.number}（{blocked.label}）：实践 {judgement.asked.number} 用到它。"
                 f"{report.line(blocked)}"]  # fmt: skip
        hints = next_step_lines(report, judgement.steps, judgement.rules)
        lines += [line for line in hints if not line.startswith("  之后还未通过")]
        return [*lines, report.line(judgement.asked)]
    shown = table_lines(judgement.rules) if table else count_lines(judgement, compact=compact)
    return shown + next_step_lines(report, judgement.steps, judgement.rules)


def count_lines(judgement: Judgement, *, compact: bool = False) -> list[str]:
    """One line per step asked, the chapter total, the rules, then the beyond checks when they ran.

    None for a red light: the verdict says it.
    """
    report = judgement.facts
    if report.red_light is not None:
        return []
    shown = judgement.steps if judgement.asked is None else (judgement.asked,)
    lines = [report.line(step) for step in shown]
    if judgement.asked is None:
        lines.append(f"第 05 章聚焦测试：{report.total}/{CHAPTER_TOTAL}")
    rules = count_line(judgement.rules, _rules_scope(judgement))
    if rules is not None:
        lines.append(rules)
        lines += [  # the broken rules of a done step: the verdict names the first
            f"  ✗ {rule_name(result)}"
            for result in judgement.rules or ()
            if result.state == "broken" and report.step_done(_step(result.rule.step))
        ]
    if report.beyond_note is not None:
        lines.append(report.beyond_note)
    if report.beyond is not None and not report.beyond:
        if judgement.asked is None:  # a step before any beyond check's (5.1, 5.2) has none to run
            lines.append("本章之外的检查：没有运行")
    elif report.beyond is not None:
        lines += _beyond_lines(judgement, compact=compact)
    if report.stopped is not None:
        lines.append(report.stopped)
    return lines


def _rules_scope(judgement: Judgement) -> str:
    """``本章规则``; for one step, the rules of the steps it runs (``实践 5.1–5.3 的规则``)."""
    if judgement.asked is None:
        return "本章规则"
    first, last = judgement.steps[0].number, judgement.asked.number
    return f"实践 {last} 的规则" if first == last else f"实践 {first}–{last} 的规则"


def _step(number: str) -> Step:
    return STEPS[STEP_NUMBERS.index(number)]


def _beyond_lines(judgement: Judgement, *, compact: bool = False) -> list[str]:
    """The beyond checks: passed ones by name, failed ones (details follow), pending ones per step.

    ``compact`` (a notebook's checkpoint cell): the passed ones are the count line alone.
    """
    report = judgement.facts
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
        elif state == "failed" and not report.ok(judgement.steps):  # with every step done, advice details it
            lines.append(f"  ✗ {beyond.shown}")
        elif state == "pending":
            first = next(step for step in report.needed_steps(beyond) if not report.step_done(step))
            waiting[first.number] = waiting.get(first.number, 0) + 1
    for number, count_waiting in sorted(waiting.items()):
        lines.append(f"  待完成 {count_waiting} 项：实践 {number} 的聚焦测试全部通过之后才算")
    return lines


# --- the record -------------------------------------------------------------------------------------


def record_of(judgement: Judgement, root: Path, seconds: float) -> CopyRecord:
    """The record of one whole-chapter judgement (focused and beyond): the same facts the text shows."""
    report = judgement.facts
    status: Status
    if report.timed_out:
        status = "timeout"
    elif report.import_error:
        status = "import-error"
    else:
        status = "done" if judgement.done else "incomplete"
    return CopyRecord(
        name=root.name,
        path=str(root),
        status=status,
        focused={step.number: [report.passed.get(step.number, 0), step.expected] for step in STEPS},
        focused_passed=report.total,
        focused_total=CHAPTER_TOTAL,
        beyond_passed=report.beyond_count("passed"),
        beyond_total=len(report.beyond or ()),
        first_failure=judgement.first_failure,
        seconds=round(seconds, 2),
        rules_kept=sum(result.state == "kept" for result in judgement.rules or ()),
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
