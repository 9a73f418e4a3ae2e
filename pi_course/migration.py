"""Reference solution of the optional migration exercise: a transport for another event protocol.

The protocol uses named SSE events with JSON data::

    event: token   data: {"text": "...", "logprob": -0.1}
    event: action  data: {"slot": 0, "id": "call-1", "name": "read", "input": "{\\"path\\":",
                          "confidence": 0.9}
    event: end     data: {"reason": "action", "usage": {"in": 12, "out": 8, "cached": 4},
                          "cost_usd": 0.0002}

``end.reason`` is ``"done"``, ``"max_tokens"`` or ``"action"``. Only the transport changes: its
output is the same three ``ProviderChunk`` kinds, so the adapter, ``AgentMessage`` and
``ModelEvent`` stay exactly as they are. Fields the course types cannot express are not dropped
silently: the transport records each one it saw in :attr:`TokenEventTransport.unexpressed`.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterable, AsyncIterator, Callable
from typing import Any

from .protocol import AbortError, AbortSignal, Usage
from .seam import FinishChunk, FinishReason, ProviderChunk, ProviderRequest, TextChunk, ToolChunk
from .sse import InvalidProviderChunk, SSEEvent, iter_sse_events

ByteSource = Callable[[ProviderRequest], AsyncIterable[bytes]]

END_REASONS: dict[str, FinishReason] = {"done": "stop", "max_tokens": "length", "action": "tool_calls"}

#: What each event may carry beyond the course's types, and why it has nowhere to go.
UNEXPRESSED = {
    "token.logprob": "per-token log probability: TextContent holds only text",
    "action.confidence": "the model's confidence in a call: ToolCall has no such field",
    "end.usage.cached": "cached prompt tokens: Usage counts only input, output and total",
    "end.cost_usd": "the provider's price for the turn: no message carries cost",
}


def token_event_to_chunk(event: SSEEvent) -> tuple[ProviderChunk, list[str]]:
    """One named event → one ``ProviderChunk``, plus the names of fields it could not keep."""
    data = _object(event.data, event.event)
    match event.event:
        case "token":
            chunk: ProviderChunk = TextChunk(_string(data, "text", "token"))
            extra = ["token.logprob"] if "logprob" in data else []
        case "action":
            slot = data.get("slot")
            if type(slot) is not int or slot < 0:
                raise InvalidProviderChunk("action.slot must be a non-negative integer")
            chunk = ToolChunk(
                slot,
                _optional_string(data, "id", "action"),
                _optional_string(data, "name", "action"),
                _optional_string(data, "input", "action"),
            )
            extra = ["action.confidence"] if "confidence" in data else []
        case "end":
            reason = END_REASONS.get(str(data.get("reason")))
            if reason is None:
                shown = data.get("reason")
                raise InvalidProviderChunk(f"end.reason {shown!r} is not one of {', '.join(END_REASONS)}")
            usage = data.get("usage") or {}
            if not isinstance(usage, dict):
                raise InvalidProviderChunk("end.usage must be an object")
            chunk = FinishChunk(reason, Usage(_count(usage, "in"), _count(usage, "out")))
            extra = [name for key, name in (("cached", "end.usage.cached"),) if key in usage]
            extra += ["end.cost_usd"] if "cost_usd" in data else []
        case other:
            raise InvalidProviderChunk(f"unknown event type {other!r}")
    return chunk, extra


class TokenEventTransport:
    """A :class:`~pi_course.adapter.ProviderTransport` for the token/action/end protocol.

    ``source(request)`` returns the response body as byte chunks (an HTTP response's
    ``aiter_bytes()``, or a list of reads in tests). SSE framing is the course's own decoder.
    """

    def __init__(self, source: ByteSource) -> None:
        self.source = source
        self.unexpressed: set[str] = set()

    async def stream(
        self, request: ProviderRequest, *, signal: AbortSignal | None = None
    ) -> AsyncIterator[ProviderChunk]:
        async for event in iter_sse_events(self.source(request)):
            if signal is not None and signal.aborted:
                raise AbortError()
            chunk, extra = token_event_to_chunk(event)
            self.unexpressed.update(extra)
            yield chunk
            if isinstance(chunk, FinishChunk):
                return


def _object(data: str, event: str) -> dict[str, Any]:
    try:
        value = json.loads(data)
    except ValueError:
        raise InvalidProviderChunk(f"{event} data is not valid JSON") from None
    if not isinstance(value, dict):
        raise InvalidProviderChunk(f"{event} data must be an object")
    return value


def _string(data: dict[str, Any], key: str, event: str) -> str:
    value = data.get(key)
    if not isinstance(value, str):
        raise InvalidProviderChunk(f"{event}.{key} must be a string")
    return value


def _optional_string(data: dict[str, Any], key: str, event: str) -> str | None:
    return None if data.get(key) is None else _string(data, key, event)


def _count(usage: dict[str, Any], key: str) -> int:
    value = usage.get(key, 0)
    if type(value) is not int or value < 0:
        raise InvalidProviderChunk(f"end.usage.{key} must be a non-negative integer")
    return value


#: The chapter's mainline in this protocol, with one field of each kind the course cannot keep.
MAINLINE_TOKEN_STREAM = (
    'event: token\ndata: {"text": "先读取文件。", "logprob": -0.12}\n\n'
    'event: action\ndata: {"slot": 0, "id": "call-1", "name": "read", '
    '"input": "{\\"path\\":", "confidence": 0.93}\n\n'
    'event: action\ndata: {"slot": 0, "input": "\\"README.md\\"}"}\n\n'
    'event: end\ndata: {"reason": "action", "usage": {"in": 12, "out": 8, "cached": 4}, '
    '"cost_usd": 0.0002}\n\n'
).encode()
