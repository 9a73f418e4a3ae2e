"""The embedded provider driven by the Vercel AI SDK under node: every scripted model reads as the course reads it.

``tools/upstream_pi/ai_sdk.mjs`` streams each model with ``ai``'s ``streamText`` over
``@ai-sdk/openai-compatible`` (pinned in ``tools/upstream_pi/package.json``) and prints what it got;
the course's own reading of the same model, over the same loopback server, is the expectation.
Skipped, saying what to install, without node or ``tools/upstream_pi/node_modules``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from node_tools import need_node_tools, run_node

from pi_course import AgentContext, OpenAICompatibleModel, OpenAICompatibleTransport, user_message
from pi_course.protocol import AssistantMessage, TextContent, ToolCall
from pi_course.provider.server import SCRIPTS, LocalProvider

pytestmark = [pytest.mark.node, pytest.mark.anyio]
FINISH = {"stop": "stop", "length": "length", "toolUse": "tool-calls"}


@pytest.fixture(scope="module")
def provider() -> Iterator[LocalProvider]:
    with LocalProvider() as running:
        yield running


@pytest.fixture(scope="module")
def ai_sdk(provider: LocalProvider) -> dict[str, Any]:
    """What the AI SDK made of every scripted model, read once (one node process)."""
    need_node_tools()
    readings: dict[str, Any] = run_node("ai_sdk.mjs", provider.base_url, *SCRIPTS)
    return readings


async def course_reading(provider: LocalProvider, model: str) -> AssistantMessage:
    transport = OpenAICompatibleTransport(base_url=provider.base_url, api_key="pi-course-local-key")
    async with transport:
        stream = OpenAICompatibleModel(provider="local", model=model, transport=transport).stream(
            AgentContext((user_message("读取 README.md"),))
        )
        return await stream.result()


@pytest.mark.parametrize("model", list(SCRIPTS))
async def test_the_ai_sdk_reads_every_scripted_model_as_the_course_does(
    provider: LocalProvider, ai_sdk: dict[str, Any], model: str
) -> None:
    theirs, ours = ai_sdk[model], await course_reading(provider, model)
    text = "".join(block.text for block in ours.content if isinstance(block, TextContent))
    assert theirs["text"] == text, model
    if ours.stop_reason == "error":  # every fault is a fault to the SDK too, with the same words
        assert theirs["errors"] and theirs["finish_reason"] in (None, "error"), theirs
        assert ours.error_message is not None
        said = theirs["errors"][0]
        if said.startswith("HTTP 4") or said.startswith("HTTP 5"):  # the provider's JSON error message
            assert said.split(": ", 1)[1] in ours.error_message, (said, ours.error_message)
        return
    assert theirs["errors"] == [] and theirs["finish_reason"] == FINISH[ours.stop_reason]
    calls = [
        {"id": call.id, "name": call.name, "input": call.arguments}
        for call in ours.content
        if isinstance(call, ToolCall)
    ]
    assert sorted(theirs["tool_calls"], key=json.dumps) == sorted(calls, key=json.dumps)
    assert theirs["usage"] == {"input": ours.usage.input, "output": ours.usage.output}


def test_every_fault_script_is_an_error_to_the_ai_sdk(ai_sdk: dict[str, Any]) -> None:
    faults = [name for name in SCRIPTS if name.startswith("fault-")]
    assert len(faults) == 7
    for name in faults:
        assert ai_sdk[name]["errors"], f"{name}: the AI SDK saw no error"
