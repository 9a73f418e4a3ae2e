"""Advice: what a failing test means and where to look next, from the evidence a run left.

Each focused test has a hint naming the file and function a failure usually comes from; the
evidence (a time bound that fired, where the code was stuck, the error messages the test saw,
the first difference of a failing ``==``) can point somewhere more precise. A hint names the
tool and the idea, never a line to copy.
"""

from __future__ import annotations

import re
from typing import Any

from ...chapter.rules import CHAPTER_SOURCE
from ...chapter.steps import BEYOND_TEST, FOCUSED_TEST, STEPS, Step, step_of
from ..edition import CHECK_VERBOSE
from .facts import Detail, Report
from .rulestate import RuleResult, Rules, broken_rules, is_comparison, rule_behind, rule_name
from .stubs import StarterForm

WIDTH = 110  # longest value shown in full on one line

# The next step for each focused test: the file and function a failure usually comes from.
HINTS = {
    "test_outbound": "pi_course/outbound.py 的 to_provider_messages()、_assistant_to_wire()、"
    "to_provider_tools()；protocol.py 的 ToolDefinition、AgentContext.tools",
    "test_normalized_transport_orders": "pi_course/adapter.py 的 _events()：content 槽位"
    "（第一次出现时的 len(content)，不是 chunk.index）与每个事件的 partial 快照",
    "test_normalized_transport_exception": "pi_course/adapter.py：fixed_transport 的 stream() 在列表里的"
    "异常处抛出；_events() 把异常变成 error 终态并保留 partial",
    "test_normalized_transport_length": "pi_course/adapter.py 的 _events()：finish 为 length 时不解析参数，"
    "原文留在 arguments 与 raw_arguments",
    "test_sse_interleaved": "pi_course/sse.py 的 SSEDecoder.feed()（行缓冲：一次网络读取不是一条 event）、"
    "parse_payload()、read_provider_chunks()（finish reason 与尾随 usage 合成一个 finish chunk）",
    "test_sse_missing_finish": "pi_course/sse.py 的 read_provider_chunks()：没有 finish reason 时不产出 "
    "finish chunk；pi_course/transport.py 的 _reads()：在 finally 中关闭响应",
    "test_sse_abort": "pi_course/transport.py 的 _reads()：请求交给 AbortRace.run()，读取交给 "
    "AbortRace.iterate()（pi_course/stream_rules.py），并在 finally 中关闭响应",
    "test_sse_invalid_chunk": "pi_course/sse.py 的 parse_payload() 与 _record()：choices 必须是数组，"
    "错误信息写出字段路径",
    "test_sse_unknown_finish_reason": "pi_course/sse.py 的 _finish_reason()：只能是 stop、length、"
    "tool_calls，错误信息写出 finish_reason 与收到的值",
    "test_fetch_transport_sends": "pi_course/transport.py 的 chat_completions_url()、_headers()、"
    "request_body()",
    "test_fetch_transport_redacts": "pi_course/transport.py 的 _Secret.redact() 与 stream() 的错误出口",
}

# What each focused test feeds the learner's code, as a failure shows it ("输入：…").
INPUTS = {
    "test_outbound": (
        "context：system prompt、user「读取 README.md」、assistant 的两个 tool call"
        "（call-1 带 raw_arguments，call-2 没有）、call-1 的 tool result；tools：read"
    ),
    "test_normalized_transport_orders": (
        "fixed_transport：tool 4 '{\"path\":' | text '先读' | tool 2 '{\"query\":' | "
        "tool 4 '\"README.md\"}' | text '，再查' | tool 2 '\"pi\"}' | finish tool_calls（usage 10/6）"
    ),
    "test_normalized_transport_exception": (
        "fixed_transport：text 'partial' | RuntimeError('socket reset by peer')"
    ),
    "test_normalized_transport_length": (
        "fixed_transport：tool 0 call-1 read '{\"path\":\"REA' | finish length"
    ),
    "test_sse_interleaved": (
        "SSE，从中间切成两次读取：tool 0 call-1 '{\"path\":' | tool 1 call-2 '{\"query\":' | "
        "tool 0 '\"README.md\"}' | tool 1 '\"pi\"}' | finish_reason tool_calls | "
        "尾随 usage 12/8/20 | [DONE]"
    ),
    "test_sse_missing_finish": "SSE，两次读取：text 'partial'，之后流结束，没有 finish_reason",
    "test_sse_abort": "SSE：text 'partial'，之后读取一直等待；收到 text_delta 0.05 秒后发出取消信号",
    "test_sse_invalid_chunk": "SSE：text 'partial' | {\"choices\": \"not-an-array\"}",
    "test_sse_unknown_finish_reason": "SSE：text 'partial' | finish_reason \"content_filter\"",
    "test_fetch_transport_sends": (
        "base_url 'https://provider.invalid/v1/'，request {model, messages}，响应只有 finish stop"
    ),
    "test_fetch_transport_redacts": "底层 httpx.ConnectError 的文字带着 'Bearer <测试密钥>'",
}  # fmt: skip

