"""The chapter's rules, checked on the learner's own functions and generators.

The focused tests drive the lesson through the given wrappers (``ModelStream``, ``SSETextDecoder``,
the adapter's own signal check), which can hide a rule the learner's code breaks. These checks
call what the learner wrote directly: the adapter's event generator before ``ModelStream``,
``SSEDecoder`` with every line ending, ``build_request()``, ``fixed_transport()`` with a signal,
``chat_completions_url()``. ``pi_course/chapter/rules.py`` ties each one to the chapter's sentence;
``check 05`` counts them as the chapter's rules (a copy that breaks one is not done).

Each check names the last practice step it needs (``@pytest.mark.step``), its name (docstring's
first line) and its next step (``下一步：``). A failure says what was fed (``输入``), what the
chapter expects (``期望``) and what the learner's code did (``实际``).
"""

from __future__ import annotations

import asyncio
import copy
import importlib
import json
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any

import httpx
import pytest

from pi_course import (
    AbortController,
    AbortError,
    AbortSignal,
    AgentContext,
    FinishChunk,
    OpenAICompatibleModel,
    OpenAICompatibleTransport,
    SSEEvent,
    TextChunk,
    TextContent,
    ToolCall,
    ToolChunk,
    Usage,
    assistant_message,
    user_message,
)

pytestmark = pytest.mark.anyio

KEY = "sk-rules-secret-5550123456"
REQUEST = {"model": "gpt-test", "messages": [{"role": "user", "content": "读取 README.md"}]}
SSE_HEADERS = {"content-type": "text/event-stream"}
MAX_EVENTS = 200  # a generator that never ends is stopped here and reported


def lesson(module: str, name: str) -> Any:
    """``pi_course.<module>.<name>`` as the learner's copy has it; a missing name is a clear failure."""
    found = getattr(importlib.import_module(f"pi_course.{module}"), name, None)
    if found is None:
        raise AssertionError(f"pi_course/{module}.py 里没有 {name}（这项检查直接调用它）")
    return found


def shown(value: object, limit: int = 160) -> str:
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def explain(ok: bool, *, given: str, expected: str, actual: str) -> None:
    """Fail with the three lines ``check`` shows: what was fed, what the chapter expects, what happened."""
    if not ok:
        raise AssertionError(f"输入：{given}\n期望：{expected}\n实际：{actual}")


def context(**fields: Any) -> AgentContext:
    return AgentContext((user_message("读取 README.md", timestamp=1),), **fields)


# --- driving the learner's adapter generator --------------------------------------------------------


class Script:
    """A transport of this file's own (not the learner's fixed_transport): it records what it got."""

    def __init__(self, items: Iterable[object]) -> None:
        self.items = tuple(items)
        self.requests: list[dict[str, Any]] = []
        self.signals: list[AbortSignal | None] = []

    async def stream(
        self, request: dict[str, Any], *, signal: AbortSignal | None = None
    ) -> AsyncIterator[Any]:
        self.requests.append(request)
        self.signals.append(signal)
        for item in self.items:
            if isinstance(item, BaseException):
                raise item
            yield item


def fixture_model(transport: object) -> OpenAICompatibleModel:
    return OpenAICompatibleModel(provider="fixture", model="fixture-model", transport=transport)  # type: ignore[arg-type]


async def generator_events(model: OpenAICompatibleModel, signal: AbortSignal | None = None) -> list[Any]:
    """Every event the learner's own generator yields, read past a terminal event (ModelStream would stop)."""
    own = getattr(model, "_events", None)
    events_of = own(context(), signal) if own is not None else model.stream(context(), signal=signal)._events
    events: list[Any] = []
    try:
        async for event in events_of:
            events.append(event)
            if len(events) >= MAX_EVENTS:
                break
    finally:
        closer = getattr(events_of, "aclose", None)
        if closer is not None:
            await closer()
    return events


def kinds(events: list[Any]) -> list[str]:
    return [f"{e.type}({e.reason})" if e.type in ("done", "error") else e.type for e in events]


def terminal(events: list[Any]) -> Any:
    """The message of the first terminal event (how many there are is one check's business alone)."""
    end = next((e for e in events if e.type in ("done", "error")), events[-1])
    if end.type == "done":
        return end.message
    return end.error if end.type == "error" else end.partial


def ending(events: list[Any]) -> str:
    """The first terminal event, as ``done(toolUse)`` / ``error(aborted)``."""
    return next((k for k in kinds(events) if k.startswith(("done(", "error("))), "（没有终态事件）")


def chunks_shown(items: Iterable[object]) -> str:
    return "[" + ", ".join(shown(item, 60) for item in items) + "]"


# --- 5.1 outbound ------------------------------------------------------------------------------------


@pytest.mark.step("5.1")
def test_rule_no_tools_key_without_tools() -> None:
    """没有工具时，请求里没有 tools 键（不是 "tools": null，也不是空数组）
    下一步：pi_course/outbound.py 的 build_request()：to_provider_tools() 返回 None 时整个键都不写
    """
    build_request = lesson("outbound", "build_request")
    for tools in (None, ()):
        request = build_request("gpt-test", context(tools=tools))
        explain(
            "tools" not in request,
            given=f"build_request('gpt-test', AgentContext(…, tools={tools!r}))",
            expected="请求 dict 里没有 'tools' 这个键",
            actual=f"键 {sorted(request)}，'tools' 的值是 {request.get('tools')!r}",
        )


