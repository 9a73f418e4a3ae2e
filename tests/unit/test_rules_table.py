"""The chapter's rules table (pi_course/chapter/rules.py): every row cites the chapter and names real checks."""

from __future__ import annotations

import ast
import io
import re
from functools import cache
from pathlib import Path

import pytest
from generated import between_markers

from pi_course.chapter.rules import (
    CHAPTER_SOURCE,
    RULES,
    RULES_TEST,
    TABLE_END,
    TABLE_START,
    markdown_table,
    split_check,
)
from pi_course.chapter.steps import BEYOND_TEST, COMPARE_TEST, FOCUSED_TEST, STEP_NUMBERS, STEPS, step_of
from pi_course.course.check import print_judgement
from pi_course.course.checker.facts import Report
from pi_course.course.checker.judgement import judge, record_of
from pi_course.course.checker.rulestate import rule_results, table_lines
from pi_course.course.checker.stubs import StarterForm

ROOT = Path(__file__).parents[2]
CHAPTER = Path("/work/shared/chapter-05.zh.txt")  # the specification, where it is at hand
TEMPLATE = ROOT / "pi_course" / "course" / "copies" / "templates" / "LEARNING.md"
TABLE = re.compile(r"<!-- BEGIN rules table[^\n]*-->\n(.*?)\n<!-- END rules table -->", re.DOTALL)


@cache  # the files do not change during a run; the checks below look each one up many times
def functions_in(file: str) -> dict[str, ast.AsyncFunctionDef | ast.FunctionDef]:
    tree = ast.parse((ROOT / "tests" / file).read_text(encoding="utf-8"))
    return {
        node.name: node
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test_")
    }


def marked_step(node: ast.AsyncFunctionDef | ast.FunctionDef) -> str | None:
    for decorator in node.decorator_list:
        if isinstance(decorator, ast.Call) and ast.unparse(decorator.func) == "pytest.mark.step":
            return str(ast.literal_eval(decorator.args[0]))
    return None


def test_every_rule_has_a_check_and_every_check_exists() -> None:
    files = {name: functions_in(name) for name in (FOCUSED_TEST, BEYOND_TEST, RULES_TEST, COMPARE_TEST)}
    for rule in RULES:
        assert rule.checks, f"rule {rule.name!r} has no check"
        assert rule.step in STEP_NUMBERS, rule
        for check in rule.checks:
            file, function, case = split_check(check)
            assert file in files, f"{rule.name}: {check} names no shipped test file"
            assert function in files[file], f"{rule.name}: {check} names a test that does not exist"
            if case is not None:  # a parametrized case: its id is a key of the function's cases
                source = (ROOT / "tests" / file).read_text(encoding="utf-8")
                assert f'"{case}":' in source, f"{rule.name}: {check} names a case that does not exist"


def test_every_rule_check_belongs_to_a_rule_and_needs_no_later_step() -> None:
    numbers = list(STEP_NUMBERS)
    named = {split_check(check)[:2] for rule in RULES for check in rule.checks}
    for file in (RULES_TEST, COMPARE_TEST):
        for name in functions_in(file):
            assert (file, name) in named, f"{name} is in no rule of pi_course/chapter/rules.py"
    for name, node in {**functions_in(RULES_TEST), **functions_in(COMPARE_TEST)}.items():
        doc = ast.get_docstring(node) or ""
        assert doc.splitlines()[0].strip() and "下一步：" in doc, f"{name}: its name and 下一步 line"
        assert marked_step(node) in numbers, f"{name}: one @pytest.mark.step(...)"
    for rule in RULES:
        for check in rule.checks:
            file, function, _ = split_check(check)
            if file == FOCUSED_TEST:
                step = step_of(function)
                needs = step.number if step is not None else None
            else:
                needs = marked_step(functions_in(file)[function])
            assert needs is not None and numbers.index(needs) <= numbers.index(rule.step), (rule.name, check)


