"""Given code, not the lesson: each SSE payload read before the chapter's validator sees it.

In both modes: ``[DONE]`` with spaces, in-stream ``error`` payloads, refusals, choice index 0 only,
tool call ``type`` and empty fragments, nothing after the finish reason, the usage sent noted so an
error keeps it, and what was set aside (reasoning text, citations, thinking parts) kept in a
:class:`SetAside` and logged once per stream at INFO on ``pi_course.reading`` (the record carries
it as ``record.set_aside``). Reading provider quirks (``strict=False``, what ``connect()`` uses for
a real provider) also reads what the provider meant: a finish reason without ``delta``, whole tool
calls without ``index``, array ``content``, a ``content_filter`` finish (an error saying so, the
partial kept), an ``n > 1`` stream (choice 0 read, the others set aside); it skips payloads with
nothing readable (annotations).
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import AsyncIterable, AsyncIterator, Callable

from pi_course_here import in_a_tab

from .seam import MAX_SAFE_INTEGER, InvalidProviderChunk, UsageSent
from .stream_rules import SSEEvent

logger = logging.getLogger("pi_course.reading")

DONE = "[DONE]"
USAGE_FIELDS = (("prompt_tokens", "input"), ("completion_tokens", "output"), ("total_tokens", "total_tokens"))
# Keys of a choice without delta that carry nothing the course reads (content-filter annotations).
ANNOTATION_KEYS = frozenset(
    {"index", "finish_reason", "logprobs", "content_filter_results", "content_filter_offsets"}
)
# Keys of a payload with empty choices that mark it as an annotation (Azure, OpenAI moderation).
PAYLOAD_ANNOTATIONS = ("prompt_filter_results", "prompt_annotations", "moderation")
READS_IT = "strict=False, which connect() uses for real providers, reads it"  # the public name
ANNOTATION_REJECTION = f"choices[0].delta must be an object (a content-filter annotation: {READS_IT})"
# Text fields of a delta the reader ignores: their characters are counted and reported.
IGNORED_TEXT = ("reasoning_content", "reasoning")
TEXT_DELTA_KEYS = frozenset({"content", "role"})  # a delta that :func:`only_text` lets through


class ProviderError(Exception):
    """The provider reported an error inside the stream (a payload with an ``error`` field)."""


class ProviderFiltered(ProviderError):
    """The provider's content filter stopped the answer (``finish_reason: "content_filter"``)."""

    def __init__(self) -> None:
        super().__init__(
            'The provider\'s content filter stopped the answer (finish_reason "content_filter"); '
            "the text received before it is kept"
        )


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

# A compiled JSON parser (pydantic's; openai-python uses it too). Not looked for in the browser
# edition, whose site leaves it out (the dependency's marker in pyproject.toml).
from_json: Callable[..., object] | None = None
if not in_a_tab():
    with contextlib.suppress(ImportError):
        from jiter import from_json

