"""Which practice steps of this copy work: small offline probes of the learner's own code.

A notebook cell that fails needs to say *why* in one line. ``lesson``'s handler asks
:func:`first_problem` which step is missing (a stub, or 5.4's naive starter) or broken (the
learner's code runs, but gets the chapter's fixtures wrong), and names it. Each probe runs the
chapter's own fixture through the copy's modules, the way the focused tests do, in a few
milliseconds, and never raises: any exception is itself the answer.
"""

from __future__ import annotations

import importlib
import re
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any

STUB = re.compile(r"Lab (5\.[1-4])\b.*尚未实现")
PROBE_SECONDS = 5.0  # a probe stuck in a learner's loop is a problem too, not a hang


@dataclass(frozen=True)
class Problem:
    """What is wrong with one step: ``missing`` (a stub or the starter) or ``broken`` (wrong results)."""

    step: str
    kind: str  # "missing" | "broken"
    why: str


def _described(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__


def _from_error(step: str, error: BaseException) -> Problem:
    found = STUB.search(str(error))
    if isinstance(error, NotImplementedError) and found:
        return Problem(found.group(1), "missing", str(error))
    if isinstance(error, ImportError) and "ToolDefinition" in str(error):
        return Problem("5.1", "missing", str(error))
    if isinstance(error, SyntaxError) and error.filename:  # a lesson file that does not parse
        where = "/".join(error.filename.replace("\\", "/").split("/")[-2:])
        return Problem(step, "broken", f"{where} 第 {error.lineno} 行不能解析（{error.msg}）")
    return Problem(step, "broken", f"运行时抛出 {_described(error)}")


def _run_async(probe: Callable[[], Awaitable[Problem | None]]) -> Problem | None:
    """Drive an async probe to its end right here: no thread, no second event loop.

    The kernel's loop is busy running the cell (and Pyodide cannot start a thread), but the
    probes only feed in-memory fixtures: their awaits never wait for anything outside, so
    stepping the coroutine by hand finishes it. A probe that waits on a real future (a
    learner's ``await`` of something that never comes) or loops past the bound is a problem.
    """
    coroutine = _as_coroutine(probe())
    deadline = time.monotonic() + PROBE_SECONDS
    try:
        while True:
            try:
                waited = coroutine.send(None)
            except StopIteration as finished:
                result: Problem | None = finished.value
                return result
            if waited is not None:  # a future: something outside the fixture it would wait for
                return Problem("?", "broken", "等待的东西在离线的 fixture 里永远不会到来")
            if time.monotonic() > deadline:
                return Problem("?", "broken", f"超过 {PROBE_SECONDS:g} 秒没有结束")
    finally:
        coroutine.close()


def _as_coroutine(awaitable: Awaitable[Problem | None]) -> Coroutine[Any, Any, Problem | None]:
    if isinstance(awaitable, Coroutine):
        return awaitable

    async def wrapped() -> Problem | None:
        return await awaitable

    return wrapped()


def probe_5_1() -> Problem | None:
    package = importlib.import_module("pi_course")
    if not hasattr(package, "ToolDefinition"):
        return Problem("5.1", "missing", "pi_course 没有导出 ToolDefinition")
    fixtures = importlib.import_module("pi_course.chapter.fixtures")
    wire = package.to_provider_messages(fixtures.outbound_context())
    roles = [message.get("role") for message in wire]
    if roles != ["system", "user", "assistant", "tool"]:
        return Problem(
            "5.1",
            "broken",
            f"四种 role 的 context 写出 {roles}（应为 system、user、assistant、tool）",
        )
    tools = package.to_provider_tools([fixtures.READ_TOOL])
    if not tools or tools[0].get("type") != "function":
        return Problem("5.1", "broken", f"to_provider_tools([READ_TOOL]) 写出 {tools!r}")
    return None


async def _probe_5_2() -> Problem | None:
    package = importlib.import_module("pi_course")
    fixtures = importlib.import_module("pi_course.chapter.fixtures")
    model = package.OpenAICompatibleModel(
        provider="probe", model="probe", transport=package.fixed_transport(fixtures.DIAGNOSTIC_4_2_CHUNKS)
    )
    events = [event async for event in model.stream(fixtures.mainline_context())]
    last = events[-1]
    if last.type == "error":
        message = last.error.error_message or ""
        if STUB.search(message):
            return _from_error("5.2", NotImplementedError(message))
        return Problem("5.2", "broken", f"4/2 fixture 以 error 结束：{message}")
    first = next((event for event in events if event.type == "toolcall_delta"), None)
    if first is None or first.content_index != 0:
        slot = None if first is None else first.content_index
        return Problem(
            "5.2",
            "broken",
            f"4/2 fixture 的第一条 toolcall_delta 指向槽位 {slot}（应为 0）",
        )
    kinds = [block.type for block in last.message.content]
    if kinds != ["toolCall", "text", "toolCall"]:
        return Problem("5.2", "broken", f"4/2 fixture 的最终 content 是 {kinds}")
    early = events[2].partial.content  # right after the first text delta: "先读"
    if len(early) < 2 or getattr(early[1], "text", None) != "先读":
        return Problem("5.2", "broken", "partial 不是快照：后来的 delta 改掉了早先事件里的 content")
    return None


async def _probe_5_3() -> Problem | None:
    sse = importlib.import_module("pi_course.sse")
    wire = importlib.import_module("pi_course.chapter.wire")
    adapter = importlib.import_module("pi_course.adapter")

    async def reads() -> Any:
        for read in wire.mainline_sse_reads()[0]:
            yield read

    chunks = [chunk async for chunk in sse.iter_provider_chunks(sse.iter_sse_events(reads()))]
    expected = [
        adapter.ToolChunk(0, "call-1", "read", '{"path":'),
        adapter.ToolChunk(0, None, None, '"README.md"}'),
    ]
    if chunks[:2] != expected or len(chunks) != 3 or getattr(chunks[2], "reason", None) != "tool_calls":
        shown = ", ".join(type(chunk).__name__ for chunk in chunks) or "什么也没有"
        return Problem(
            "5.3", "broken", f"主线的五次网络读取读出 {shown}（应为 2 个 ToolChunk、1 个 FinishChunk）"
        )
    return None


def probe_5_4() -> Problem | None:
    """Every part of 5.4 still in its starter form, in one line (a learner finishes them one by one)."""
    transport = importlib.import_module("pi_course.transport")
    built = transport.OpenAICompatibleTransport(base_url="https://provider.invalid/v1/", api_key="sk-probe")
    left = []
    if built.url != "https://provider.invalid/v1/chat/completions":
        left.append(f"base URL 末尾有 / 时写出 {built.url!r}")
    body = built.request_body({"model": "m", "messages": []})
    if body.get("stream") is not True or body.get("stream_options") != {"include_usage": True}:
        left.append("请求体里没有 stream: true 和 stream_options")
    if built._headers().get("Accept") != "text/event-stream":
        left.append("请求头里没有 Accept: text/event-stream")
    if "sk-probe" in built._key.redact("Bearer sk-probe"):
        left.append("错误消息里的 API key 没有换成 [redacted]")
    return Problem("5.4", "missing", "还是初版：" + "；".join(left)) if left else None


PROBES: dict[str, Callable[[], Problem | None]] = {
    "5.1": probe_5_1,
    "5.2": lambda: _run_async(_probe_5_2),
    "5.3": lambda: _run_async(_probe_5_3),
    "5.4": probe_5_4,
}


def probe(step: str) -> Problem | None:
    """The problem with ``step`` in the running ``pi_course``, or ``None`` when its probe passes."""
    try:
        found = PROBES[step]()
    except BaseException as error:  # the learner's code: anything can come out
        if isinstance(error, KeyboardInterrupt | SystemExit):
            raise
        found = _from_error(step, error)
    if found is not None and found.step == "?":
        found = Problem(step, found.kind, found.why)
    return found


def first_problem(steps: tuple[str, ...] = ("5.1", "5.2", "5.3", "5.4")) -> Problem | None:
    """The first of ``steps`` whose probe fails (steps build on each other, so order matters)."""
    for step in steps:
        found = probe(step)
        if found is not None:
            return found
    return None
