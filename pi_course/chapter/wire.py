"""The chapter's mainline on the wire: the JSON payloads and SSE bytes of its two turns.

Turn 1 asks for ``read`` as call-1 at index 0 in two argument fragments; turn 2, after the tool
result, answers in Chinese text. The local provider serves exactly these payloads and the SSE
stepper cuts exactly these bytes. The payload builders here are the only ones: the local provider
writes every script with them. Plain data (and the seam's chunks): this works in every practice
copy, before any lesson module is written.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable
from typing import Any

from ..seam import FinishChunk, ProviderChunk, TextChunk, ToolChunk

MAINLINE_ANSWER = ("README.md ", "的第一行是 ", "# Project", "。")
MAINLINE_USAGE = ((30, 2), (42, 9))  # (prompt_tokens, completion_tokens) of turn 1 and turn 2


def choice_payload(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    """One payload of choice 0: a delta, and the finish reason when there is one."""
    return {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def usage_payload(prompt: int, completion: int) -> dict[str, Any]:
    """The trailing usage payload: empty ``choices``, total = prompt + completion (as providers send it)."""
    counts = {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
    return {"choices": [], "usage": counts}


def payloads_of(chunks: Iterable[ProviderChunk]) -> list[dict[str, Any]]:
    """The payloads a provider sends for ``chunks``: the seam's chunks written back on the wire."""
    payloads = []
    for chunk in chunks:
        if isinstance(chunk, TextChunk):
            payloads.append(choice_payload({"content": chunk.delta}))
        elif isinstance(chunk, ToolChunk):
            call: dict[str, Any] = {"index": chunk.index}
            if chunk.id is not None:
                call.update(id=chunk.id, type="function")
            function = {"name": chunk.name, "arguments": chunk.arguments_delta}
            call["function"] = {key: value for key, value in function.items() if value is not None}
            payloads.append(choice_payload({"tool_calls": [call]}))
        elif isinstance(chunk, FinishChunk):
            payloads.append(choice_payload({}, chunk.reason))
            if chunk.usage is not None:
                payloads.append(usage_payload(chunk.usage.input, chunk.usage.output))
    return payloads


def mainline_payloads(turn: int) -> list[dict[str, Any]]:
    """The JSON payloads of mainline turn 1 or 2, in order (``[DONE]`` not included)."""
    if turn == 1:
        call = {"index": 0, "id": "call-1", "type": "function"}
        return [
            choice_payload({"tool_calls": [{**call, "function": {"name": "read", "arguments": '{"path":'}}]}),
            choice_payload({"tool_calls": [{"index": 0, "function": {"arguments": '"README.md"}'}}]}),
            choice_payload({}, "tool_calls"),
            usage_payload(*MAINLINE_USAGE[0]),
        ]
    return [
        *(choice_payload({"content": piece}) for piece in MAINLINE_ANSWER),
        choice_payload({}, "stop"),
        usage_payload(*MAINLINE_USAGE[1]),
    ]


def sse_line(payload: dict[str, Any]) -> str:
    """One SSE event carrying ``payload`` as compact JSON, the way the chapter prints it."""
    return "data: " + json.dumps(payload, ensure_ascii=False, separators=(",", ":")) + "\n\n"


#: The first mainline chunk exactly as the chapter prints the SSE line.
MAINLINE_SSE_LINE = sse_line(mainline_payloads(1)[0])


def mainline_sse_bodies() -> tuple[bytes, bytes]:
    """The mainline's two response bodies, each ending in ``data: [DONE]``."""
    return tuple(  # type: ignore[return-value]
        ("".join(map(sse_line, mainline_payloads(turn))) + "data: [DONE]\n\n").encode() for turn in (1, 2)
    )


def _cut(body: bytes, marks: list[int]) -> list[bytes]:
    edges = [0, *marks, len(body)]
    return [body[a:b] for a, b in itertools.pairwise(edges)]


def mainline_sse_reads() -> list[list[bytes]]:
    """The default split: ten reads over the mainline's two responses.

    Response 1: the chapter's cut right after ``call-``; the rest of that event; the second
    payload cut inside ``README``; a read ending right after a line's ``\\n`` but before the blank
    line; then one read carrying two whole events and the start of ``[DONE]``, and its tail.
    Response 2: two events and a cut inside the three bytes of 的; the rest of the character; two
    events ending mid-line; everything else.
    """
    first, second = mainline_sse_bodies()
    line_1_end = first.index(b"\n\n") + 2
    readme = first.index(b"README", line_1_end) + 3
    line_2_end = first.index(b"\n\n", line_1_end)
    done = first.index(b"[DONE]") + 3
    de = second.index("的".encode()) + 1
    after_de = second.index(b"\n\n", de) + 2
    project = second.index("。".encode())
    return [
        _cut(first, [first.index(b"call-") + 5, line_1_end, readme, line_2_end + 1, done]),
        _cut(second, [de, after_de, project]),
    ]
