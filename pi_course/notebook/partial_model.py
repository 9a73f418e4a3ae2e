"""The adapter's run as typed steps: which chunk was read, which event came out, what the state became.

The chunks and events are read once, by their ``type`` and field names, into the small records
below (:func:`read_chunk`, :func:`read_event`): events from any copy of the course package (a
learner's practice copy, an adapter broken on purpose) work, and everything after that is typed.
:func:`build_partial_steps` derives the chapter's picture of the adapter's state (``tool_buffers``,
``text_content_index``, ``finish``, the partial's content) from the chunks and the events only,
never from an adapter's internals. No widget or HTML here: :mod:`.partial_view` draws the steps.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeAlias

# --- what the adapter read: ProviderChunks ------------------------------------------------------


@dataclass(frozen=True)
class TextRead:
    delta: str


@dataclass(frozen=True)
class ToolRead:
    index: int
    id: str | None
    name: str | None
    arguments_delta: str | None


@dataclass(frozen=True)
class FinishRead:
    reason: str
    usage: tuple[int, int] | None  # (input, output) when the chunk carried usage


@dataclass(frozen=True)
class OtherRead:
    """Anything else in a fixture: an exception the transport raises there, say."""

    label: str  # the type's name
    text: str


ChunkRecord: TypeAlias = TextRead | ToolRead | FinishRead | OtherRead


def _field(obj: object, name: str) -> Any:
    """A field read by name: a copy of the package has the same fields, not the same classes."""
    return getattr(obj, name, None)


def _usage(usage: object) -> tuple[int, int] | None:
    if usage is None:
        return None
    return int(_field(usage, "input") or 0), int(_field(usage, "output") or 0)


def read_chunk(chunk: object) -> ChunkRecord:
    """One ProviderChunk (or whatever a fixture holds in its place) as a typed record."""
    kind = _field(chunk, "type")
    if kind == "text":
        return TextRead(str(_field(chunk, "delta") or ""))
    if kind == "tool" and isinstance(_field(chunk, "index"), int):
        fields = [_field(chunk, name) for name in ("id", "name", "arguments_delta")]
        return ToolRead(_field(chunk, "index"), *(None if f is None else str(f) for f in fields))
    if kind == "finish":
        return FinishRead(str(_field(chunk, "reason")), _usage(_field(chunk, "usage")))
    return OtherRead(type(chunk).__name__, str(chunk))


# --- what the adapter emitted: ModelEvents and their content ----------------------------------


@dataclass(frozen=True)
class TextBlock:
    text: str


@dataclass(frozen=True)
class ToolCallBlock:
    id: str
    name: str
    arguments: object  # the raw text while streaming, the parsed value after toolcall_end
    raw_arguments: str | None


@dataclass(frozen=True)
class OtherBlock:
    kind: str
    text: str


Block: TypeAlias = TextBlock | ToolCallBlock | OtherBlock

SLOT_EVENTS = ("text_delta", "toolcall_delta", "toolcall_end")


@dataclass(frozen=True)
class EventRecord:
    """One ModelEvent: its kind, the slot it names, and the content its snapshot holds."""

    kind: str
    content_index: int | None = None  # text_delta, toolcall_delta, toolcall_end
    delta: str | None = None  # text_delta, toolcall_delta
    tool_name: str | None = None  # toolcall_end
    arguments: object = None  # toolcall_end: the parsed arguments
    reason: str | None = None  # done, error
    error_message: str | None = None  # error
    content: tuple[Block, ...] | None = None  # the partial (or the final message's) content

    @property
    def terminal(self) -> bool:
        return self.kind in ("done", "error")


def read_block(block: object) -> Block:
    kind = _field(block, "type")
    if kind == "text":
        return TextBlock(str(_field(block, "text") or ""))
    if kind == "toolCall":
        raw = _field(block, "raw_arguments")
        return ToolCallBlock(
            str(_field(block, "id") or ""),
            str(_field(block, "name") or ""),
            _field(block, "arguments"),
            None if raw is None else str(raw),
        )
    return OtherBlock(str(kind), str(block))


def read_event(event: object) -> EventRecord:
    """One ModelEvent as a typed record (the snapshot it carries: partial, message or error)."""
    kind = str(_field(event, "type"))
    holder = _field(event, "message" if kind == "done" else "error" if kind == "error" else "partial")
    if holder is None:
        holder = _field(event, "partial")
    blocks = _field(holder, "content")
    content = None if blocks is None else tuple(read_block(block) for block in blocks)
    slot = _field(event, "content_index") if kind in SLOT_EVENTS else None
    call = _field(event, "tool_call")
    return EventRecord(
        kind=kind,
        content_index=slot if isinstance(slot, int) else None,
        delta=_field(event, "delta"),
        tool_name=_field(call, "name"),
        arguments=_field(call, "arguments"),
        reason=_field(event, "reason"),
        error_message=_field(_field(event, "error"), "error_message") if kind == "error" else None,
        content=content,
    )


# --- pairing events with chunks -----------------------------------------------------------------


def pair_events(chunks: Sequence[object], events: Sequence[object]) -> list[int]:
    """For each event, the 0-based index of the chunk the adapter had read when it emitted it.

    ``-1`` means before any chunk, ``len(chunks)`` after the transport ended. Inferred from the
    order alone: each delta event answers the next chunk of its kind (a chunk skipped on the way,
    such as ``finish``, produced no event); ``toolcall_end`` and ``done`` come after the stream;
    an ``error`` answers the next unread chunk if there is one. :func:`replay` records the real
    positions instead.
    """
    kinds = [_field(chunk, "type") for chunk in chunks]
    positions: list[int] = []
    nxt = 0  # the next chunk not yet paired
    for event in events:
        kind = _field(event, "type")
        if kind == "start":
            positions.append(-1)
        elif kind in ("text_delta", "toolcall_delta"):
            want = "text" if kind == "text_delta" else "tool"
            probe = nxt
            while probe < len(chunks) and kinds[probe] != want:
                probe += 1
            if probe < len(chunks):
                positions.append(probe)
                nxt = probe + 1
            else:
                positions.append(max(nxt - 1, -1))
        elif kind == "error" and nxt < len(chunks):
            positions.append(nxt)
            nxt += 1
        else:
            positions.append(len(chunks))
            nxt = len(chunks)
    return positions


class _RecordingTransport:
    """A fixed transport that remembers how far the adapter has read."""

    def __init__(self, chunks: list[object]) -> None:
        self.chunks = chunks
        self.position = -1
        self.requests: list[object] = []

    async def stream(self, request: object, *, signal: object = None) -> AsyncIterator[Any]:
        self.requests.append(request)
        for index, chunk in enumerate(self.chunks):
            self.position = index
            if isinstance(chunk, BaseException):
                raise chunk
            yield chunk
        self.position = len(self.chunks)


async def replay(
    chunks: Sequence[object], model: Callable[[Any], Any] | None = None
) -> tuple[list[object], list[int]]:
    """Run ``chunks`` through an adapter: its events, and the chunk each one answered.

    ``model(transport)`` builds the adapter around the recording transport; by default the
    course's :class:`~pi_course.adapter.OpenAICompatibleModel` (the learner's own in a copy).
    """
    from ..protocol import AgentContext

    recorder = _RecordingTransport(list(chunks))
    if model is None:
        from ..adapter import OpenAICompatibleModel

        adapter: Any = OpenAICompatibleModel(provider="fixture", model="fixture", transport=recorder)
    else:
        adapter = model(recorder)
    events: list[object] = []
    positions: list[int] = []
    async for event in adapter.stream(AgentContext(())):
        events.append(event)
        positions.append(recorder.position)
    return events, positions


# --- the steps ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ToolBufferState:
    """The tool_buffers entry of one Provider index, derived from chunks and events."""

    provider_index: int
    id: str = ""
    name: str = ""
    raw_arguments: str = ""
    content_index: int | None = None
    parsed: bool = False
    arguments: object = None
    slot_from_outside: bool = False  # content_index came from ``slots``, not from an event


@dataclass(frozen=True)
class PartialStep:
    """One step: the chunk read (if any), the event emitted (if any) and the state after it."""

    number: int
    chunk_number: int | None  # 1-based; None before the first chunk and after the stream ended
    chunk: ChunkRecord | None
    event: EventRecord | None
    after_end: bool = False
    repeat_chunk: bool = False  # the same chunk as the step before (a second event for it)
    buffers: tuple[ToolBufferState, ...] = ()
    touched_buffer: int | None = None  # Provider index whose buffer this step changed
    text_content_index: int | None = None
    finish: FinishRead | None = None
    content: tuple[Block, ...] = ()
    parsed_slots: frozenset[int] = frozenset()
    changed_slot: int | None = None
    new_slots: frozenset[int] = frozenset()  # slots content did not have before this step
    chunk_ids: frozenset[str] = frozenset()  # tool-call ids the chunks have sent so far

    @property
    def missing_slot(self) -> int | None:
        """The slot this step names (by its event, or by the buffer that failed) beyond content."""
        slot = self.changed_slot
        return slot if slot is not None and slot >= len(self.content) else None

    @property
    def missing_from_buffer(self) -> bool:
        """The missing slot is the one tool_buffers recorded for a chunk that ended the stream."""
        return self.missing_slot is not None and self.event is not None and self.event.kind == "error"

    def buffer(self, provider_index: int | None) -> ToolBufferState | None:
        return next((b for b in self.buffers if b.provider_index == provider_index), None)

    def made_up_id(self, block: Block) -> bool:
        """A tool call whose id no chunk sent: the adapter made it up (a placeholder, say)."""
        return isinstance(block, ToolCallBlock) and bool(block.id) and block.id not in self.chunk_ids

    def is_parsed(self, slot: int) -> bool:
        """A tool call's arguments count as parsed only after its toolcall_end, and only if not text."""
        block = self.content[slot]
        return (
            isinstance(block, ToolCallBlock)
            and slot in self.parsed_slots
            and not isinstance(block.arguments, str)
        )