@pytest.mark.step("5.1")
def test_rule_raw_arguments_are_preferred() -> None:
    """assistant 的工具参数优先用 raw_arguments 原文，没有原文才由 arguments 生成 JSON
    下一步：pi_course/outbound.py 的 _assistant_to_wire()：arguments 先取 call.raw_arguments，它是 None 时才 json 序列化 arguments（None 算 {}）
    """
    to_provider_messages = lesson("outbound", "to_provider_messages")
    cases = [
        (ToolCall("call-1", "read", {"path": "README.md"}, '{"path": "README.md"}'), '{"path": "README.md"}'),
        (ToolCall("call-1", "read", '{"path":"REA', '{"path":"REA'), '{"path":"REA'),
        (ToolCall("call-1", "read", None), "{}"),
    ]
    for call, expected in cases:
        ctx = AgentContext((assistant_message([call], "toolUse", timestamp=1),))
        wire = to_provider_messages(ctx)
        try:
            actual = wire[0]["tool_calls"][0]["function"]["arguments"]
        except (LookupError, TypeError):
            actual = f"（没有 tool_calls[0].function.arguments：{shown(wire)}）"
        explain(
            actual == expected,
            given=f"assistant 消息里的 {call!r}",
            expected=f"function.arguments == {expected!r}",
            actual=repr(actual),
        )


@pytest.mark.step("5.1")
def test_rule_outbound_leaves_the_context_unchanged() -> None:
    """出站转换是纯函数：build_request() 之后 context（连同工具的 schema）保持原样
    下一步：pi_course/outbound.py：只读取 context 和 ToolDefinition，新建 dict/list，不改动传入的对象
    """
    build_request = lesson("outbound", "build_request")
    tool_definition = lesson("protocol", "ToolDefinition")
    schema: dict[str, Any] = {"type": "object", "properties": {"path": {"type": "string"}}}
    ctx = AgentContext(
        (user_message("读取 README.md", timestamp=1),),
        system_prompt="回答要简洁。",
        tools=(tool_definition("read", "Read a file", schema),),
    )
    before = copy.deepcopy(ctx)
    build_request("gpt-test", ctx)
    explain(
        ctx == before,
        given="build_request('gpt-test', 带 system prompt 与一个工具的 context)",
        expected=f"调用之后 context 不变：{shown(before, 120)}",
        actual=shown(ctx, 200),
    )


# --- 5.2 the adapter ---------------------------------------------------------------------------------


@pytest.mark.step("5.2")
async def test_rule_fixed_transport_checks_the_signal_before_each_chunk() -> None:
    """fixed_transport() 在每个 chunk 之前检查 signal：取消之后不再产出 chunk，而是抛出 AbortError
    下一步：pi_course/adapter.py 的 _FixedTransport.stream()：循环里每次 yield 之前看 signal.aborted，为真就 raise AbortError()
    """
    fixed_transport = lesson("adapter", "fixed_transport")
    items = [TextChunk("正在"), TextChunk("读取"), FinishChunk("stop")]
    controller = AbortController()
    chunks = fixed_transport(items).stream(REQUEST, signal=controller.signal)
    got: list[object] = []
    outcome = "没有抛出异常，流照常结束"
    try:
        async for chunk in chunks:
            got.append(chunk)
            controller.abort()
            if len(got) > len(items):
                break
    except AbortError:
        outcome = "抛出 AbortError"
    except Exception as error:
        outcome = f"抛出 {type(error).__name__}: {error}"
    explain(
        got == items[:1] and outcome == "抛出 AbortError",
        given=f"fixed_transport({chunks_shown(items)})，收到第一个 chunk 后 abort()",
        expected="只产出第一个 chunk，下一次取 chunk 时抛出 AbortError",
        actual=f"产出 {chunks_shown(got)}，然后{outcome}",
    )


@pytest.mark.step("5.2")
async def test_rule_fixed_transport_yields_in_order_and_raises_at_the_exception() -> None:
    """fixed_transport() 按数组顺序产出 chunk，数组里的异常在它的位置抛出
    下一步：pi_course/adapter.py 的 _FixedTransport.stream()：依次 yield；遇到异常对象就 raise 它
    """
    fixed_transport = lesson("adapter", "fixed_transport")
    failure = RuntimeError("socket reset by peer")
    items: list[object] = [ToolChunk(4, "call-read", "read", '{"path":'), TextChunk("先读"), failure]
    got: list[object] = []
    outcome = "没有抛出异常"
    try:
        async for chunk in fixed_transport(items).stream(REQUEST):
            got.append(chunk)
            if len(got) > len(items):
                break
    except RuntimeError as error:
        outcome = f"抛出 RuntimeError: {error}" if error is failure else f"抛出另一个 RuntimeError: {error}"
    explain(
        got == items[:2] and outcome == "抛出 RuntimeError: socket reset by peer",
        given=f"fixed_transport({chunks_shown(items)})",
        expected="依次产出前两个 chunk，然后抛出列表里的那个 RuntimeError",
        actual=f"产出 {chunks_shown(got)}，{outcome}",
    )


INTERLEAVED = [
    ToolChunk(7, "call-a", "read", '{"path":'),
    TextChunk("先读"),
    ToolChunk(0, "call-b", "search", '{"query":'),
    ToolChunk(7, arguments_delta='"README.md"}'),  # ← back to provider index 7 after index 0
    TextChunk("，再查"),
    ToolChunk(0, arguments_delta='"pi"}'),
    FinishChunk("tool_calls"),
]


SLOTS = [
    ToolChunk(7, "call-a", "read", '{"path":"README.md"}'),
    TextChunk("先读"),
    ToolChunk(0, "call-b", "search", '{"query":"pi"}'),
    TextChunk("，再查"),
    FinishChunk("tool_calls"),
]


@pytest.mark.step("5.2")
async def test_rule_content_slots_by_first_appearance() -> None:
    """content 槽位按第一次出现的先后分配（text_content_index、每个 ToolBuffer 的 content_index），不是 Provider 的 index
    下一步：pi_course/adapter.py 的 _events()：文本或工具第一次出现时，把当时的 len(content) 记成它的槽位；之后的 delta 都用这个槽位，不用 chunk.index
    """
    events = await generator_events(fixture_model(Script(SLOTS)))
    slots = [e.content_index for e in events if e.type in ("text_delta", "toolcall_delta")]
    explain(
        slots == [0, 1, 2, 1],
        given=f"{chunks_shown(SLOTS[:4])}（Provider index 7、0；文本夹在中间）",
        expected="各 delta 事件的 content_index 依次是 [0, 1, 2, 1]（工具 7 占 content[0]，文本 content[1]，工具 0 占 content[2]）",
        actual=f"{slots}（事件：{kinds(events)}）",
    )


