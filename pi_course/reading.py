"""Given code, not the lesson: how each payload is read before the chapter's validator sees it.

The chapter's reader (practice 5.3, in ``sse.py``) narrows one payload of one choice and merges
the finish reason with the trailing usage. Real streams also carry things the chapter never
mentions. :class:`PayloadReading` deals with them, one SSE event at a time, before the learner's
``read_provider_chunks()`` gets the event, so the learner never writes any of this:

In both modes (``strict=True`` is the chapter's reader, ``strict=False`` real-provider mode):

- ``[DONE]`` with whitespace around it is handed on as exactly ``[DONE]``;
- a payload with an ``error`` field ends the stream: :class:`ProviderError` with its message;
- only choice ``index`` 0 is read (``n > 1`` sends other indexes): another index is rejected;
- a ``delta.refusal`` is collected whole and ends the stream as :class:`ProviderRefusal`;
- a tool call's ``type`` must be ``"function"``, and a fragment must carry something;
- content after the finish reason, or a finish reason that changes, is rejected;
- a strict rejection of a content-filter annotation says that ``strict=False`` reads it;
- the usage the provider sent is remembered, so an error or a refusal keeps it
  (:func:`keep_usage_on_error`);
- fields the reader ignores (reasoning, citations, thinking parts) are counted and logged once
  per stream, at INFO, on the ``pi_course.reading`` logger.

Only with ``strict=False`` (what ``connect()`` uses for a real provider), what the provider meant:

- a choice with a ``finish_reason`` and no ``delta`` gets an empty ``delta``;
- whole tool calls without ``index`` get their position among the stream's calls;
- an array ``content`` becomes its ``text`` parts joined (``thinking`` parts are ignored);
- a payload that carries nothing readable (an annotation) is skipped; a choice without
  ``delta`` that holds a field the reader does not know is rejected, naming the field.

A payload this reading changes is handed on re-encoded; every other event is handed on as it
came. Either way it is parsed once: :func:`parse_json` returns the object this reading parsed.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterable, AsyncIterator
from contextvars import ContextVar
from dataclasses import replace

from .given import SSEEvent
from .protocol import EMPTY_USAGE, ErrorEvent, ModelEvent, Usage, aclose_iterator

logger = logging.getLogger("pi_course.reading")

DONE = "[DONE]"
MAX_SAFE_INTEGER = 2**53 - 1
USAGE_FIELDS = (("prompt_tokens", "input"), ("completion_tokens", "output"), ("total_tokens", "total_tokens"))
# Keys of a choice without delta that carry nothing the course reads (content-filter annotations).
ANNOTATION_KEYS = frozenset(
    {"index", "finish_reason", "logprobs", "content_filter_results", "content_filter_offsets"}
)
# Keys of a payload with empty choices that mark it as an annotation (Azure, OpenAI moderation).
PAYLOAD_ANNOTATIONS = ("prompt_filter_results", "prompt_annotations", "moderation")
READS_IT = "strict=False, which connect() uses for real providers, reads it"
ANNOTATION_REJECTION = f"choices[0].delta must be an object (a content-filter annotation: {READS_IT})"
# Text fields of a delta the reader ignores: their characters are counted and reported.
IGNORED_TEXT = ("reasoning_content", "reasoning")


class InvalidProviderChunk(ValueError):
    """A payload that does not have the shape the course relies on; the message names the path."""

    def __init__(self, detail: str) -> None:
        super().__init__(f"Invalid provider chunk: {detail}")


class ProviderError(Exception):
    """The provider reported an error inside the stream (a payload with an ``error`` field)."""


class ProviderRefusal(ProviderError):
    """The model refused (``delta.refusal``): the course types have no refusal block."""

    def __init__(self, refusal: str) -> None:
        super().__init__(f"Provider refused: {refusal}")
        self.refusal = refusal


def provider_error_message(error: object) -> str:
    """The text of an in-stream ``error`` field: its ``message`` when it has one."""
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return str(error["message"])
    return error if isinstance(error, str) else json.dumps(error, ensure_ascii=False)


# --- parsed once ---------------------------------------------------------------------------------

# The event data PayloadReading handed on last, and the object it parsed from it. parse_json
# returns that object instead of parsing the same text a second time (make bench: JSON parsing
# is the largest single cost of a streamed token). Taken once, then forgotten.
_handed_on: list[object] = [None, None]


def parse_json(data: str) -> object:
    """``json.loads`` for one payload; text that is not JSON is an invalid provider chunk."""
    if data is _handed_on[0]:
        parsed = _handed_on[1]
        _handed_on[0] = _handed_on[1] = None
        return parsed
    try:
        return json.loads(data)
    except ValueError:
        pass
    raise InvalidProviderChunk("data is not valid JSON")


# --- what one stream's reading saw ----------------------------------------------------------------


class StreamReport:
    """The usage a provider sent in one stream, and the sizes of the fields the reader ignored."""

    def __init__(self) -> None:
        self.usage: dict[str, int] = {}
        self.ignored: dict[str, int] = {}  # field → size: "reasoning_content", "citations", ...
        self.units: dict[str, str] = {}  # field → unit of its size ("chars"), when it has one
        self.logged = False

    def note_usage(self, usage: object) -> None:
        if isinstance(usage, dict):
            for wire, name in USAGE_FIELDS:
                count = usage.get(wire)
                if type(count) is float and count.is_integer():
                    count = int(count)
                if type(count) is int and 0 <= count <= MAX_SAFE_INTEGER:
                    self.usage[name] = count

    def count(self, field: str, size: int, unit: str = "") -> None:
        self.ignored[field] = self.ignored.get(field, 0) + size
        if unit:
            self.units[field] = unit

    def at_least(self, field: str, size: int) -> None:
        """For a field every payload repeats in full (Perplexity's citations): its largest size."""
        self.ignored[field] = max(self.ignored.get(field, 0), size)

    def final_usage(self) -> Usage | None:
        if not self.usage:
            return None
        usage = Usage(**self.usage)
        return usage if usage.total_tokens else replace(usage, total_tokens=usage.input + usage.output)

    def summary(self) -> str:
        """``reasoning_content: 1,234 chars; citations: 5`` (empty when nothing was ignored)."""
        parts = []
        for field, size in self.ignored.items():
            unit = self.units.get(field)
            parts.append(f"{field}: {size:,}{' ' + unit if unit else ''}")
        return "; ".join(parts)

    def log_once(self) -> None:
        if not self.logged and self.ignored:
            self.logged = True
            logger.info("the reader ignored %s", self.summary())


_report: ContextVar[StreamReport | None] = ContextVar("pi_course_stream_report", default=None)


def current_report() -> StreamReport:
    """The report of the model stream being read now (a fresh one outside a model stream)."""
    return _report.get() or StreamReport()


async def keep_usage_on_error(events: AsyncIterator[ModelEvent]) -> AsyncIterator[ModelEvent]:
    """Hand on a model stream's events; an error that lost the provider's usage gets it back.

    The usage reaches the reading through :func:`current_report`, set for each step of
    ``events`` (the adapter's error path builds its message without usage).
    """
    report = StreamReport()
    try:
        while True:
            token = _report.set(report)
            try:
                event = await anext(events)
            except StopAsyncIteration:
                return
            finally:
                _report.reset(token)
            if type(event) is ErrorEvent and event.error.usage == EMPTY_USAGE:
                usage = report.final_usage()
                if usage is not None:
                    event = ErrorEvent(event.reason, replace(event.error, usage=usage))
            yield event
    finally:
        await aclose_iterator(events)


# --- the reading of each payload ------------------------------------------------------------------


def _index(value: object) -> int | None:
    """A choice or tool index as a safe integer, or None when it is not one."""
    if type(value) is float and value.is_integer():
        value = int(value)
    return value if type(value) is int and 0 <= value <= MAX_SAFE_INTEGER else None


class PayloadReading:
    """Reads one stream's SSE events before the chapter's validator (see the module docstring)."""

    def __init__(self, *, strict: bool = True, report: StreamReport | None = None) -> None:
        self.strict = strict
        self.report = report if report is not None else current_report()
        self.refusal = ""
        self.finish_reason: object = None
        self.calls_without_index = 0

    async def events(self, events: AsyncIterable[SSEEvent]) -> AsyncIterator[SSEEvent]:
        """The events the chapter's reader gets: [DONE] exact, annotations skipped, payloads read."""
        async for event in events:
            data = event.data
            if data == DONE or (len(data) < 20 and data.strip() == DONE):  # no copy of every payload
                self.end()
                yield event if data == DONE else SSEEvent(DONE, event.event, event.id)
                continue
            try:
                payload = json.loads(data)
            except ValueError:
                yield event  # the chapter's reader says it is not JSON
                continue
            changed = self.read(payload) if isinstance(payload, dict) else False
            if changed is None:
                continue  # an annotation: nothing the course reads
            if changed:
                event = SSEEvent(json.dumps(payload, ensure_ascii=False), event.event, event.id)
            _handed_on[0], _handed_on[1] = event.data, payload
            yield event
        self.end()

    def end(self) -> None:
        """The stream is over: a collected refusal ends it now."""
        if self.refusal:
            refusal, self.refusal = self.refusal, ""
            raise ProviderRefusal(refusal)

    def read(self, payload: dict[str, object]) -> bool | None:
        """Read one payload in place: True when changed, None when it is to be skipped."""
        usage = payload.get("usage")
        if usage is not None:
            self.report.note_usage(usage)
        citations = payload.get("citations")
        if isinstance(citations, list):
            self.report.at_least("citations", len(citations))
        if payload.get("error") is not None:
            raise ProviderError(provider_error_message(payload["error"]))
        choices = payload.get("choices")
        if not isinstance(choices, list):
            return False  # the chapter's reader names it
        if not choices:
            if payload.get("usage") is None:
                return self._annotation(payload, "choices is empty and the payload carries no usage")
            return False
        if len(choices) != 1 or not isinstance(choices[0], dict):
            return False
        choice: dict[str, object] = choices[0]
        index = choice.get("index", 0)
        if type(index) is not int or index != 0:  # only choice 0 is read: check why not
            index = _index(choice["index"])
            if index is None:
                raise InvalidProviderChunk("choices[0].index must be a non-negative safe integer")
            if index != 0:
                raise InvalidProviderChunk("choices[0].index must be 0: only the first choice is read")
        changed = False
        delta = choice.get("delta")
        if delta is None:
            if choice.get("finish_reason") is None:
                return self._choice_without_delta(choice)
            if self.strict:
                if "content_filter_results" in choice:
                    raise InvalidProviderChunk(ANNOTATION_REJECTION)
                return False
            choice["delta"] = delta = {}  # a finish reason alone: an empty delta
            changed = True
        if not isinstance(delta, dict):
            return changed
        changed = self._delta(delta) or changed
        finish_reason = choice.get("finish_reason")
        if finish_reason is not None or self.finish_reason is not None:
            self._finish_order(finish_reason, delta)
        return changed

    def _annotation(self, payload: dict[str, object], rejection: str) -> bool | None:
        """A payload with nothing the course reads: skipped, or (strict) rejected with a hint."""
        if self.strict:
            marks = [key for key in PAYLOAD_ANNOTATIONS if key in payload]
            if marks:
                raise InvalidProviderChunk(f"{rejection} (it carries {', '.join(marks)}: {READS_IT})")
            return False  # the chapter's reader rejects it
        self.report.count("skipped payloads", 1)
        return None

    def _choice_without_delta(self, choice: dict[str, object]) -> bool | None:
        if self.strict:
            if "content_filter_results" in choice:
                raise InvalidProviderChunk(ANNOTATION_REJECTION)
            return False  # the chapter's reader rejects it
        unknown = [key for key, value in choice.items() if value is not None and key not in ANNOTATION_KEYS]
        if unknown:
            raise InvalidProviderChunk(
                f"choices[0].{unknown[0]} is not a field the reader knows, and the choice has no delta"
            )
        self.report.count("skipped payloads", 1)
        return None

    def _delta(self, delta: dict[str, object]) -> bool:
        changed = False
        refusal = delta.get("refusal")
        if refusal is not None:
            if not isinstance(refusal, str):
                raise InvalidProviderChunk("choices[0].delta.refusal must be a string")
            self.refusal += refusal
        for field in IGNORED_TEXT:
            value = delta.get(field)
            if isinstance(value, str) and value:
                self.report.count(field, len(value), "chars")
        content = delta.get("content")
        if isinstance(content, list) and not self.strict:
            delta["content"] = self._content_parts(content)
            changed = True
        tool_calls = delta.get("tool_calls")
        if isinstance(tool_calls, list):
            for position, call in enumerate(tool_calls):
                if isinstance(call, dict):
                    changed = self._tool_call(call, f"choices[0].delta.tool_calls[{position}]") or changed
        return changed

    def _content_parts(self, parts: list[object]) -> str:
        """Array content: its text parts joined; thinking parts ignored and counted."""
        texts = []
        for number, part in enumerate(parts):
            kind = part.get("type") if isinstance(part, dict) else None
            if kind == "text" and isinstance(part, dict) and isinstance(part.get("text"), str):
                texts.append(part["text"])
            elif kind == "thinking":
                self.report.count("thinking parts", 1)
            else:
                shown = json.dumps(kind, ensure_ascii=False)
                raise InvalidProviderChunk(
                    f"choices[0].delta.content[{number}].type {shown} is not text or thinking"
                )
        return "".join(texts)

    def _tool_call(self, call: dict[str, object], path: str) -> bool:
        if call.get("type") not in (None, "function"):
            raise InvalidProviderChunk(f'{path}.type must be "function"')
        function = call.get("function")
        fields = function if isinstance(function, dict) else {}
        carries_nothing = (
            call.get("id") is None and fields.get("name") is None and fields.get("arguments") is None
        )
        if carries_nothing and (function is None or isinstance(function, dict)):
            raise InvalidProviderChunk(f"{path} carries no id, function.name or function.arguments")
        if call.get("index") is None and call.get("id") is not None and not self.strict:
            call["index"] = self.calls_without_index  # a whole call: its position among the calls
            self.calls_without_index += 1
            return True
        return False

    def _finish_order(self, finish_reason: object, delta: dict[str, object]) -> None:
        """No content after the finish reason, and a finish reason that does not change."""
        content = delta.get("content")
        tool_calls = delta.get("tool_calls")
        if self.finish_reason is not None and (
            (isinstance(content, str) and content) or (isinstance(tool_calls, list) and tool_calls)
        ):
            raise InvalidProviderChunk(f"content arrived after finish_reason {self.finish_reason!r}")
        if finish_reason is not None:
            if self.finish_reason not in (None, finish_reason):
                raise InvalidProviderChunk(
                    f"finish_reason changed from {self.finish_reason!r} to {finish_reason!r}"
                )
            self.finish_reason = finish_reason