# json.loads's own C scanner (json.loads = a Python wrapper around it); it keeps no state between calls.
_scan_once: Callable[[str, int], tuple[object, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


def _parse_fast(data: str) -> object:
    """The parse of a payload that is one JSON value and nothing else; ValueError for anything else."""
    if from_json is not None:
        return from_json(data.encode(), cache_mode=False)  # a lone surrogate cannot encode: ValueError
    try:
        value, end = _scan_once(data, 0)
    except StopIteration:
        raise ValueError(data) from None
    if end != len(data):
        raise ValueError(data)
    return value


def load_payload(data: str) -> object:
    """``json.loads(data)``, with jiter's parser where it is installed, else json's C scanner directly.

    A speed trick (``make bench`` section 4): json.loads costs nearly three times jiter's parse of a
    short payload. What the fast parse refuses goes to json.loads: the result or the error is json.loads's.
    """
    try:
        return _parse_fast(data)
    except ValueError:
        return json.loads(data)


class ParsedData(str):
    """An event's data that carries the object the reading parsed from it (``payload``).

    A speed trick: ``parse_json`` returns that object instead of parsing the text again (JSON
    parsing is the largest single cost of a streamed token; ``make bench`` section 4).
    """

    payload: object


def parse_json(data: str) -> object:
    """``json.loads`` for one payload; text that is not JSON is an invalid provider chunk."""
    if type(data) is ParsedData:
        return data.payload
    try:
        return load_payload(data)
    except ValueError:
        pass
    raise InvalidProviderChunk("data is not valid JSON")


def only_text(payload: dict[str, object]) -> bool:
    """A payload holding only choice 0's text, no usage, error or finish reason: nothing to read.

    A speed trick (``make bench`` section 4): most payloads of a stream are this, and this check
    costs half of :meth:`PayloadReader.read`, which would find nothing in them either.
    """
    if "usage" in payload or "error" in payload or "citations" in payload:
        return False
    choices = payload.get("choices")
    if type(choices) is not list or len(choices) != 1 or type(choices[0]) is not dict:
        return False
    choice: dict[str, object] = choices[0]
    index = choice.get("index", 0)
    if type(index) is not int or index != 0 or choice.get("finish_reason") is not None:
        return False
    delta = choice.get("delta")
    return type(delta) is dict and type(delta.get("content")) is str and delta.keys() <= TEXT_DELTA_KEYS


def safe_integer(value: object) -> int | None:
    """A count or an index as a non-negative safe integer (``5.0`` is 5), or None when it is not one."""
    if type(value) is float and value.is_integer():
        value = int(value)
    return value if type(value) is int and 0 <= value <= MAX_SAFE_INTEGER else None


class SetAside:
    """What one stream's reader set aside: sizes per field, and the text of reasoning and other choices.

    Logged once when the stream ends (``record.set_aside`` is this object), so a caller that wants
    the reasoning a provider sent reads ``texts["reasoning_content"]`` (or ``"reasoning"``, ...).
    """

    def __init__(self) -> None:
        self.sizes: dict[str, int] = {}  # field → size: "reasoning_content", "citations", ...
        self.units: dict[str, str] = {}  # field → unit of its size ("chars"), when it has one
        self.texts: dict[str, str] = {}  # field → its text: "reasoning", "choices[1]", "thinking"
        self.logged = False

    def count(self, field: str, size: int, unit: str = "") -> None:
        self.sizes[field] = self.sizes.get(field, 0) + size
        if unit:
            self.units[field] = unit

    def keep(self, field: str, text: str) -> None:
        """Keep a text field's characters (reasoning, a choice the reader does not read) and count them."""
        self.texts[field] = self.texts.get(field, "") + text
        self.count(field, len(text), "chars")

    def at_least(self, field: str, size: int) -> None:
        """For a field every payload repeats in full (Perplexity's citations): its largest size."""
        self.sizes[field] = max(self.sizes.get(field, 0), size)

    def reasoning(self) -> str:
        """The reasoning text the provider sent, whichever field carried it (empty when none)."""
        return "".join(self.texts.get(field, "") for field in (*IGNORED_TEXT, "thinking"))

    def shown(self, limit: int = 2000) -> list[str]:
        """The texts set aside, as lines (``chat`` prints them), reasoning first, each cut at ``limit``."""
        lines = []
        fields = sorted(self.texts, key=lambda field: not field.startswith(("reason", "think")))
        for field, text in ((field, self.texts[field]) for field in fields):
            cut = text if len(text) <= limit else f"{text[:limit]}… ({len(text):,} chars in all)"
            lines.append(f"  set aside, {field}: {cut}")
        return lines

    def summary(self) -> str:
        """``reasoning_content: 1,234 chars; citations: 5`` (empty when nothing was set aside)."""
        parts = []
        for field, size in self.sizes.items():
            unit = self.units.get(field)
            parts.append(f"{field}: {size:,}{' ' + unit if unit else ''}")
        return "; ".join(parts)

    def log(self) -> None:
        """Log the summary once (INFO, the record's ``set_aside`` is this object); later calls do nothing."""
        if self.sizes and not self.logged:
            self.logged = True
            logger.info("the reader ignored %s", self.summary(), extra={"set_aside": self})


# --- the reading of each payload ------------------------------------------------------------------


class PayloadReader:
    """Reads one stream's SSE events before the chapter's validator (see the module docstring)."""

    def __init__(self, *, read_quirks: bool = False, usage_sent: UsageSent | None = None) -> None:
        self.read_quirks = read_quirks
        self.usage_sent = usage_sent if usage_sent is not None else UsageSent()
        self.ignored = SetAside()
        self.refusal = ""
        self.filtered = False
        self.finish_reason: object = None
        self.calls_without_index = 0

    async def events(self, events: AsyncIterable[SSEEvent]) -> AsyncIterator[SSEEvent]:
        """The events the chapter's reader gets: [DONE] exact, annotations skipped, payloads read.

        However the stream ends, the fields the reader ignored are logged once.
        """
        try:
            async for event in events:
                data = event.data
                if data == DONE or (len(data) < 20 and data.strip() == DONE):  # no copy of every payload
                    self.end()
                    self.ignored.log()
                    yield event if data == DONE else SSEEvent(DONE, event.event, event.id)
                    continue
                try:
                    payload = load_payload(data)
                except ValueError:
                    yield event  # the chapter's reader says it is not JSON
                    continue
                if type(payload) is not dict or (self.finish_reason is None and only_text(payload)):
                    changed: bool | None = False
                else:
                    changed = self.read(payload)
                if changed is None:
                    continue  # an annotation: nothing the course reads
                text = ParsedData(json.dumps(payload, ensure_ascii=False) if changed else data)
                text.payload = payload
                yield SSEEvent(text, event.event, event.id)
            self.end()
        finally:
            self.ignored.log()

    def end(self) -> None:
        """The stream is over: a collected refusal, or a content filter's finish, ends it now."""
        if self.refusal:
            refusal, self.refusal = self.refusal, ""
            raise ProviderRefusal(refusal)
        if self.filtered:
            self.filtered = False
            raise ProviderFiltered()

    def read(self, payload: dict[str, object]) -> bool | None:
        """Read one payload in place: True when changed, None when it is to be skipped."""
        usage = payload.get("usage")
        if isinstance(usage, dict):
            self._note_usage(usage)
        citations = payload.get("citations")
        if isinstance(citations, list):
            self.ignored.at_least("citations", len(citations))
        if payload.get("error") is not None:
            raise ProviderError(provider_error_message(payload["error"]))
        choices = payload.get("choices")
        if not isinstance(choices, list):
            return False  # the chapter's reader names it
        if not choices:
            if payload.get("usage") is None:
                return self._annotation(payload, "choices is empty and the payload carries no usage")
            return False
        if self.read_quirks and (len(choices) > 1 or _index_of(choices[0]) not in (0, None, -1)):
            kept = self._other_choices(payload, choices)
            if kept is None:
                return None  # only other choices: set aside
            choices, changed = kept, True
        else:
            changed = False
        if len(choices) != 1 or not isinstance(choices[0], dict):
            return changed
        choice: dict[str, object] = choices[0]
        index = choice.get("index", 0)
        if type(index) is not int or index != 0:  # only choice 0 is read: check why not
            index = safe_integer(choice["index"])
            if index is None:
                raise InvalidProviderChunk("choices[0].index must be a non-negative safe integer")
            if index != 0:
                raise InvalidProviderChunk("choices[0].index must be 0: only the first choice is read")
        delta = choice.get("delta")
        if delta is None:
            if choice.get("finish_reason") is None:
                return self._choice_without_delta(choice)
            if not self.read_quirks:
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
        if finish_reason == "content_filter" and self.read_quirks:
            self.filtered = True  # the stream ends in an error saying so, after any usage still to come
            choice["finish_reason"] = None
            changed = True
        return changed

    def _other_choices(self, payload: dict[str, object], choices: list[object]) -> list[object] | None:
        """An ``n > 1`` stream: choices other than 0 set aside (their text kept); None if none is left."""
        kept: list[object] = []
        for position, choice in enumerate(choices):
            index = _index_of(choice)
            if index in (0, None):
                kept.append(choice)
                continue
            if index == -1 or not isinstance(choice, dict):
                raise InvalidProviderChunk(f"choices[{position}].index must be a non-negative safe integer")
            delta = choice.get("delta")
            content = delta.get("content") if isinstance(delta, dict) else None
            self.ignored.keep(f"choices[{index}]", content if isinstance(content, str) else "")
        payload["choices"] = kept
        return kept if kept or payload.get("usage") is not None else None

    def _note_usage(self, usage: dict[str, object]) -> None:
        for wire, name in USAGE_FIELDS:
            count = safe_integer(usage.get(wire))
            if count is not None:
                self.usage_sent.counts[name] = count

    def _annotation(self, payload: dict[str, object], rejection: str) -> bool | None:
        """A payload with nothing the course reads: skipped when reading quirks, else rejected with a hint."""
        if not self.read_quirks:
            marks = [key for key in PAYLOAD_ANNOTATIONS if key in payload]
            if marks:
                raise InvalidProviderChunk(f"{rejection} (it carries {', '.join(marks)}: {READS_IT})")
            return False  # the chapter's reader rejects it
        self.ignored.count("skipped payloads", 1)
        return None

    def _choice_without_delta(self, choice: dict[str, object]) -> bool | None:
        if not self.read_quirks:
            if "content_filter_results" in choice:
                raise InvalidProviderChunk(ANNOTATION_REJECTION)
            return False  # the chapter's reader rejects it
        unknown = [key for key, value in choice.items() if value is not None and key not in ANNOTATION_KEYS]
        if unknown:
            raise InvalidProviderChunk(
                f"choices[0].{unknown[0]} is not a field the reader knows, and the choice has no delta"
            )
        self.ignored.count("skipped payloads", 1)
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
                self.ignored.keep(field, value)
        content = delta.get("content")
        if isinstance(content, list) and self.read_quirks:
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
            elif kind == "thinking" and isinstance(part, dict):
                self.ignored.count("thinking parts", 1)
                thought = _thinking_text(part.get("thinking"))
                if thought:
                    self.ignored.texts["thinking"] = self.ignored.texts.get("thinking", "") + thought
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
        if call.get("index") is None and call.get("id") is not None and self.read_quirks:
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


def _index_of(choice: object) -> int | None:
    """A choice's ``index``: None when absent, -1 when it is not a non-negative safe integer."""
    if not isinstance(choice, dict) or choice.get("index") is None:
        return None
    index = safe_integer(choice["index"])
    return -1 if index is None else index


def _thinking_text(thinking: object) -> str:
    """The text of a thinking part (Mistral: a string, or a list of text parts)."""
    if isinstance(thinking, str):
        return thinking
    if isinstance(thinking, list):
        return "".join(
            part["text"] for part in thinking if isinstance(part, dict) and isinstance(part.get("text"), str)
        )
    return ""
