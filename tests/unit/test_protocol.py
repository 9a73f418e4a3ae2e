"""The canonical protocol and chapter 04's ScriptedModel."""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import pickle
import threading

import pytest

from pi_course import (
    EMPTY_USAGE,
    AbortController,
    AgentContext,
    AssistantMessage,
    DoneEvent,
    ModelStream,
    ScriptedModel,
    StartEvent,
    TextContent,
    ToolCall,
    ToolDefinition,
    ToolResultMessage,
    UserMessage,
    assistant_message,
    text,
    text_of,
    user_message,
)

pytestmark = pytest.mark.anyio


def test_values_stay_the_course_values() -> None:
    call = ToolCall("call-1", "read", {"path": "README.md"})
    result = ToolResultMessage("call-1", "read", [text("x")], False, 1)
    assert (call.type, text("x").type, result.role) == ("toolCall", "text", "toolResult")
    assert (user_message("hi", timestamp=1).role, assistant_message([]).role) == ("user", "assistant")
    assert isinstance(result.content, tuple)


def test_constructors_store_tuples_and_objects_are_frozen() -> None:
    message = UserMessage([text("a"), text("b")], 1)
    assert message.content == (TextContent("a"), TextContent("b"))
    context = AgentContext([message], tools=[ToolDefinition("read", "r", {})])
    assert isinstance(context.messages, tuple) and isinstance(context.tools, tuple)
    with pytest.raises(AttributeError):
        message.timestamp = 2  # type: ignore[misc]


def test_helpers() -> None:
    message = assistant_message([text("a"), ToolCall("c", "n", {}), text("b")], timestamp=5)
    assert (message.provider, message.model, message.usage) == ("scripted", "scripted-v1", EMPTY_USAGE)
    assert message.stop_reason == "stop" and message.timestamp == 5
    assert text_of(message) == "a\nb"


def test_with_content_is_replace_for_streaming_snapshots() -> None:
    base = assistant_message([text("a")], timestamp=5)
    content = [text("先读"), ToolCall("c", "n", "{", "{")]
    snapshot = base.with_content(tuple(content))
    content.append(text("later"))
    assert snapshot == dataclasses.replace(base, content=(text("先读"), ToolCall("c", "n", "{", "{")))
    assert base.content == (text("a"),)
    assert pickle.loads(pickle.dumps(snapshot)) == snapshot
    assert copy.deepcopy(snapshot) == snapshot


async def test_model_stream_result_drains_and_is_the_terminal_message() -> None:
    final = assistant_message([text("hi")], timestamp=1)
    pulled: list[str] = []

    async def events():  # type: ignore[no-untyped-def]
        pulled.append("start")
        yield StartEvent(assistant_message([], timestamp=1))
        pulled.append("done")
        yield DoneEvent("stop", final)

    stream = ModelStream(events())
    assert pulled == []  # lazy: nothing runs before the consumer pulls
    first = await stream.__anext__()
    assert first.type == "start" and pulled == ["start"]
    assert await stream.result() is final
    assert await stream.result() is final
    assert [event async for event in stream] == []


async def test_model_stream_without_terminal_event_is_a_bug_not_a_hang() -> None:
    async def events():  # type: ignore[no-untyped-def]
        yield StartEvent(assistant_message([], timestamp=1))

    with pytest.raises(RuntimeError, match="without a terminal event"):
        await ModelStream(events()).result()


def test_abort_controller_works_outside_an_event_loop() -> None:
    controller = AbortController()
    seen: list[str] = []
    controller.signal.add_callback(lambda: seen.append("fired"))
    assert not controller.signal.aborted
    controller.abort()
    controller.abort()
    assert controller.signal.aborted and seen == ["fired"]


async def test_abort_from_another_thread_wakes_a_waiter() -> None:
    controller = AbortController()
    waiter = asyncio.ensure_future(controller.signal.wait())
    await asyncio.sleep(0)
    threading.Timer(0.02, controller.abort).start()
    await asyncio.wait_for(waiter, timeout=5)
    assert controller.signal.aborted


# --- ScriptedModel (chapter 04) ----------------------------------------------------------------

SCRIPT = [
    assistant_message(
        [text("先读"), ToolCall("call-1", "read", {"path": "README.md"}, '{"path":"README.md"}')],
        "toolUse",
        timestamp=1,
    ),
    assistant_message([text("写到一半")], "error", timestamp=2, error_message="scripted failure"),
]


async def test_scripted_model_plays_blocks_then_terminal_and_records_snapshots() -> None:
    model = ScriptedModel(SCRIPT)
    tools = [ToolDefinition("read", "Read a file", {"type": "object", "properties": {}})]
    context = AgentContext([user_message("读取 README.md", timestamp=1)], tools=tools)
    stream = model.stream(context)
    events = [event async for event in stream]

    assert [(e.type, getattr(e, "content_index", None)) for e in events] == [
        ("start", None),
        ("text_delta", 0),
        ("toolcall_delta", 1),
        ("toolcall_end", 1),
        ("done", None),
    ]
    assert events[2].delta == '{"path":"README.md"}'
    assert events[2].partial.content == SCRIPT[0].content
    assert events[-1].reason == "toolUse" and await stream.result() is SCRIPT[0]
    context.tools[0].parameters["properties"]["late"] = {}  # type: ignore[index]
    assert "late" not in model.requests[0].tools[0].parameters["properties"]  # type: ignore[index]


async def test_scripted_model_error_turn_keeps_partial_text_and_diagnostic() -> None:
    model = ScriptedModel(SCRIPT[1:])
    stream = model.stream(AgentContext([user_message("x", timestamp=1)]))
    events = [event async for event in stream]
    assert [e.type for e in events] == ["start", "text_delta", "error"]
    result = await stream.result()
    assert result.content == (TextContent("写到一半"),)
    assert (result.stop_reason, result.error_message) == ("error", "scripted failure")


async def test_scripted_model_pre_aborted_and_exhausted_give_one_error_event() -> None:
    model = ScriptedModel([])
    controller = AbortController()
    controller.abort()
    aborted = [e async for e in model.stream(AgentContext([]), signal=controller.signal)]
    exhausted = [e async for e in model.stream(AgentContext([]))]
    assert [(e.type, e.reason) for e in aborted] == [("error", "aborted")]
    assert aborted[0].error.error_message == "Request was aborted"
    assert [(e.type, e.reason) for e in exhausted] == [("error", "error")]
    assert "no turn left" in (exhausted[0].error.error_message or "")
    assert isinstance(exhausted[0].error, AssistantMessage)
    assert len(model.requests) == 2
