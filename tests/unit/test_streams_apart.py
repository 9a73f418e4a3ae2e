"""Streams share no state: each keeps its own usage and its own reading.

The usage an error keeps and the fields the reader ignored belong to one stream. Two streams over
one model, stepped in turn in one event loop, and streams in two threads (two event loops), must
each end with their own usage, text and log line.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest

from pi_course import (
    AgentContext,
    AssistantMessage,
    ModelStream,
    OpenAICompatibleModel,
    OpenAICompatibleTransport,
    TextContent,
    Usage,
    user_message,
)

CONTEXT = AgentContext((user_message("x"),))
DELTAS = 200


def sse(*payloads: object) -> list[bytes]:
    """One read per event, so that two streams read in turn really interleave."""
    return [f"data: {json.dumps(p) if not isinstance(p, str) else p}\n\n".encode() for p in payloads]


def choice(delta: dict[str, Any] | None, finish: str | None = None) -> dict[str, Any]:
    entry: dict[str, Any] = {"index": 0, "finish_reason": finish}
    if delta is not None:
        entry["delta"] = delta
    return {"choices": [entry]}


def usage(prompt: int, completion: int) -> dict[str, Any]:
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


# Sends its usage first, then text, then an in-stream error: the error keeps 11 + 4.
FAILING = sse(
    {"choices": [], "usage": usage(11, 4)},
    *[choice({"content": "a"}) for _ in range(DELTAS)],
    choice({"content": "a"}, "length"),
    {"choices": [], "error": {"message": "Token limit reached"}},
)
# A real provider's quirks: reasoning beside the text, the usage so far in every payload (as
# Perplexity sends it), a finish reason without delta.
QUIRKY = sse(
    *[{**choice({"content": "b", "reasoning_content": "rr"}), "usage": usage(5, 21)} for _ in range(DELTAS)],
    {**choice(None, "stop"), "usage": usage(5, 21)},
    "[DONE]",
)


class Reads(httpx.AsyncByteStream):
    def __init__(self, reads: list[bytes]) -> None:
        self.reads = reads

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for read in self.reads:
            await asyncio.sleep(0)  # let the other stream run between reads
            yield read


def model_serving(*bodies: list[bytes]) -> OpenAICompatibleModel:
    """One model, one quirk-reading transport, one client: the n-th request gets the n-th body."""
    served = iter(bodies)

    def respond(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=Reads(next(served)))

    client = httpx.AsyncClient(transport=httpx.MockTransport(respond))
    transport = OpenAICompatibleTransport(
        base_url="http://apart.invalid/v1", api_key="sk-apart", client=client, strict=False
    )
    return OpenAICompatibleModel(provider="apart", model="m", transport=transport)


async def in_turn(*streams: ModelStream) -> list[AssistantMessage]:
    """Step the streams one event each, in turn, until all have ended."""
    running = list(streams)
    while running:
        for stream in list(running):
            try:
                await anext(stream)
            except StopAsyncIteration:
                running.remove(stream)
    return [await stream.result() for stream in streams]


def text(message: AssistantMessage) -> str:
    return "".join(block.text for block in message.content if isinstance(block, TextContent))


def check_apart(failed: AssistantMessage, quirky: AssistantMessage) -> None:
    assert (failed.stop_reason, failed.error_message, text(failed)) == (
        "error",
        "Token limit reached",
        "a" * (DELTAS + 1),
    )
    assert failed.usage == Usage(11, 4, 15)
    assert (quirky.stop_reason, text(quirky), quirky.usage) == ("stop", "b" * DELTAS, Usage(5, 21, 26))


@contextmanager
def reader_log(caplog: pytest.LogCaptureFixture) -> Iterator[list[str]]:
    lines: list[str] = []
    with caplog.at_level(logging.INFO, logger="pi_course"):
        yield lines
    lines += [r.getMessage() for r in caplog.records if r.name.startswith("pi_course")]


@pytest.mark.anyio
async def test_two_streams_in_turn_in_one_loop_keep_their_own_usage_and_reading(
    caplog: pytest.LogCaptureFixture,
) -> None:
    model = model_serving(FAILING, QUIRKY)
    with reader_log(caplog) as log:
        failed, quirky = await in_turn(model.stream(CONTEXT), model.stream(CONTEXT))
        await model.transport.aclose()
    check_apart(failed, quirky)
    assert log == [f"the reader ignored reasoning_content: {2 * DELTAS} chars"]


def test_streams_in_two_threads_keep_their_own_usage_and_reading(caplog: pytest.LogCaptureFixture) -> None:
    rounds = 30
    results: dict[str, list[AssistantMessage]] = {"failing": [], "quirky": []}
    errors: list[BaseException] = []

    def run(name: str, body: list[bytes]) -> None:
        async def main() -> None:
            model = model_serving(*[body] * rounds)
            for _ in range(rounds):
                results[name].append(await model.stream(CONTEXT).result())
            await model.transport.aclose()

        try:
            asyncio.run(main())
        except BaseException as error:  # reported by the main thread
            errors.append(error)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible: any shared state shows
    try:
        with reader_log(caplog) as log:
            threads = [
                threading.Thread(target=run, args=("failing", FAILING)),
                threading.Thread(target=run, args=("quirky", QUIRKY)),
            ]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(timeout=120)
    finally:
        sys.setswitchinterval(interval)
    assert errors == [] and not any(thread.is_alive() for thread in threads)
    assert len(results["failing"]) == len(results["quirky"]) == rounds
    for failed, quirky in zip(results["failing"], results["quirky"], strict=True):
        check_apart(failed, quirky)
    assert log == [f"the reader ignored reasoning_content: {2 * DELTAS} chars"] * rounds