def test_each_rule_quotes_the_chapter_as_written() -> None:
    quotes = [rule.quote for rule in RULES]
    assert len(set(quotes)) == len(quotes), "two rules cite the same sentence"
    assert len({rule.name for rule in RULES}) == len(RULES), "two rules share a name"
    if not CHAPTER.is_file():
        pytest.skip(f"the chapter's text is not at {CHAPTER}")
    text = CHAPTER.read_text(encoding="utf-8")
    assert [rule.name for rule in RULES if rule.source == CHAPTER_SOURCE and rule.quote not in text] == []


def test_a_rule_the_chapter_does_not_state_quotes_the_file_it_names() -> None:
    others = [rule for rule in RULES if rule.source != CHAPTER_SOURCE]
    assert others, "no rule cites a source other than the chapter"
    for rule in others:
        path = re.search(r"pi_course/\w+\.py", rule.source)
        assert path is not None, f"{rule.name}: its source names no file"
        assert rule.quote in (ROOT / path[0]).read_text(encoding="utf-8"), rule.name
        assert rule.cited == f"「{rule.quote}」（{rule.source}）"


def with_table(text: str) -> str:
    """``text`` (LEARNING.md) with the block between the table's markers generated afresh."""
    return between_markers(text, TABLE_START, TABLE_END, markdown_table())


def test_learning_md_carries_the_table_generated_from_the_one_table() -> None:
    text = TEMPLATE.read_text(encoding="utf-8")
    found = TABLE.search(text)
    assert found is not None, "LEARNING.md has no rules table between its markers"
    assert found[1] == markdown_table(), "regenerate it: text = with_table(text), this file's"
    assert with_table(text) == text
    assert len(found[1].splitlines()) == len(RULES) + 2


# --- the rules' states, the verdict and the record --------------------------------------------------


def all_passing() -> dict[str, bool]:
    outcomes: dict[str, bool] = {}
    for rule in RULES:
        for check in rule.checks:
            outcomes[check] = True
    return outcomes  # a check naming a whole function stands for the function's one case here


DONE = {step.number: step.expected for step in STEPS}


def test_a_broken_rule_of_a_done_step_is_named_in_the_verdict_with_its_step() -> None:
    outcomes = all_passing()
    outcomes[f"{RULES_TEST}::test_rule_no_tools_key_without_tools"] = False
    report = Report(DONE, beyond=(), rule_checks=(), outcomes=outcomes)
    states = {result.rule.name: result.state for result in rule_results(report) or ()}
    assert states["没有工具就没有 tools 键"] == "broken"
    assert list(states.values()).count("kept") == len(RULES) - 1
    assert judge(report).line == (
        "第 05 章：未完成——实践 5.1 规则「没有工具就没有 tools 键」：test_rule_no_tools_key_without_tools"
    )
    record = record_of(judge(report), ROOT, 1.0)
    assert (record["status"], record["rules_kept"], record["rules_total"]) == (
        "incomplete",
        len(RULES) - 1,
        len(RULES),
    )
    assert (
        "  ✗ 没有工具就没有 tools 键：「没有工具时返回 undefined，请求体也就不会带一个空数组。」"
        in table_lines(rule_results(report))
    )


def test_a_later_steps_rules_wait_for_the_earlier_steps() -> None:
    outcomes = {check: False for check in all_passing()}
    report = Report({"5.1": 1}, beyond=(), rule_checks=(), outcomes=outcomes)
    states = {result.rule.step: set() for result in rule_results(report) or ()}
    for result in rule_results(report) or ():
        states[result.rule.step].add(result.state)
    assert states == {"5.1": {"broken"}, "5.2": {"broken"}, "5.3": {"pending"}, "5.4": {"pending"}}
    assert judge(report).line.startswith("第 05 章：未完成——实践 5.1 规则「")


def test_all_rules_kept_and_nothing_else_failing_is_done() -> None:
    report = Report(DONE, beyond=(), rule_checks=(), outcomes=all_passing())
    assert judge(report).line == "第 05 章：完成"
    assert table_lines(rule_results(report))[0] == f"本章规则：{len(RULES)}/{len(RULES)}"