@pytest.mark.step("5.2")
async def test_rule_tool_buffers_found_by_provider_index() -> None:
    """后续的参数分片按 Provider index 找回同一个 ToolBuffer（tool_buffers 以 chunk.index 为键）
    下一步：pi_course/adapter.py 的 _events()：tool_buffers 是 dict，键是 chunk.index——不是列表位置，也不是“最后一个工具”；分片拼到这个 buffer 的参数原文上
    """
    events = await generator_events(fixture_model(Script(INTERLEAVED)))
    final = terminal(events)
    calls = {block.id: block.raw_arguments for block in final.content if isinstance(block, ToolCall)}
    explain(
        calls == {"call-a": '{"path":"README.md"}', "call-b": '{"query":"pi"}'},
        given=f"{chunks_shown(INTERLEAVED)}（第 4 个 chunk 在 index 0 之后回到 index 7）",
        expected='call-a 的参数原文 \'{"path":"README.md"}\'，call-b 的 \'{"query":"pi"}\'',
        actual=f"{calls}（终态 {ending(events)}，error_message {final.error_message!r}）",
    )


SNAPSHOT_CHUNKS = [
    TextChunk("正在"),
    TextChunk("读取"),
    ToolChunk(0, "call-1", "read", '{"path":'),
    ToolChunk(0, arguments_delta='"README.md"}'),
    FinishChunk("tool_calls", Usage(output=2)),
]


async def partials_as_emitted(items: list[object]) -> list[tuple[Any, str]]:
    """Each event's partial and the repr of its content at the moment it was emitted."""
    model = fixture_model(Script(items))
    own = getattr(model, "_events", None)
    source = own(context(), None) if own is not None else model.stream(context())._events
    seen: list[tuple[Any, str]] = []
    async for event in source:
        partial = getattr(event, "partial", None)
        if partial is not None:
            seen.append((partial, repr(tuple(partial.content))))  # a list or a tuple: the same content
        if len(seen) >= MAX_EVENTS:
            break
    return seen


@pytest.mark.step("5.2")
async def test_rule_each_partial_is_the_whole_content_so_far() -> None:
    """每个事件的 partial 是该时刻已经形成的完整内容，不是最后一个片段
    下一步：pi_course/adapter.py 的 _events()：文本 delta 追加到已有的文本上（content[text_content_index] 是到此为止的全部文本），再用整个 content 做 partial
    """
    seen = await partials_as_emitted(SNAPSHOT_CHUNKS)
    shown_then = [then for _, then in seen[1:5]]
    expected = [
        repr((TextContent("正在"),)),
        repr((TextContent("正在读取"),)),
        repr((TextContent("正在读取"), ToolCall("call-1", "read", '{"path":', '{"path":'))),
        repr(
            (
                TextContent("正在读取"),
                ToolCall("call-1", "read", '{"path":"README.md"}', '{"path":"README.md"}'),
            )
        ),
    ]
    explain(
        shown_then == expected,
        given=chunks_shown(SNAPSHOT_CHUNKS),
        expected="四个 delta 事件发出时的 partial.content 依次是："
        + " → ".join(shown(e, 90) for e in expected),
        actual=" → ".join(shown(t, 90) for t in shown_then),
    )


@pytest.mark.step("5.2")
async def test_rule_partials_never_change_after_they_are_emitted() -> None:
    """已经发出的 partial 是快照：后来的 delta 不会改变它
    下一步：pi_course/adapter.py 的 _events()：每个事件带 tuple(content) 做成的新 AssistantMessage，不要把同一个可变 list 交出去再修改
    """
    seen = await partials_as_emitted(SNAPSHOT_CHUNKS)
    changed = [
        (i, then, repr(tuple(p.content)))
        for i, (p, then) in enumerate(seen)
        if repr(tuple(p.content)) != then
    ]
    explain(
        not changed,
        given=chunks_shown(SNAPSHOT_CHUNKS),
        expected="流结束后，每个已发出的 partial.content 仍是发出时的样子",
        actual=(
            f"第 {changed[0][0]} 个事件的 partial 发出时是 {shown(changed[0][1], 80)}，后来变成 {shown(changed[0][2], 80)}"
            if changed
            else "没有变化"
        ),
    )


@pytest.mark.step("5.2")
async def test_rule_tool_calls_finish_parses_the_arguments() -> None:
    """finish 为 tool_calls 时解析完整 JSON；解析失败以 error 终态结束，content 保留已有的内容
    下一步：pi_course/adapter.py 的 _events()：tool_calls 的 finish 到达后对每个 buffer 做 json.loads；失败就发出 error 终态（partial 保留），不要把原文当作解析结果
    """
    good = [ToolChunk(0, "call-1", "read", '{"path":'), ToolChunk(0, arguments_delta='"README.md"}'),
            FinishChunk("tool_calls")]  # fmt: skip
    events = await generator_events(fixture_model(Script(good)))
    final = terminal(events)
    explain(
        "toolcall_end" in kinds(events)
        and ending(events) == "done(toolUse)"
        and final.content == (ToolCall("call-1", "read", {"path": "README.md"}, '{"path":"README.md"}'),),
        given=chunks_shown(good),
        expected="toolcall_end，然后 done(toolUse)；arguments 是解析后的 {'path': 'README.md'}",
        actual=f"事件 {kinds(events)}，content {shown(final.content, 120)}",
    )
    cut = '{"path":"READ'  # ← not JSON: the provider said tool_calls, yet the arguments are cut
    bad = [TextChunk("先读"), ToolChunk(0, "call-1", "read", cut), FinishChunk("tool_calls")]
    events = await generator_events(fixture_model(Script(bad)))
    final = terminal(events)
    explain(
        ending(events) == "error(error)"
        and final.stop_reason == "error"
        and final.content == (TextContent("先读"), ToolCall("call-1", "read", cut, cut)),
        given=f"{chunks_shown(bad)}（参数 {cut!r} 不是 JSON）",
        expected="error 终态（stop_reason 'error'），content 保留 '先读' 与参数原文",
        actual=f"事件 {kinds(events)}，stop_reason {final.stop_reason!r}，content {shown(final.content, 120)}",
    )