# What running past the time bound usually means, per test: only when the test was stuck where
# that meaning applies (see _timeout_meaning).
TIMEOUT_MEANINGS = {
    "test_sse_abort": "被阻塞的读取没有被 abort 信号打断——只在两次读取之间检查 signal 是不够的；"
    "每一次读取都要和 abort 信号竞争：用给定的 stream_rules.AbortRace 包住响应体的读取",
}
TIMEOUT_MEANING = "通常是某次读取在等一段永远不会到来的字节，或一个循环没有结束"
NEVER_AWAITS = "一个从不 await 的循环没有结束（测试在这里被强行打断；没有哪次读取在等字节）"
# Where a blocked read waits: the transport's reads, the given abort race, the SSE reader's `async for`.
READ_PATH_FILES = ("pi_course/transport.py", "pi_course/stream_rules.py")
READ_PATH_FUNCTIONS = ("iter_sse_events",)
_WHERE = re.compile(r"^(?P<file>\S+):(?P<line>\d+) \((?P<function>[^)]*)\)$")

# A JSON parser's complaint about a payload: the focused tests only send well-formed JSON payloads.
_CUT_JSON = re.compile(
    r"not valid JSON|Expecting (?:value|property name|',' delimiter|':' delimiter)|Unterminated string|"
    r"Extra data|Invalid control character"
)
FRAMING_HINT = (
    "pi_course/sse.py 的 SSEDecoder.feed()：行缓冲——测试发出的每条 data 都是完整、合法的 JSON，"
    "到了 parse_json() 却不是：一次网络读取不是一条 event，还没等到换行的那段要留到下一次读取"
)
DONE_HINT = (
    "pi_course/sse.py 的 read_provider_chunks()：data 为 [DONE] 的 event 表示流结束，它不是 JSON，"
    "不能交给 parse_json()"
)
MAX_STUBS_NAMED = 3  # more stubs than this: the step is barely begun, the test's own hint says more
SNAPSHOT_HINT = (
    "pi_course/adapter.py 的 _events()：partial.content 是 list，不是 tuple——每个事件的 partial 共用同一个"
    "可变的 content，后来的 delta 改掉了已经发出的快照；每个事件要带一份自己的、不可变的快照（tuple）"
)
TOTAL_HINT = "pi_course/adapter.py 的 _normalized()：缺的计数是 0；缺的 total_tokens 是 input + output"
SLOT_HINT = (
    "pi_course/adapter.py 的 _events()：content_index 用了 Provider 的 chunk.index——槽位是文本或工具"
    "第一次出现时的 len(content)，记在 text_content_index 或 ToolBuffer.content_index 里"
)
BUFFER_HINT = (
    "pi_course/adapter.py 的 _events()：后续的参数分片没有找回自己的 ToolBuffer——tool_buffers 以 chunk.index "
    "为键（dict），不是列表位置，也不是“最后一个工具”"
)
CONSUMED_HINT = (
    "pi_course/transport.py 的 _reads()：httpx 说响应体已经读过（content has already been streamed）——"
    "读取用 response.aiter_bytes()，它也能读出已经缓冲好的 body；aiter_raw() 读不到，也不要先 aread() 再读"
)
# A cause shared by many failures, told by the text of the error: (pattern, next step).
CAUSE_HINTS = ((re.compile(r"content has already been streamed|StreamConsumed"), CONSUMED_HINT),)
SHOWN_LINES = (
    "部分：",
    "输入：",
    "期望：",
    "实际：",
    "期望（本章参考）：",
    "实际（你的代码）：",
    "说明：",
)  # a check's own lines (tests/test_05_rules.py, tests/test_05_compare.py), shown whole