def test_check_rules_prints_every_rule_then_the_verdict() -> None:
    outcomes = all_passing()
    outcomes[f"{RULES_TEST}::test_rule_the_endpoint_is_checked_as_a_url"] = False
    report = Report(DONE, beyond=(), rule_checks=(), outcomes=outcomes)
    out = io.StringIO()
    verdict = judge(report)
    print_judgement(verdict, file=out, table=True)
    lines = out.getvalue().splitlines()
    assert lines[0] == f"本章规则：{len(RULES) - 1}/{len(RULES)}（1 项未守住）"
    marks = [line.split(" ", 3)[2] for line in lines if line.startswith("  ") and not line.startswith("   ")]
    assert len(marks) == len(RULES) + 1 and marks.count("✗") == 2  # the table's row, then the details
    assert "      未通过：test_rule_the_endpoint_is_checked_as_a_url" in lines
    assert (
        lines[-1]
        == verdict.line
        == (
            "第 05 章：未完成——实践 5.4 规则「检查最终 endpoint」：test_rule_the_endpoint_is_checked_as_a_url"
        )
    )


def test_a_rule_is_broken_only_by_its_own_checks_and_waits_while_its_step_is_a_stub() -> None:
    outcomes = all_passing()
    sends = f"{FOCUSED_TEST}::test_fetch_transport_sends_the_exact_request"
    outcomes[sends] = False  # e.g. stream_options missing: the shared focused test fails
    outcomes[f"{RULES_TEST}::test_rule_the_body_asks_for_a_stream_with_usage"] = False
    report = Report({**DONE, "5.4": 1}, beyond=(), rule_checks=(), outcomes=outcomes)
    states = {result.rule.name: result.state for result in rule_results(report) or ()}
    assert states["POST、stream 与 usage 选项、同一个 signal"] == "broken"
    assert states["检查最终 endpoint"] == "pending"  # its own check passed; its step is not done
    assert states["API key 只在 Authorization header 里"] == "pending"
    assert [name for name, state in states.items() if state == "broken"] == [
        "POST、stream 与 usage 选项、同一个 signal"
    ]

    stubbed = {check: False for check in all_passing()}
    stub = StarterForm(
        "stub",
        "pi_course/adapter.py",
        "OpenAICompatibleModel._events",
        "Lab 5.2 normalized transport 状态机 尚未实现",
    )
    report = Report({"5.1": 1}, beyond=(), rule_checks=(), outcomes=stubbed, starter_forms=(stub,))
    by_step: dict[str, set[str]] = {}
    for result in rule_results(report) or ():
        by_step.setdefault(result.rule.step, set()).add(result.state)
    assert by_step == {"5.1": {"broken"}, "5.2": {"pending"}, "5.3": {"pending"}, "5.4": {"pending"}}


def test_a_hint_names_the_learners_own_function_or_says_it_has_none() -> None:
    from pi_course.course.checker.advice import in_learners_terms
    from pi_course.course.checker.facts import Detail

    hint = "pi_course/adapter.py 的 _events()：content 槽位"
    mine = Report(DONE, defined={"pi_course/adapter.py": frozenset({"OpenAICompatibleModel._events"})})
    assert in_learners_terms(hint, mine, Detail()) == hint
    other = Report(DONE, defined={"pi_course/adapter.py": frozenset({"Model.stream", "step"})})
    stopped = Detail(where="pi_course/adapter.py:88 (step)")
    assert (
        in_learners_terms(hint, other, stopped) == "pi_course/adapter.py 的 step()（第 88 行）：content 槽位"
    )
    told = in_learners_terms(hint, other, Detail())
    assert told.startswith("pi_course/adapter.py（参考实现在 _events() 里做这件事；你的代码里没有 _events()")
    assert in_learners_terms(hint, Report(DONE), Detail()) == hint  # nothing known of the copy: as written


def test_the_compare_files_property_is_the_contracts() -> None:
    from pi_course.course.checker.plugin_path.pi_course_check.contract import Fact

    source = (ROOT / "tests" / COMPARE_TEST).read_text(encoding="utf-8")
    assert f'COMPARED = "{Fact.COMPARED.value}"' in source