@pytest.mark.step("5.2")
async def test_rule_abort_from_the_transport_ends_aborted_with_the_content() -> None:
    """transport 抛出 AbortError（取消）对应 aborted 终态，已有的 content 保留
    下一步：pi_course/adapter.py 的 _events()：except 里区分 AbortError（reason "aborted"）与其他异常（"error"），两者都用当前 content 生成终态消息
    """
    items: list[object] = [TextChunk("正在"), AbortError()]
    events = await generator_events(fixture_model(Script(items)))
    final = terminal(events)
    explain(
        ending(events) == "error(aborted)" and final.stop_reason == "aborted"
        and final.content == (TextContent("正在"),),
        given=chunks_shown(items),
        expected="error 终态，reason 与 stop_reason 都是 'aborted'，content 是 ('正在',)",
        actual=f"事件 {kinds(events)}，stop_reason {final.stop_reason!r}，content {shown(final.content, 100)}",
    )  # fmt: skip


@pytest.mark.step("5.2")
async def test_rule_an_exception_ends_in_error_with_the_content_so_far() -> None:
    """transport 抛出的异常以 error 终态结束，error 消息沿用当前 content，error_message 是异常的文字
    下一步：pi_course/adapter.py 的 _events()：except Exception 里用此刻的 content 生成终态消息（stop_reason "error"），error_message 取 str(error)
    """
    items: list[object] = [
        ToolChunk(0, "call-1", "read", '{"path":'),
        TextChunk("正在"),
        RuntimeError("socket reset"),
    ]
    events = await generator_events(fixture_model(Script(items)))
    final = terminal(events)
    expected = (ToolCall("call-1", "read", '{"path":', '{"path":'), TextContent("正在"))
    explain(
        ending(events) == "error(error)"
        and final.content == expected
        and final.error_message == "socket reset",
        given=chunks_shown(items),
        expected=f"error 终态，content {shown(expected, 100)}，error_message 'socket reset'",
        actual=f"事件 {kinds(events)}，content {shown(final.content, 100)}，error_message {final.error_message!r}",
    )


TERMINAL_CASES: dict[str, list[object]] = {
    "mainline": [ToolChunk(0, "call-1", "read", '{"path":'), ToolChunk(0, arguments_delta='"README.md"}'),
                 FinishChunk("tool_calls", Usage(output=2))],
    "two-finish-chunks": [TextChunk("好"), FinishChunk("stop"), FinishChunk("stop", Usage(3, 1, 4))],
    "exception": [TextChunk("partial"), RuntimeError("socket reset by peer")],
    "no-finish": [TextChunk("partial")],
    "length": [ToolChunk(0, "call-1", "read", '{"path":"REA'), FinishChunk("length")],
    "arguments-not-json": [ToolChunk(0, "call-1", "read", '{"path":"REA'), FinishChunk("tool_calls")],
}  # fmt: skip


@pytest.mark.step("5.2")
@pytest.mark.parametrize("case", TERMINAL_CASES)
async def test_rule_exactly_one_terminal_event_from_the_generator(case: str) -> None:
    """你的事件生成器恰好产出一个终态事件（done 或 error），而且它是最后一个
    下一步：pi_course/adapter.py 的 _events()：done/error 只在流结束的地方产出一次，之后立即 return；ModelStream 在第一个终态处停下，多出来的终态它看不到，这项检查直接读你的生成器
    """
    items = TERMINAL_CASES[case]
    events = await generator_events(fixture_model(Script(items)))
    ends = [i for i, e in enumerate(events) if e.type in ("done", "error")]
    explain(
        len(ends) == 1 and ends[0] == len(events) - 1,
        given=chunks_shown(items),
        expected="恰好一个终态事件，并且是最后一个事件",
        actual=f"{len(ends)} 个终态：{kinds(events)}",
    )


@pytest.mark.step("5.2")
async def test_rule_the_same_signal_reaches_the_transport() -> None:
    """adapter 把调用者的同一个 signal 交给 transport.stream()
    下一步：pi_course/adapter.py 的 _events()：调用 self.transport.stream(request, signal=signal)，传的就是 stream() 收到的那个对象
    """
    script = Script([FinishChunk("stop")])
    controller = AbortController()
    await generator_events(fixture_model(script), controller.signal)
    explain(
        len(script.signals) == 1 and script.signals[0] is controller.signal,
        given="model.stream(context, signal=controller.signal)",
        expected="transport.stream() 被调用一次，signal 就是 controller.signal 这个对象",
        actual=f"调用 {len(script.signals)} 次，收到的 signal：{[shown(s) for s in script.signals]}",
    )


@pytest.mark.step("5.3")
async def test_rule_no_finish_chunk_is_an_error_with_the_content() -> None:
    """整个流没有结束原因：error 终态，error_message 是 Provider stream ended without a finish chunk，partial 保留
    下一步：pi_course/adapter.py 的 _events()：transport 结束后 finish 仍是 None，就用已有的 content 发出 error 终态
    """
    items = [TextChunk("partial")]
    events = await generator_events(fixture_model(Script(items)))
    final = terminal(events)
    explain(
        ending(events) == "error(error)"
        and final.error_message == "Provider stream ended without a finish chunk"
        and final.content == (TextContent("partial"),),
        given=f"{chunks_shown(items)}（没有 finish chunk）",
        expected="error 终态，error_message 'Provider stream ended without a finish chunk'，content ('partial',)",
        actual=f"事件 {kinds(events)}，error_message {final.error_message!r}，content {shown(final.content, 80)}",
    )