def _lookup(table: dict[str, str], name: str) -> str | None:
    for prefix, text in table.items():
        if name.startswith(prefix):
            return text
    return None


def _shorten(text: str, limit: int = WIDTH) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _aligned(actual: str, expected: str, limit: int = WIDTH) -> tuple[str, str]:
    """Both values in full when short; else the same window of each around the first difference."""
    if len(actual) <= limit and len(expected) <= limit:
        return actual, expected
    first = next((i for i, (a, b) in enumerate(zip(actual, expected, strict=False)) if a != b), None)
    if first is None:
        first = min(len(actual), len(expected))
    start = max(0, first - limit // 3)

    def window(text: str) -> str:
        piece = text[start : start + limit]
        return ("…" if start else "") + piece + ("…" if start + limit < len(text) else "")

    return window(actual), window(expected)


def _difference_lines(difference: dict[str, Any]) -> list[str]:
    outer = difference.get("outer")
    # The outermost differing element reads best when it is short; else go to the exact spot.
    chosen = outer if outer and max(len(outer["actual"]), len(outer["expected"])) <= WIDTH else difference
    path = chosen["path"]
    actual, expected = _aligned(chosen["actual"], chosen["expected"])
    where = f" {path}" if path else ""
    lines = [f"实际{where}：{actual}", f"期望{where}：{expected}"]
    if difference.get("types"):
        actual_type, expected_type = difference["types"]
        lines.append(f"（类型不同：实际是 {actual_type}，期望是 {expected_type}）")
    elif chosen is outer and difference["path"] != outer["path"]:
        inner_actual, inner_expected = _aligned(difference["actual"], difference["expected"], WIDTH // 2)
        lines.append(f"（第一处不同：{difference['path']}，{inner_actual} ≠ {inner_expected}）")
    return lines


def _own_lines(detail: Detail) -> bool:
    """The check said 输入/期望/实际 itself (tests/test_05_rules.py, the beyond checks)."""
    return any(
        line.removeprefix("AssertionError: ").startswith(SHOWN_LINES) for line in detail.message.splitlines()
    )


def _bare_assert(message: str) -> bool:
    """A plain ``assert`` without a message of its own: its source line says what was checked."""
    return message.startswith(("assert ", "AssertionError: assert "))


def _where_parts(where: str | None) -> re.Match[str] | None:
    return _WHERE.match(where) if where else None


def _in_read_path(where: str | None) -> bool:
    """Stuck in an ``await`` on the response body (or nowhere known), not in a loop of its own."""
    parts = _where_parts(where)
    if parts is None:
        return True
    function = parts["function"].rsplit(".", 1)[-1]
    return parts["file"] in READ_PATH_FILES or function in READ_PATH_FUNCTIONS


def _timeout_meaning(name: str, detail: Detail) -> str | None:
    """The test's own timeout meaning, only when it was stuck where that meaning applies."""
    if detail.never_awaits or not _in_read_path(detail.where):
        return None
    return _lookup(TIMEOUT_MEANINGS, name)


def _diagnosis(name: str, detail: Detail) -> str | None:
    """The next step the evidence points at, when it is clear; else ``None`` (the test's own hint)."""
    if detail.timeout is not None:
        parts = _where_parts(detail.where)
        if parts is not None and (detail.never_awaits or not _in_read_path(detail.where)):
            return f"{parts['file']} 的 {parts['function']}()：第 {parts['line']} 行所在的循环没有结束"
        return None
    if name.startswith("test_sse") and any(_CUT_JSON.search(m) for m in detail.error_messages):
        later = detail.assertion is not None and not detail.assertion.startswith("assert deltas")
        if name.startswith("test_sse_interleaved") and later:
            return DONE_HINT  # every tool delta arrived, so framing worked: the one non-JSON data is [DONE]
        return FRAMING_HINT
    return None


def _listed(items: list[StarterForm]) -> str:
    by_file: dict[str, list[str]] = {}
    for item in items:
        by_file.setdefault(item.file, []).append(item.shown)
    return "；".join(f"{file} 的 {'、'.join(functions)}" for file, functions in by_file.items())


def _starter_form_diagnosis(report: Report, name: str, detail: Detail) -> str | None:
    """A lab function left in its starter form that this failure comes from, named from the source."""
    step = step_of(name)
    if step is None or not report.starter_forms:
        return None
    files = {file for earlier in STEPS[: STEPS.index(step) + 1] for file in earlier.files}
    left_over = [
        item for item in report.starter_forms if item.kind == "left-over yield" and item.file in files
    ]
    if left_over:
        return (
            f"{_listed(left_over)}：函数最后还留着桩里那行 yield（“unreachable; keeps this function a "
            "generator”）。桩换成你的代码以后，这一行会让生成器多 yield 一次，删掉它"
        )
    if detail.where is not None:
        return None  # the traceback already names the stub ("出错位置"), and the test's hint says more
    said = (detail.message, *detail.error_messages)
    stubs = [i for i in report.starter_forms if i.kind == "stub" and any(i.message in text for text in said)]
    if 0 < len(stubs) <= MAX_STUBS_NAMED:
        pronoun = "它" if len(stubs) == 1 else "它们"
        return f"{_listed(stubs)} 还是桩（raise NotImplementedError）：先写{pronoun}"
    return None


def _snapshot_diagnosis(name: str, detail: Detail) -> str | None:
    """5.2's usual Python slips, told by the first difference: a shared list, a missing total, an index."""
    difference = detail.difference
    if not name.startswith("test_normalized_transport") or difference is None:
        return None
    if tuple(difference.get("types") or ()) == ("list", "tuple"):
        return SNAPSHOT_HINT
    if str(difference.get("path", "")).endswith("total_tokens"):
        return TOTAL_HINT
    if name.startswith("test_normalized_transport_orders") and difference.get("path") in ("[0][1]", "[2][1]"):
        return SLOT_HINT  # the first delta of a tool went to content[chunk.index]
    if name.startswith("test_normalized_transport_orders") and difference.get("path") in ("[3][1]", "[5][1]"):
        return BUFFER_HINT  # a later fragment of a tool went to another tool's slot
    return None


def cause_of(detail: Detail) -> str | None:
    """What several failures may share: the error message the code gave, or an exception that escaped."""
    if detail.timeout is not None:
        return None
    if detail.error_messages:
        return detail.error_messages[0]
    first = detail.message.splitlines()[0] if detail.message else ""
    kind = first.split(":", 1)[0]
    if (
        kind
        and kind != "AssertionError"
        and re.fullmatch(r"[\w.]+(Error|Exception|Consumed|Interrupt)", kind)
    ):
        return first
    return None


def _cause_hint(detail: Detail) -> str | None:
    said = " ".join((detail.message, *detail.error_messages))
    return next((hint for pattern, hint in CAUSE_HINTS if pattern.search(said)), None)


def next_step(report: Report, name: str, *, beyond: bool = False) -> str:
    """What to look at for one failing test: the evidence's diagnosis, else the test's own hint,
    told in the learner's own functions (:func:`in_learners_terms`)."""
    detail = report.details.get(name, Detail())
    if beyond:
        evidence = _cause_hint(detail) or _diagnosis(name, detail)
        return in_learners_terms(
            evidence or detail.hint or f"见 tests/{BEYOND_TEST} 中这项检查的说明", report, detail
        )
    own = _lookup(HINTS, name) or f"见 tests/{FOCUSED_TEST} 中这项测试"
    evidence = _starter_form_diagnosis(report, name, detail) or _diagnosis(name, detail)
    return in_learners_terms(f"看 {evidence or _snapshot_diagnosis(name, detail) or own}", report, detail)


_NAMED_PLACE = re.compile(r"(?P<file>pi_course/\w+\.py) 的 (?P<function>[\w.]+)\(\)")


def in_learners_terms(hint: str, report: Report, detail: Detail) -> str:
    """``hint`` with each ``pi_course/x.py 的 f()`` the learner's file has no ``f`` for made true.

    Where the traceback stopped in that file, the function it stopped in is named; otherwise the
    hint says the reference does it in ``f()`` and the learner's code elsewhere.
    """

    def place(found: re.Match[str]) -> str:
        file, function = found["file"], found["function"]
        names = report.defined.get(file)
        if names is None or function in names or any(n.endswith(f".{function}") for n in names):
            return found[0]
        where = _where_parts(detail.where)
        if where is not None and where["file"] == file:
            return f"{file} 的 {where['function']}()（第 {where['line']} 行）"
        reference = f"参考实现在 {function}() 里做这件事"
        return f"{file}（{reference}；你的代码里没有 {function}()，看你做这件事的函数）"

    return _NAMED_PLACE.sub(place, hint)


def failure_lines(report: Report, name: str, *, beyond: bool = False, same_hint: bool = False) -> list[str]:
    """One line naming the test and the next step, then the decisive lines, indented.

    ``same_hint``: the test before it had the same next step, which is then said once ("同上").
    """
    detail = report.details.get(name, Detail())
    given = None if beyond else _lookup(INPUTS, name)
    if detail.timeout is not None:
        meaning = _timeout_meaning(name, detail)
        general = NEVER_AWAITS if detail.never_awaits else TIMEOUT_MEANING
        decisive = [f"输入：{given}"] if given else []
        decisive.append(f"超过 {detail.timeout:g} 秒没有结束：{meaning or general}。")
        if detail.where and meaning is None:  # a known meaning already names the place to look
            decisive.append(f"停在 {detail.where}")
    else:
        decisive = [f"输入：{given}"] if given else []
        if detail.assertion and (detail.difference is not None or _bare_assert(detail.message)):
            statement = detail.assertion + ("…" if detail.assertion[-1:] in "([{" else "")
            decisive.append(f"断言：{_shorten(statement)}")
        if detail.difference is not None:
            decisive += _difference_lines(detail.difference)
        elif detail.message:
            lines = [line.removeprefix("AssertionError: ") for line in detail.message.splitlines()]
            own = [line for line in lines if line.startswith(SHOWN_LINES)]
            # An input is read whole where it fits in a few lines; the rest in two.
            decisive += [_shorten(line, (4 if line.startswith("输入：") else 2) * WIDTH) for line in own] or [
                _shorten(lines[0], 2 * WIDTH)
            ]
        for message in detail.error_messages if not _own_lines(detail) else ():  # 实际 already says it
            decisive.append(f"你的代码发出了 error 事件，error_message：{_shorten(repr(message), 2 * WIDTH)}")
        if detail.where and detail.difference is None:
            decisive.append(f"出错位置：{detail.where}")
    shown = "同上" if same_hint else next_step(report, name, beyond=beyond)
    if beyond:
        head = f"  ✗ {detail.label or name}（{name}）— 下一步：{shown}"
    else:
        head = f"  ✗ {name} — 下一步：{shown}"
    return [head, *(f"      {line}" for line in decisive)]


def next_step_lines(report: Report, steps: tuple[Step, ...], rules: Rules) -> list[str]:
    """The failures to look at first: those of the first unfinished step (then the beyond checks).

    Consecutive failures with the same next step (one cause, several tests) name it once.
    """
    if report.red_light is not None:
        return []
    unfinished = [step for step in steps if report.passed.get(step.number, 0) < step.expected]
    lines: list[str] = []
    previous: str | None = None
    hint: str | None
    for step in steps:
        if step in unfinished:
            break
        broken = broken_rules(rules, step.number)
        if broken:  # a done step whose rules are not all kept comes first, as in the verdict
            return _rule_lines(report, broken)
    if unfinished:
        first = unfinished[0]
        for name, _ in report.failures:
            if step_of(name, (first,)) is not None:
                hint = next_step(report, name)
                lines += failure_lines(report, name, same_hint=hint == previous)
                previous = hint
        if not any(step_of(name, (first,)) for name, _ in report.failures):
            lines.append(
                f"  ✗ 实践 {first.number} 的测试没有全部运行——用 {CHECK_VERBOSE} 查看 pytest 的完整报告"
            )
        later = [step.number for step in unfinished[1:]]
        if later:
            lines.append(f"  之后还未通过：实践 {'、'.join(later)}（先完成实践 {first.number}）")
        return lines
    failed = [beyond.name for beyond in report.beyond or () if report.beyond_state(beyond) == "failed"]
    return _grouped(report, failed)


def _grouped(report: Report, names: list[str]) -> list[str]:
    """Failing checks, each with its details; checks failing for one cause are told once, under it."""
    lines: list[str] = []
    previous: str | None = None
    causes: dict[str, list[str]] = {}
    for name in names:
        cause = cause_of(report.details.get(name, Detail()))
        if cause is not None:
            causes.setdefault(cause, []).append(name)
    told: set[str] = set()
    for name in names:
        detail = report.details.get(name, Detail())
        cause = cause_of(detail)
        if cause is not None and cause in told:
            continue
        hint = next_step(report, name, beyond=True)
        lines += failure_lines(report, name, beyond=True, same_hint=hint == previous)
        previous = hint
        others = causes.get(cause, []) if cause is not None else []
        if len(others) > 1:
            told.add(cause)  # type: ignore[arg-type]
            rest = [_short_name(report, other) for other in others[1:]]
            lines.append(
                f"      同一原因（{_shorten(cause or '', WIDTH)}）"
                f"还让这 {len(rest)} 项失败：{'；'.join(rest)}"
            )
    return lines


def _short_name(report: Report, name: str) -> str:
    """A check named briefly: a parametrized case by its id, else its label or its name."""
    if name.endswith("]") and "[" in name:
        return name[name.index("[") + 1 : -1]
    return report.details.get(name, Detail()).label or name


def _rule_lines(report: Report, broken: list[RuleResult]) -> list[str]:
    """The broken rules of one step: the rule and the chapter's sentence, then its failing checks.

    A cause already told under an earlier rule (the same error in every check) is named, not repeated.
    """
    lines: list[str] = []
    told: dict[str, str] = {}  # cause → the rule under which it was told
    for result in broken:
        where = "章节" if result.rule.source == CHAPTER_SOURCE else "出处"
        lines.append(f"  ✗ {rule_name(result)}——{where}：{result.rule.cited}")
        names = [name for name in result.failed if name in report.details]
        causes = {name: cause_of(report.details[name]) for name in names}
        same = [name for name in names if causes[name] in told]
        fresh = [name for name in names if name not in same]
        lines += _grouped(report, fresh)
        for name in fresh:
            cause = causes[name]
            if cause is not None:
                told.setdefault(cause, result.rule.name)
        if same:
            cause = causes[same[0]] or ""
            lines.append(
                f"      {len(same)} 项检查失败，原因同「{told[cause]}」（{_shorten(cause, WIDTH // 2)}）："
                + "、".join(_short_name(report, name) for name in same)
            )
    return lines


def _short_reason(detail: Detail) -> str | None:
    """A few words for the verdict: a time bound, or a stub still in place."""
    if detail.timeout is not None:
        return f"超过 {detail.timeout:g} 秒没有结束"
    if any("尚未实现" in text for text in (detail.message, *detail.error_messages)):
        return "尚未实现"
    return None


def first_thing_to_fix(report: Report, steps: tuple[Step, ...], rules: Rules) -> str | None:
    """What the verdict names after ``未完成——``; ``None`` when everything that ran passed.

    In order: a red light (pi_course does not import, or 5.1's types are missing), the first
    failing test of the first unfinished step, then the first failing beyond check.
    """
    if report.red_light is not None:
        return report.red_light
    for step in steps:
        if report.step_done(step):
            # a rule that says what is wrong first; a comparison only says that it differs
            broken = sorted(broken_rules(rules, step.number), key=lambda result: is_comparison(result.rule))
            if broken:
                return f"{rule_name(broken[0])}：{broken[0].failed[0]}"
            continue
        head = f"实践 {step.number} {step.label}（{report.passed.get(step.number, 0)}/{step.expected} 通过）"
        for name, _ in report.failures:
            if step_of(name, (step,)) is not None:
                reason = _short_reason(report.details.get(name, Detail()))
                rule = rule_behind(rules, report, step.number, name) if reason != "尚未实现" else None
                said = (
                    f"（规则「{rule.rule.name}」）" if rule is not None else ""
                )  # a stub breaks no rule yet
                return f"{head}：{name}{said}" + (f" {reason}" if reason else "")
        return f"{head}：测试没有全部运行"
    for beyond in report.beyond or ():
        if report.beyond_state(beyond) == "failed":
            return f"本章之外的检查：{beyond.shown}（{beyond.name}）"
    if report.stopped is not None:
        return report.stopped
    return None
