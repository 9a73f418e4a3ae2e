"""Every rule of the chapter's table, broken on purpose in a full solution: ``check`` must name it.

``dan`` (tests/workflow/learners/dan) is a complete solution written from the chapter in a style
unlike the reference's (``match`` everywhere, a ``bytearray`` line buffer, its own abort race).
Each departure below is a small text patch to a copy of it that breaks one rule of
``pi_course/chapter/rules.py``; ``check 05`` on that copy must not say done, and its verdict must
name the rule and its step. Every rule has at least one departure.

``check`` runs in this process (the in-kernel runner the browser edition uses: no pytest process
per copy), so the whole matrix costs a few dozen seconds of CPU, not minutes.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from learners import apply

from pi_course.chapter.rules import RULES
from pi_course.chapter.steps import STEPS
from pi_course.course.checker import testrun
from pi_course.course.checker.judgement import judge
from pi_course.course.copies.practice import create_practice
from pi_course.course.running import inkernel

# A practice copy per case, each checked by pytest (in this process): minutes in all, so make workflows.
pytestmark = [pytest.mark.slow, pytest.mark.workflow]

Patch = tuple[str, str, str]  # (module in pi_course/, text that occurs once, its replacement)

# name: (the rule check must name, the patches). Multi-line replacements take the old line's indent.
DEPARTURES: dict[str, tuple[str, list[Patch]]] = {
    # 5.1
    "tool-role-misnamed": ("四种 role 的映射", [("outbound.py", '"role": "tool",', '"role": "toolResult",')]),
    "raw-arguments-ignored": (
        "参数优先用 raw_arguments",
        [("outbound.py", "raw_arguments=str() as raw)", "raw_arguments=str() as raw) if False")],
    ),
    "tools-null": (
        "没有工具就没有 tools 键",
        [("outbound.py", "to_provider_tools(context.tools)) is not None:", "to_provider_tools(context.tools)) or True:")],
    ),
    "schema-mutated": (
        "出站转换不改动输入",
        [(
            "outbound.py",
            '"parameters": copy.deepcopy(dict(tool.parameters)),',
            '"parameters": (tool.parameters.setdefault("additionalProperties", False), dict(tool.parameters))[1],',
        )],
    ),
    # 5.2
    "fixed-transport-raises-another-error": (
        "fixed_transport 按顺序产出",
        [("adapter.py", "raise item", "raise RuntimeError(str(item))")],
    ),
    "fixed-transport-ignores-signal": (
        "fixed_transport 在每个 chunk 前检查 signal",
        [("adapter.py", "if signal and signal.aborted:", "if False:")],
    ),
    "provider-index-as-slot": ("槽位按第一次出现分配", [("adapter.py", '"", "", len(content)]', '"", "", index]')]),
    "tool-buffer-by-position": (
        "按 Provider index 找回 ToolBuffer",
        [("adapter.py", "buffer = tool_buffers[index]", "buffer = list(tool_buffers.values())[-1]")],
    ),
    "partial-holds-the-last-piece": (
        "partial 是完整内容",
        [("adapter.py", "TextContent(content[text_content_index].text + delta)", "TextContent(delta)")],
    ),
    "partial-shares-the-list": (
        "已发出的 partial 不再改变",
        [("adapter.py", "AssistantMessage(tuple(content), self.provider, self.model, usage, stop_reason, started, error)",
          "AssistantMessage((), self.provider, self.model, usage, stop_reason, started, error).with_content(content)")],
    ),
    "cut-arguments-kept-raw": (
        "tool_calls 时解析 JSON，失败是 error 终态",
        [("adapter.py", "arguments = json.loads(raw) if raw else {}",
          'arguments = json.loads(raw) if raw.endswith("}") else raw')],
    ),
    "length-as-stop": (
        "length 保留参数原文与 stop reason",
        [("adapter.py", 'yield DoneEvent("length", message("length", usage))', 'yield DoneEvent("stop", message("stop", usage))')],
    ),
    "error-loses-the-content": (
        "异常沿用当前 content",
        [("adapter.py", 'message("error", EMPTY_USAGE, str(error) or type(error).__name__)',
          'message("error", EMPTY_USAGE, str(error) or type(error).__name__).with_content(())')],
    ),
    "abort-told-as-error": ("取消是 aborted，其他异常是 error", [("adapter.py", "case AbortError():", "case AbortError() if False:")]),
    "no-return-after-the-error": (
        "恰好一个终态事件",
        [("adapter.py", "return  # one terminal event, and nothing after it", "continue")],
    ),
    # The pair: a reader with a finish chunk at finish_reason and at [DONE], an adapter with a done for each.
    "done-per-finish-chunk": (
        "恰好一个终态事件",
        [
            ("sse.py", "reason = parts.finish_reason or reason",
             "reason = parts.finish_reason or reason\nif parts.finish_reason:\n    yield FinishChunk(reason)"),
            ("adapter.py", "finish = None", "finish = None\nfinishes = []"),
            ("adapter.py", "finish = chunk", "finish = chunk\nfinishes.append(chunk)"),
            ("adapter.py", 'yield DoneEvent("stop", message("stop", usage))',
             'for _ in finishes:\n    yield DoneEvent("stop", message("stop", usage))'),
        ],
    ),
    # 5.3
    "each-read-decoded-alone": (
        "一次读取不是一条 event",
        [("sse.py", "self._line += data[at:]\n", 'self._line += data[at:].decode("utf-8", "replace").encode()\n')],
    ),
    "event-per-data-line": (
        "空行结束一条 event",
        [("sse.py", 'self._field(name, value.removeprefix(" "))',
          'return self._field(name, value.removeprefix(" ")) or (self._dispatch() if name == "data" else None)')],
    ),
    "unterminated-event-flushed": (
        "没有空行收尾的 event 不是 payload",
        [("sse.py", 'events = self.feed(b"", final=True)', 'events = self.feed(b"\\n\\n", final=True)')],
    ),
    "cr-kept-in-the-line": (
        "各种行尾都结束一行",
        [("sse.py", '(data.find(b"\\r", at), data.find(b"\\n", at))', '(data.find(b"\\n", at),)')],
    ),
    "bom-kept": ("增量解码：字符可以跨读取，开头的 BOM 不算内容", [("sse.py", "if data.startswith(BOM):", "if False:")]),
    "content-not-narrowed": (
        "从 unknown 逐层收窄",
        [("sse.py", 'match _string(delta.get("content"), "choices[0].delta.content"):', 'match delta.get("content"):')],
    ),
    "tool-index-not-checked": (
        "tool_calls 的每个字段都检查",
        [("sse.py", '_token_count(call.get("index"), f"{path}.index")', 'call.get("index")')],
    ),
    "finish-reason-not-checked": (
        "finish_reason 只能是三种之一",
        [("sse.py", 'case None | "stop" | "length" | "tool_calls":',
          'case None | "stop" | "length" | "tool_calls" | "content_filter":')],
    ),
    "usage-count-not-checked": (
        "usage 的三个计数都检查",
        [("sse.py", 'usage[ours] = _token_count(count, f"usage.{wire}")', "usage[ours] = count")],
    ),
    "several-choices-read": ("一个 choice；空 choices 只带 usage", [("sse.py", "case [only]:", "case [only, *_]:")]),
    "finish-at-reason-and-at-done": (
        "结束原因与尾随 usage 合成唯一的 finish",
        [("sse.py", "reason = parts.finish_reason or reason",
          "reason = parts.finish_reason or reason\nif parts.finish_reason:\n    yield FinishChunk(reason)")],
    ),
    "finish-made-up": ("没有结束原因是 error 终态", [("sse.py", "reason = None", 'reason = "stop"')]),
    "abort-not-checked-before-sending": (
        "读取前后都检查 abort",
        [("transport.py", "if signal is not None and signal.aborted:  # before anything is sent", "if False:")],
    ),
    "abort-not-checked-after-a-read": (
        "读取前后都检查 abort",
        [
            ("adapter.py", "if signal is not None and signal.aborted:  # checked after every chunk too", "if False:"),
            ("transport.py", "if not signal.aborted:",
             "if not signal.aborted or (work.done() and not work.cancelled() and work.exception() is None):"),
        ],
    ),
    "response-left-open": ("响应在 finally 中关闭", [("transport.py", "await response.aclose()", "pass")]),
    "request-not-raced": (
        "signal 交给请求和读取",
        [("transport.py", "await _against_abort(self._client.send(outgoing, stream=True), signal)",
          "await self._client.send(outgoing, stream=True)")],
    ),
    "abort-error-wrapped": ("AbortError 保持原来的名称", [("transport.py", "except AbortError:", "except ZeroDivisionError:")]),
    "status-not-checked": ("HTTP 错误状态写进错误", [("transport.py", "await _check_response(response)", "pass")]),
    # 5.4
    "no-endpoint-check": (
        "检查最终 endpoint",
        [("transport.py", 'url = base_url.rstrip("/") + "/chat/completions"', 'return base_url.rstrip("/") + "/chat/completions"')],
    ),
    "no-usage-option": (
        "POST、stream 与 usage 选项、同一个 signal",
        [("transport.py", '"stream_options": {"include_usage": True}', '"stream_options": {}')],
    ),
    "bare-key-header": ("API key 只在 Authorization header 里", [("transport.py", 'f"Bearer {self._key.reveal()}"', "self._key.reveal()")]),
    "first-key-only-redacted": (
        "错误离开 transport 之前脱敏",
        [("transport.py", 'message.replace(key, "[redacted]")', 'message.replace(key, "[redacted]", 1)')],
    ),
    "slashes-kept": (
        "base URL 去掉末尾斜杠",
        [("transport.py", 'url = base_url.rstrip("/") + "/chat/completions"', 'url = base_url + "/chat/completions"')],
    ),
    "data-joined-without-newline": (
        "几行 data 用换行连接",
        [("sse.py", 'SSEEvent("\\n".join(data), kind, self._last_id)', 'SSEEvent("".join(data), kind, self._last_id)')],
    ),
    # Departures no listed rule names: only the comparison with the reference sees them.
    "text-dropped-beside-tool-calls": (
        "与本章参考一致：出站转换",
        [("outbound.py", '"content": _words(words) if words else None}', '"content": _words(words) if words and len(words) == len(content) else None}')],
    ),
    "late-id-dropped": (
        "与本章参考一致：adapter 状态机",
        [("adapter.py", "buffer[0] = call_id or buffer[0]", "buffer[0] = buffer[0] if buffer[2] else (call_id or buffer[0])")],
    ),
    "event-type-kept": (
        "与本章参考一致：SSE 分帧",
        [("sse.py", 'kind, self._event = self._event or "message", ""', 'kind = self._event or "message"')],
    ),
    "first-tool-call-path-always": (
        "与本章参考一致：外部数据验证",
        [("sse.py", 'f"choices[0].delta.tool_calls[{i}]"', '"choices[0].delta.tool_calls[0]"')],
    ),
    "strict-ignored": (
        "与本章参考一致：HTTP 读取与取消",
        [("transport.py", "iter_provider_chunks(iter_sse_events(reads), strict=self.strict)", "iter_provider_chunks(iter_sse_events(reads))")],
    ),
    "usage-added-up": (
        "与本章参考一致：结束原因与尾随 usage",
        [("sse.py", "counts |= parts.usage or {}", "counts = {k: counts.get(k, 0) + (parts.usage or {}).get(k, 0) for k in {*counts, *(parts.usage or {})}}")],
    ),
}  # fmt: skip

RULES_BY_NAME = {rule.name: rule for rule in RULES}


def depart(copy: Path, module: str, old: str, new: str) -> None:
    """Replace ``old`` (exactly once) in ``pi_course/<module>``; later lines of ``new`` take its line's indent."""
    target = copy / "pi_course" / module
    source = target.read_text(encoding="utf-8")
    assert source.count(old) == 1, f"{old!r} occurs {source.count(old)} times in {module}"
    at = source.index(old)
    indent = source[source.rfind("\n", 0, at) + 1 : at]
    indent = indent if not indent.strip() else ""
    lines = new.split("\n")
    replacement = "\n".join([lines[0], *(indent + line if line else line for line in lines[1:])])
    target.write_text(source.replace(old, replacement), encoding="utf-8")