# --- 5.3 the SSE line buffer, at the learner's decoder -------------------------------------------------


def decoded(reads: list[bytes]) -> tuple[list[list[str]], list[str]]:
    """The data of the events each ``feed()`` returned, and what ``close()`` returned."""
    decoder = lesson("sse", "SSEDecoder")()
    per_read = [[event.data for event in decoder.feed(read)] for read in reads]
    return per_read, [event.data for event in decoder.close()]


def reads_shown(reads: list[bytes]) -> str:
    return " | ".join(repr(read) for read in reads)


@pytest.mark.step("5.3")
def test_rule_a_blank_line_ends_an_event() -> None:
    """空行结束一条 event：在空行到达之前，data 行只是收集起来，不是 payload
    下一步：pi_course/sse.py 的 SSEDecoder.feed()：data 行先收进当前 event，只有遇到空行才把收集的 data 作为一条 event 交出去
    """
    reads = [b'data: {"a":1}\n', b"\n"]
    per_read, rest = decoded(reads)
    explain(
        per_read == [[], ['{"a":1}']] and rest == [],
        given=f"两次读取：{reads_shown(reads)}（第二次才是空行）",
        expected="第一次 feed() 返回 []，第二次返回一条 event '{\"a\":1}'",
        actual=f"每次 feed() 的 event：{per_read}，close()：{rest}",
    )


@pytest.mark.step("5.3")
def test_rule_an_unterminated_last_event_is_no_payload() -> None:
    """输入结束时没有空行收尾的最后一条 event 不是 payload，丢弃
    下一步：pi_course/sse.py 的 SSEDecoder：close()（输入结束）时，没有遇到空行的 data 不交出去
    """
    for reads in ([b'data: {"a":1}\n\ndata: {"b":2}\n'], [b'data: {"a":1}\n\ndata: {"b":2}']):
        per_read, rest = decoded(reads)
        explain(
            [data for batch in per_read for data in batch] + rest == ['{"a":1}'],
            given=f"{reads_shown(reads)}，然后 close()（'{{\"b\":2}}' 那条没有空行收尾）",
            expected="只有一条 event '{\"a\":1}'",
            actual=f"feed() 的 event：{per_read}，close()：{rest}",
        )


LINE_ENDINGS = {
    "crlf": ([b"data: 1\r\n\r\ndata: 2\r\n\r\n"], ["1", "2"]),
    "cr": ([b"data: 1\r\rdata: 2\r\r"], ["1", "2"]),
    "crlf-split-across-reads": ([b"data: a\r", b"\n\r\n"], ["a"]),
}


@pytest.mark.step("5.3")
@pytest.mark.parametrize("case", LINE_ENDINGS)
def test_rule_every_line_ending_ends_a_line(case: str) -> None:
    """CRLF、LF、单独的 CR 都结束一行，行尾的 \\r 不留在 data 里；CR 与 LF 分在两次读取也只算一个行尾
    下一步：pi_course/sse.py 的 SSEDecoder.feed()：用给定的 SSEText 解码（它把各种行尾都换成 \\n），或自己处理 \\r\\n、\\r，并记住读取末尾的 \\r
    """
    reads, expected = LINE_ENDINGS[case]
    per_read, rest = decoded(reads)
    got = [data for batch in per_read for data in batch] + rest
    explain(
        got == expected,
        given=reads_shown(reads),
        expected=f"event 的 data 依次是 {expected}",
        actual=str(got),
    )


@pytest.mark.step("5.3")
def test_rule_several_data_lines_are_joined_with_a_newline() -> None:
    """一条 event 的几行 data 用 "\\n" 连成一个 data（不是直接拼接）
    下一步：pi_course/sse.py 的 SSEDecoder.feed()：收集的 data 行交给 _fields.dispatch(data)（它用 "\\n" 连接），或自己 "\\n".join(data)
    """
    reads = [b"data: a\ndata: b\n\n"]
    per_read, rest = decoded(reads)
    got = [data for batch in per_read for data in batch] + rest
    explain(
        got == ["a\nb"],
        given=reads_shown(reads),
        expected="一条 event，data 是 'a\\nb'",
        actual=str(got),
    )


@pytest.mark.step("5.3")
def test_rule_a_leading_bom_is_not_part_of_the_first_field() -> None:
    """流开头的 BOM（EF BB BF）不属于第一行：第一条 data 照常读出，BOM 跨两次读取也一样
    下一步：pi_course/sse.py 的 SSEDecoder.feed()：用给定的 SSEText 解码，或自己在流的开头去掉一个 \\ufeff（只在最开头，只去一个）
    """
    for reads in ([b'\xef\xbb\xbfdata: {"a":1}\n\n'], [b"\xef", b'\xbb\xbfdata: {"a":1}\n\n']):
        per_read, rest = decoded(reads)
        got = [data for batch in per_read for data in batch] + rest
        explain(
            got == ['{"a":1}'],
            given=f"{reads_shown(reads)}（开头 3 个字节是 BOM）",
            expected="一条 event '{\"a\":1}'",
            actual=f"{got}",
        )


SPLIT_BODY = (
    'data: {"choices":[{"index":0,"delta":{"content":"正在读取"},"finish_reason":null}]}\n\ndata: [DONE]\n\n'
).encode()


