"""Which of the chapter's rules (``pi_course/chapter/rules.py``) a checked copy keeps.

A rule is kept (✓) when every test its row names passed and its step and every earlier one
are done; broken (✗) when one of its own checks failed (a rule whose only evidence is focused
tests: one of those) and every earlier step is done; pending (待完成) otherwise: against an
unfinished earlier step, or while its own step is still a stub, a pass or failure means nothing yet.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ...chapter.rules import RULES, Rule, split_check
from ...chapter.steps import COMPARE_TEST, FOCUSED_TEST, STEPS, Step
from .facts import Report

RuleState = Literal["kept", "broken", "pending"]
MARKS = {"kept": "✓", "broken": "✗", "pending": "待完成"}


@dataclass(frozen=True)
class RuleResult:
    rule: Rule
    state: RuleState
    failed: tuple[str, ...]  # the failing test cases, by name ("test_x[case]"), in the row's order


def _cases(report: Report, check: str) -> list[tuple[str, bool]]:
    """The outcomes of the test cases a check names: a function stands for all its parametrized cases."""
    file, function, case = split_check(check)
    found = []
    for key, passed in report.outcomes.items():
        key_file, _, name = key.partition("::")
        if key_file != file:
            continue
        if name == check.partition("::")[2] or (case is None and name.startswith(function + "[")):
            found.append((name, passed))
    return found


Rules = (
    tuple[RuleResult, ...] | None
)  # the rules' states; None: not checked (focused tests alone, a red light)


def rule_results(report: Report, steps: tuple[Step, ...] = STEPS) -> Rules:
    """The state of every rule of ``steps`` for this run: computed once, by :func:`.judgement.judge`."""
    if report.rule_checks is None or report.red_light is not None:
        return None
    numbers = [step.number for step in STEPS]
    judged = {step.number for step in steps}
    results = []
    for rule in RULES:
        if rule.step not in judged:
            continue
        earlier = STEPS[: numbers.index(rule.step)]
        cases = [case for check in rule.checks for case in _cases(report, check)]
        failed = tuple(name for name, passed in cases if not passed)
        # A rule with checks of its own is broken only by them: a focused test it shares with
        # other rules fails for any of their reasons.
        own = [check for check in rule.checks if split_check(check)[0] != FOCUSED_TEST]
        evidence = (
            [name for check in own for name, passed in _cases(report, check) if not passed] if own else failed
        )
        ran_all = all(_cases(report, check) for check in rule.checks)
        state: RuleState
        if not all(report.step_done(step) for step in earlier) or _still_a_stub(report, rule.step):
            state = "pending"
        elif evidence:
            state = "broken"
        elif not failed and ran_all and report.step_done(STEPS[numbers.index(rule.step)]):
            state = "kept"
        else:
            state = "pending"
        results.append(RuleResult(rule, state, failed))
    return tuple(results)


def _still_a_stub(report: Report, step: str) -> bool:
    """Some lab function of ``step`` still raises its starter's ``NotImplementedError``."""
    return any(
        item.kind == "stub" and item.message.startswith(f"Lab {step} ") for item in report.starter_forms
    )


def rules_ok(results: Rules) -> bool:
    """No rule broken or still pending (true when the rules were not checked at all)."""
    return results is None or all(result.state == "kept" for result in results)


def broken_rules(results: Rules, step: str | None = None) -> list[RuleResult]:
    return [
        result
        for result in results or ()
        if result.state == "broken" and (step is None or result.rule.step == step)
    ]


def rule_behind(results: Rules, report: Report, step: str, test: str) -> RuleResult | None:
    """The rule a failing test of ``step`` most likely stands for, to name it beside the test.

    First a broken rule of the step that names the test and has a failing check of its own (a
    rule check or a beyond check), then any broken rule with a failing check of its own, then a
    rule whose only evidence is focused tests, all failing, and last any rule naming the test.
    """
    broken = broken_rules(results, step)

    def names(result: RuleResult) -> bool:
        return test in result.failed

    def own(result: RuleResult) -> bool:
        focused = {name for name in result.failed if name in dict(report.failures)}
        return bool(set(result.failed) - focused)

    def only_focused(result: RuleResult) -> bool:
        return all(split_check(check)[0] == FOCUSED_TEST for check in result.rule.checks)

    # A rule that says what is wrong comes before a comparison that says only that it differs.
    stated = [result for result in broken if not is_comparison(result.rule)]
    for candidates in (stated, broken):
        for choose in (
            lambda r: names(r) and own(r),
            own,
            lambda r: names(r) and only_focused(r),
            names,
        ):
            found = [result for result in candidates if choose(result)]
            if found:
                return found[0]
    return None


def is_comparison(rule: Rule) -> bool:
    """A rule whose evidence is the comparison with the reference (``tests/test_05_compare.py``)."""
    return all(split_check(check)[0] == COMPARE_TEST for check in rule.checks)


def rule_name(result: RuleResult) -> str:
    """``实践 5.3 规则「…」``: how the verdict and the next steps name a rule."""
    return f"实践 {result.rule.step} 规则「{result.rule.name}」"


def count_line(results: Rules, scope: str = "本章规则") -> str | None:
    """``本章规则：34/37（3 项待完成）``, after the focused counts; ``None`` when not checked."""
    if results is None:
        return None
    kept = sum(result.state == "kept" for result in results)
    broken = sum(result.state == "broken" for result in results)
    pending = sum(result.state == "pending" for result in results)
    notes = [f"{broken} 项未守住"] * bool(broken) + [f"{pending} 项待完成"] * bool(pending)
    return f"{scope}：{kept}/{len(results)}" + (f"（{'，'.join(notes)}）" if notes else "")


def table_lines(results: Rules) -> list[str]:
    """``check 05 --rules``: every rule with ✓ / ✗ / 待完成, by step, the chapter's sentence quoted."""
    if results is None:
        results = tuple(RuleResult(rule, "pending", ()) for rule in RULES)
        lines = [f"本章规则：0/{len(RULES)}（还没有检查：先让 pi_course 能导入、5.1 的两个类型就位）"]
    else:
        lines = [count_line(results) or ""]
    for step in STEPS:
        lines.append(f"实践 {step.number} {step.label}")
        for result in results:
            if result.rule.step != step.number:
                continue
            lines.append(f"  {MARKS[result.state]} {result.rule.name}：{result.rule.cited}")
            if result.failed:
                lines.append(f"      未通过：{'、'.join(result.failed)}")
    return lines