_END = -2  # position of an event emitted after the transport ended


@dataclass(frozen=True)
class _Raw:
    chunk_index: int | None
    event: EventRecord | None
    after_end: bool = False
    repeat: bool = False


def _schedule(count: int, events: Sequence[EventRecord], positions: Sequence[int]) -> tuple[list[_Raw], int]:
    """Steps in order (a chunk read with no event gets its own step) and the last chunk shown."""
    raw: list[_Raw] = []
    shown = -1
    for event, position in zip(events, positions, strict=True):
        if position < 0 and position != _END:
            raw.append(_Raw(None, event))
            continue
        stop = count if position in (_END, count) or position > count else position
        raw += [_Raw(index, None) for index in range(shown + 1, stop)]
        shown = max(shown, stop - 1)
        if stop == count:
            raw.append(_Raw(None, event, after_end=True))
        else:
            raw.append(_Raw(position, event, repeat=position <= shown))
            shown = max(shown, position)
    return raw, shown


def build_partial_steps(
    chunks: Sequence[object],
    events: Sequence[object],
    positions: Sequence[int],
    slots: Mapping[int, int] | None = None,
) -> tuple[list[PartialStep], list[int]]:
    """Typed steps from chunks, events and positions, and the chunks never read (0-based).

    ``slots`` (Provider index → content slot) fills in a buffer's content_index that no event
    reported — an adapter that fails on its first write to the slot emits none.
    """
    records = [read_chunk(chunk) for chunk in chunks]
    raw, shown = _schedule(len(records), [read_event(event) for event in events], positions)
    steps: list[PartialStep] = []
    buffers: dict[int, ToolBufferState] = {}
    state = PartialStep(0, None, None, None)
    ids: set[str] = set()
    outside = dict(slots or {})
    for number, item in enumerate(raw):
        chunk = None if item.chunk_index is None else records[item.chunk_index]
        event = item.event
        kind = event.kind if event is not None else None
        slot = event.content_index if event is not None else None
        touched: int | None = None
        finish = state.finish
        if chunk is not None and not item.repeat:
            if isinstance(chunk, FinishRead):
                finish = chunk
            elif isinstance(chunk, ToolRead):
                touched = chunk.index
                buffer = buffers.get(chunk.index) or ToolBufferState(chunk.index)
                if chunk.id:
                    ids.add(chunk.id)
                buffer = replace(
                    buffer,
                    id=chunk.id or buffer.id,
                    name=chunk.name or buffer.name,
                    raw_arguments=buffer.raw_arguments + (chunk.arguments_delta or ""),
                )
                if kind == "toolcall_delta" and (buffer.content_index is None or buffer.slot_from_outside):
                    buffer = replace(buffer, content_index=slot, slot_from_outside=False)
                elif buffer.content_index is None and chunk.index in outside:
                    buffer = replace(buffer, content_index=outside[chunk.index], slot_from_outside=True)
                buffers[chunk.index] = buffer
        text_index = state.text_content_index
        if kind == "text_delta" and text_index is None:
            text_index = slot
        parsed = set(state.parsed_slots)
        if kind == "toolcall_end" and slot is not None and event is not None:
            parsed.add(slot)
            for index, buffer in buffers.items():
                if buffer.content_index == slot:
                    buffers[index] = replace(buffer, parsed=True, arguments=event.arguments)
                    touched = index
        content = state.content
        if event is not None and event.content is not None:
            content = event.content
        changed = slot
        if kind == "error" and touched is not None:
            # The stream failed on this tool chunk: if its slot is beyond content, show that.
            wanted = buffers[touched].content_index
            if wanted is not None and wanted >= len(content):
                changed = wanted
        state = PartialStep(
            number=number,
            chunk_number=None if item.chunk_index is None else item.chunk_index + 1,
            chunk=chunk,
            event=event,
            after_end=item.after_end,
            repeat_chunk=item.repeat,
            buffers=tuple(buffers.values()),
            touched_buffer=touched,
            text_content_index=text_index,
            finish=finish,
            content=content,
            parsed_slots=frozenset(parsed),
            changed_slot=changed,
            new_slots=frozenset(range(len(state.content), len(content))),
            chunk_ids=frozenset(ids),
        )
        steps.append(state)
    return steps, list(range(shown + 1, len(records)))


def provider_index_slots(chunks: Sequence[object]) -> dict[int, int]:
    """Each tool's Provider index as its own content slot: the chapter's deliberate bug.

    For ``PartialStepper(..., slots=...)`` when the adapter was edited to ``content_index =
    chunk.index`` and fails on its first write, before any event names the slot.
    """
    return {record.index: record.index for record in map(read_chunk, chunks) if isinstance(record, ToolRead)}