@pytest.mark.step("5.3")
def test_rule_reads_split_anywhere_even_inside_a_character() -> None:
    """网络读取可以在任何字节处切开，包括一个 UTF-8 字符的中间：得到的 event 与整块读取相同
    下一步：pi_course/sse.py 的 SSEDecoder.feed()：用增量解码（给定的 SSEText，或 codecs 的 incremental decoder）把不完整的字符留到下一次，没有换行的那段也留在行缓冲里
    """
    whole = ['{"choices":[{"index":0,"delta":{"content":"正在读取"},"finish_reason":null}]}', "[DONE]"]
    for cut in range(1, len(SPLIT_BODY)):
        reads = [SPLIT_BODY[:cut], SPLIT_BODY[cut:]]
        try:
            per_read, rest = decoded(reads)
            got: object = [data for batch in per_read for data in batch] + rest
        except Exception as error:  # e.g. a UnicodeDecodeError from decoding each read alone
            got = f"抛出 {type(error).__name__}: {error}"
        if got != whole:
            explain(
                False,
                given=f"两次读取，切在第 {cut} 个字节：…{SPLIT_BODY[max(0, cut - 12) : cut]!r} ‖ {SPLIT_BODY[cut : cut + 12]!r}…",
                expected=f"与一次读完相同：{shown(whole, 120)}",
                actual=shown(got, 200),
            )


# --- 5.3 the reader: finish + trailing usage --------------------------------------------------------


async def sse_events(*datas: str) -> AsyncIterator[SSEEvent]:
    for data in datas:
        yield SSEEvent(data)


async def read_chunks(*datas: str) -> list[object]:
    read_provider_chunks = lesson("sse", "read_provider_chunks")
    got = []
    async for chunk in read_provider_chunks(sse_events(*datas)):
        got.append(chunk)
        if len(got) >= MAX_EVENTS:
            break
    return got