@pytest.fixture(scope="module")
def dan(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A practice copy holding dan's whole solution."""
    copy = create_practice(tmp_path_factory.mktemp("dan") / "lab")
    apply(copy, "dan")
    return copy


def checked(copy: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """``check 05``'s verdict on ``copy``, run in this process (the browser edition's runner)."""
    monkeypatch.setattr(inkernel, "in_a_tab", lambda: True)
    return judge(testrun.run_tests(STEPS, copy, beyond=True)).line


# A comparison whose every input a stated rule also covers: its departures are those rules'.
COVERED_BY_STATED_RULES = {
    "与本章参考一致：请求与密钥脱敏": "5.4's stated rules and its two focused tests cover the request and the key",
}


def test_every_rule_has_a_departure() -> None:
    departed = {rule for rule, _ in DEPARTURES.values()}
    assert set(RULES_BY_NAME) - departed == set(COVERED_BY_STATED_RULES)
    assert departed - set(RULES_BY_NAME) == set()


def test_dan_keeps_every_rule(dan: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert checked(dan, monkeypatch) == "第 05 章：完成"


@pytest.mark.parametrize("name", DEPARTURES)
def test_check_names_the_rule_a_departure_breaks(
    dan: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    rule_name, patches = DEPARTURES[name]
    rule = RULES_BY_NAME[rule_name]
    copy = tmp_path / "lab"
    shutil.copytree(dan, copy)
    for module, old, new in patches:
        depart(copy, module, old, new)
    line = checked(copy, monkeypatch)
    assert line.startswith("第 05 章：未完成——实践 "), line
    assert f"规则「{rule.name}」" in line and f"实践 {rule.step}" in line, line