FINISH = json.dumps({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
USAGE = json.dumps(
    {"choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": 8, "total_tokens": 20}}
)
TEXT = json.dumps({"choices": [{"index": 0, "delta": {"content": "好"}, "finish_reason": None}]})


@pytest.mark.step("5.3")
async def test_rule_one_finish_chunk_from_the_reason_and_the_trailing_usage() -> None:
    """结束原因先记住，等尾随 usage；遇到 [DONE] 或输入结束，只产出一个 finish chunk
    下一步：pi_course/sse.py 的 read_provider_chunks()：finish_reason 只记下来，不在那里产出；循环结束后（[DONE] 或输入结束）用记下的原因和合并的 usage 产出唯一的 FinishChunk
    """
    for datas in ((TEXT, FINISH, USAGE, "[DONE]"), (TEXT, FINISH, USAGE)):
        got = await read_chunks(*datas)
        finishes = [c for c in got if isinstance(c, FinishChunk)]
        usage = finishes[-1].usage if finishes else None
        counts = None if usage is None else (usage.input, usage.output, usage.total_tokens)
        explain(
            len(finishes) == 1 and got[-1] is finishes[0] and finishes[0].reason == "tool_calls" and counts == (12, 8, 20),
            given="SSE event 的 data：" + " | ".join(shown(d, 70) for d in datas),
            expected="TextChunk('好')，然后恰好一个 FinishChunk('tool_calls', usage 12/8/20)，它是最后一个",
            actual=chunks_shown(got),
        )  # fmt: skip


@pytest.mark.step("5.3")
async def test_rule_no_finish_reason_means_no_finish_chunk() -> None:
    """整个流没有出现结束原因：reader 不编造 finish chunk
    下一步：pi_course/sse.py 的 read_provider_chunks()：只有记下过 finish_reason 才产出 FinishChunk
    """
    got = await read_chunks(TEXT, USAGE, "[DONE]")
    explain(
        not any(isinstance(c, FinishChunk) for c in got),
        given=f"SSE event 的 data：{shown(TEXT, 70)} | {shown(USAGE, 70)} | [DONE]（没有 finish_reason）",
        expected="只有 TextChunk('好')，没有 FinishChunk",
        actual=chunks_shown(got),
    )


@pytest.mark.step("5.3")
async def test_rule_the_chapter_narrowing_example() -> None:
    """收窄从 unknown 开始：{"choices":[{"delta":{"content":"正在读取"}}]} 得到文本 chunk，content 为 42 时报出字段路径
    下一步：pi_course/sse.py 的 parse_payload()：逐层检查 record、choices 数组、choices[0]、delta、content 的类型；错误写成 Invalid provider chunk: choices[0].delta.content must be a string
    """
    good = '{"choices":[{"delta":{"content":"正在读取"}}]}'
    got = await read_chunks(good)
    explain(
        got == [TextChunk("正在读取")],
        given=f"data：{good}",
        expected="[TextChunk(delta='正在读取')]",
        actual=chunks_shown(got),
    )
    bad = '{"choices":[{"delta":{"content":42}}]}'
    try:
        outcome = f"没有报错，产出 {chunks_shown(await read_chunks(bad))}"
    except Exception as error:
        outcome = str(error)
    expected = "Invalid provider chunk: choices[0].delta.content must be a string"
    explain(
        outcome == expected,
        given=f"data：{bad}（content 是数字）",
        expected=f"抛出 {expected!r}",
        actual=repr(outcome),
    )


# --- 5.3 the transport: abort, cleanup, the whole chain ----------------------------------------------


class Body(httpx.AsyncByteStream):
    """A response body: the given reads; ``on_read`` runs before each; may then block forever."""

    def __init__(self, *reads: bytes, on_read: Callable[[], None] | None = None, hang: bool = False) -> None:
        self.reads = reads
        self.on_read = on_read
        self.hang = hang
        self.closed = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for read in self.reads:
            if self.on_read is not None:
                self.on_read()
            yield read
        if self.hang:
            await asyncio.Event().wait()

    async def aclose(self) -> None:
        self.closed = True


def sse(*payloads: object) -> bytes:
    return "".join(
        f"data: {p if isinstance(p, str) else json.dumps(p, ensure_ascii=False)}\n\n" for p in payloads
    ).encode()


def transport_with(body: Body | None, seen: list[httpx.Request] | None = None) -> OpenAICompatibleTransport:
    def respond(request: httpx.Request) -> httpx.Response:
        if seen is not None:
            seen.append(request)
        return httpx.Response(
            200, headers=SSE_HEADERS, stream=body if body is not None else Body(sse(FINISH))
        )

    client = httpx.AsyncClient(transport=httpx.MockTransport(respond))
    return OpenAICompatibleTransport(base_url="https://provider.invalid/v1", api_key=KEY, client=client)


async def drain(chunks: AsyncIterator[object]) -> tuple[list[object], BaseException | None]:
    got: list[object] = []
    try:
        async for chunk in chunks:
            got.append(chunk)
            if len(got) >= MAX_EVENTS:
                break
    except Exception as error:
        return got, error
    return got, None


@pytest.mark.step("5.3")
async def test_rule_abort_is_checked_before_the_request() -> None:
    """读取之前检查 abort signal：已经取消的 signal 不发出请求，直接 AbortError
    下一步：pi_course/transport.py 的 _reads()：发请求之前看 signal.aborted，为真就 raise AbortError()
    """
    seen: list[httpx.Request] = []
    controller = AbortController()
    controller.abort()
    got, error = await drain(transport_with(None, seen).stream(REQUEST, signal=controller.signal))
    explain(
        not seen and error is not None and not got,  # which exception: test_rule_abort_error_keeps_its_name
        given="transport.stream(request, signal=已经 abort() 的 signal)",
        expected="一个请求也不发，直接以异常（AbortError）结束",
        actual=f"发出 {len(seen)} 个请求，产出 {chunks_shown(got)}，异常 {error!r}",
    )


@pytest.mark.step("5.3")
async def test_rule_abort_ends_a_request_still_waiting_for_its_response() -> None:
    """signal 交给请求本身：响应头还没到时 abort()，请求被放弃，抛出 AbortError
    下一步：pi_course/transport.py 的 _reads()：发送请求（self._client.send）也要和 abort 信号竞争——交给 AbortRace.run()，不只是读取响应体
    """
    controller = AbortController()

    async def never_answers(request: httpx.Request) -> httpx.Response:
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    client = httpx.AsyncClient(transport=httpx.MockTransport(never_answers))
    transport = OpenAICompatibleTransport(base_url="https://provider.invalid/v1", api_key=KEY, client=client)
    asyncio.get_running_loop().call_later(0.05, controller.abort)
    try:
        async with asyncio.timeout(2):  # abort() should end it within milliseconds
            _, error = await drain(transport.stream(REQUEST, signal=controller.signal))
        outcome = "没有异常" if error is None else f"{type(error).__name__}: {error}"
    except TimeoutError:
        outcome = "abort() 之后 2 秒仍在等待响应"
    explain(
        outcome != "没有异常"
        and "2 秒" not in outcome,  # which exception: test_rule_abort_error_keeps_its_name
        given="服务器一直不回响应头；0.05 秒后 abort()",
        expected="transport.stream() 很快以异常（AbortError）结束",
        actual=outcome,
    )


@pytest.mark.step("5.3")
async def test_rule_abort_is_checked_after_a_read() -> None:
    """读取之后也检查 abort signal：读取期间被取消，读到的字节不再变成事件，终态是 aborted
    下一步：pi_course/transport.py 的 _reads()：每次读取都交给 AbortRace.iterate()（它在读取前后都看 signal），或自己在每次读取返回后检查 signal.aborted
    """
    controller = AbortController()
    body = Body(sse(TEXT, json.loads(FINISH), "[DONE]"), on_read=controller.abort)
    model = OpenAICompatibleModel(
        provider="openai-compatible", model="gpt-test", transport=transport_with(body)
    )
    events = await generator_events(model, controller.signal)
    explain(
        kinds(events) == ["start", "error(aborted)"],
        given="一次读取带来 text、finish 与 [DONE]，这次读取进行中调用了 abort()",
        expected="事件 ['start', 'error(aborted)']：取消之后读到的字节不再产出事件",
        actual=f"事件 {kinds(events)}",
    )


@pytest.mark.step("5.3")
async def test_rule_abort_error_keeps_its_name() -> None:
    """取消保持 AbortError：transport 不把它包成别的错误，adapter 才能认出取消
    下一步：pi_course/transport.py 的 stream()：except AbortError: raise 写在其他 except 之前，取消不经过脱敏包装
    """
    controller = AbortController()
    body = Body(sse(TEXT), hang=True)
    chunks = transport_with(body).stream(REQUEST, signal=controller.signal)
    asyncio.get_running_loop().call_later(0.05, controller.abort)
    got, error = await drain(chunks)
    explain(
        isinstance(error, AbortError),
        given="响应先送来一条 text，然后读取一直等待；0.05 秒后 abort()",
        expected="transport.stream() 抛出 pi_course.AbortError",
        actual=f"产出 {chunks_shown(got)}，然后 {'没有异常' if error is None else f'{type(error).__name__}: {error}'}",
    )


@pytest.mark.step("5.3")
async def test_rule_the_response_is_closed_in_finally() -> None:
    """正常结束、解析异常、提前停止读取，都经过同一个清理位置：响应被关闭
    下一步：pi_course/transport.py 的 _reads()：得到 response 之后用 try/finally，在 finally 里 await response.aclose()
    """
    cases = {
        "解析异常（choices 不是数组）": (Body(sse(TEXT, {"choices": "x"})), None),
        "调用者读到第一个 chunk 就停下": (Body(sse(TEXT, json.loads(FINISH), "[DONE]")), 1),
    }
    for what, (body, stop_after) in cases.items():
        chunks = transport_with(body).stream(REQUEST)
        if stop_after is None:
            await drain(chunks)
        else:
            async for _ in chunks:
                break
            await chunks.aclose()  # type: ignore[attr-defined]
        explain(
            body.closed,
            given=what,
            expected="响应体的 aclose() 被调用",
            actual="响应没有关闭",
        )


@pytest.mark.step("5.3")
async def test_rule_one_terminal_event_over_sse() -> None:
    """经过真实的 SSE 读取，你的生成器也只产出一个终态：finish 在结束原因与 [DONE] 之间不重复
    下一步：pi_course/sse.py 的 read_provider_chunks() 只产出一个 FinishChunk；pi_course/adapter.py 的 _events() 只在流结束后产出一次终态
    """
    body = Body(sse(TEXT, json.loads(FINISH), json.loads(USAGE), "[DONE]"))
    model = OpenAICompatibleModel(
        provider="openai-compatible", model="gpt-test", transport=transport_with(body)
    )
    events = await generator_events(model)
    ends = [e for e in events if e.type in ("done", "error")]
    usage = terminal(events).usage if events else None
    explain(
        len(ends) == 1 and events[-1] is ends[0] and usage is not None and usage.total_tokens == 20,
        given="SSE：text '好' | finish_reason tool_calls | 尾随 usage 12/8/20 | [DONE]",
        expected="恰好一个终态，是最后一个事件，usage 的 total_tokens 为 20",
        actual=f"事件 {kinds(events)}，usage {usage!r}",
    )


# --- 5.4 the request and the key ------------------------------------------------------------------


@pytest.mark.step("5.4")
def test_rule_the_endpoint_is_checked_as_a_url() -> None:
    """最终 endpoint 要检查：拼出来的不是绝对 http(s) URL 就报错
    下一步：pi_course/transport.py 的 chat_completions_url()：拼好之后用 httpx.URL 解析，scheme 不是 http/https 或没有 host 时 raise ValueError
    """
    chat_completions_url = lesson("transport", "chat_completions_url")
    for bad in ("provider.invalid/v1", "not a url", ""):
        try:
            outcome = f"返回 {chat_completions_url(bad)!r}"
        except Exception as error:
            outcome = f"raise {type(error).__name__}"
        explain(
            outcome.startswith("raise"),
            given=f"chat_completions_url({bad!r})",
            expected="抛出异常（不是绝对的 http(s) URL）",
            actual=outcome,
        )


@pytest.mark.step("5.4")
def test_rule_trailing_slashes_are_dropped_before_the_path() -> None:
    """base URL 去掉末尾的斜杠（一个或几个）再加 /chat/completions：endpoint 里没有 //
    下一步：pi_course/transport.py 的 chat_completions_url()：base_url.rstrip("/") + "/chat/completions"
    """
    chat_completions_url = lesson("transport", "chat_completions_url")
    for base in (
        "https://provider.invalid/v1",
        "https://provider.invalid/v1/",
        "https://provider.invalid/v1//",
    ):
        try:
            outcome = repr(chat_completions_url(base))
        except Exception as error:
            outcome = f"raise {type(error).__name__}: {error}"
        explain(
            outcome == "'https://provider.invalid/v1/chat/completions'",
            given=f"chat_completions_url({base!r})",
            expected="'https://provider.invalid/v1/chat/completions'",
            actual=outcome,
        )


@pytest.mark.step("5.4")
def test_rule_the_key_goes_only_into_the_authorization_header() -> None:
    """API key 只进 Authorization header（Bearer），URL、body 和其他 header 里都没有它
    下一步：pi_course/transport.py 的 _headers()：{"Authorization": f"Bearer {key}"}，key 不写进 body 或 URL
    """
    seen: list[httpx.Request] = []
    asyncio.run(drain(transport_with(None, seen).stream(REQUEST)))
    if not seen:
        explain(False, given="transport.stream(request)", expected="发出一次请求", actual="没有发出请求")
    request = seen[0]
    places = (
        [name for name, value in request.headers.items() if KEY in value and name != "authorization"]
        + ["URL"] * (KEY in str(request.url))
        + ["body"] * (KEY.encode() in request.content)
    )
    authorization = request.headers.get("authorization", "（没有）").replace(KEY, "<密钥>")
    explain(
        authorization == "Bearer <密钥>" and not places,
        given="OpenAICompatibleTransport(api_key=<密钥>).stream(request)",
        expected="Authorization: Bearer <密钥>，别处没有密钥",
        actual=f"Authorization: {authorization}" + (f"；密钥还在：{places}" if places else ""),
    )


@pytest.mark.step("5.4")
def test_rule_the_body_asks_for_a_stream_with_usage() -> None:
    """请求体在 request 之上加入 stream: true 与 stream_options.include_usage: true，其余原样
    下一步：pi_course/transport.py 的 request_body()：返回 {**request, "stream": True, "stream_options": {"include_usage": True}}
    """
    transport = transport_with(None)
    request = {**REQUEST, "tools": [{"type": "function", "function": {"name": "read"}}]}
    body = transport.request_body(request)
    expected = {**request, "stream": True, "stream_options": {"include_usage": True}}
    explain(
        body == expected and request == {**REQUEST, "tools": request["tools"]},
        given=f"request_body({shown(request, 100)})",
        expected=shown(expected, 200),
        actual=shown(body, 200),
    )


@pytest.mark.step("5.4")
async def test_rule_every_occurrence_of_the_key_is_redacted() -> None:
    """底层错误文本里的 API key 每一处都换成 [redacted]
    下一步：pi_course/transport.py 的 _Secret.redact()：用 str.replace 替换全部出现（不是只换第一处）
    """

    def respond(request: httpx.Request) -> httpx.Response:
        auth = request.headers["authorization"]
        raise httpx.ConnectError(f"proxy refused {auth}; retry with {auth}", request=request)

    client = httpx.AsyncClient(transport=httpx.MockTransport(respond))
    transport = OpenAICompatibleTransport(base_url="https://provider.invalid/v1", api_key=KEY, client=client)
    _, error = await drain(transport.stream(REQUEST))
    text = "" if error is None else str(error)
    explain(
        error is not None and KEY not in text and text.count("[redacted]") == 2,
        given="底层 ConnectError 的文本两次带上 'Bearer <密钥>'",
        expected="错误文本里两处都是 [redacted]，没有密钥",
        actual="没有异常" if error is None else repr(text.replace(KEY, "«密钥»")),
    )
