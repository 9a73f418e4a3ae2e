"""Steppers for the notebooks: the adapter's state machine and the SSE line buffer, one step at a time.

* :class:`PartialStepper` — ``PartialStepper(chunks, events, title)``: the ProviderChunks fed to an
  adapter and the ModelEvents it emitted. Each step shows the chunk read (with its Provider
  ``index``), the event emitted, the ``tool_buffers`` view (Provider index → id, name, raw
  arguments, content_index) and the partial's content with the changed slot highlighted.
  ``await PartialStepper.replay(chunks, title)`` runs the chunks through an adapter first.
* :class:`SSEBufferStepper` — ``SSEBufferStepper(reads, title)``: network reads (``bytes``) fed to
  the course's :class:`~pi_course.sse.SSEDecoder`; each step shows the buffer after the append
  (line ends as ``↵``, the blank line as a 空行 badge, this read underlined), the lines taken out,
  the payloads dispatched and ``decoder.pending``. ``SSEBufferStepper.mainline()``: ten reads.

The pieces: :mod:`.partial_model` and :mod:`.sse_model` (typed steps, no widgets),
:mod:`.partial_view` and :mod:`.sse_view` (HTML and text), :mod:`.markup` (the HTML kit) and
:mod:`.stepper` (the ipywidgets shell: Play, ◀, slider, ▶, pages).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..chapter.wire import mainline_sse_reads
from .lesson import StepNotDone
from .markup import CHANGED, CURRENT, MISSING, SIZERS_END, STYLE
from .partial_model import PartialStep, build_partial_steps, pair_events, provider_index_slots, replay
from .partial_view import partial_lines, partial_pages, partial_static
from .sse_model import DecoderFailure, ReadStep, SSETrace, trace_reads, trace_responses
from .sse_view import failure_html, sse_lines, sse_pages, sse_static
from .stepper import LIVE_NOTE, Stepper

__all__ = [
    "CHANGED",
    "CURRENT",
    "LIVE_NOTE",
    "MISSING",
    "SIZERS_END",
    "STYLE",
    "DecoderFailure",
    "PartialStep",
    "PartialStepper",
    "ReadStep",
    "SSEBufferStepper",
    "SSETrace",
    "pair_events",
    "provider_index_slots",
    "trace_reads",
]


class PartialStepper(Stepper):
    """Step through an adapter run: chunk read, event emitted, tool_buffers, partial content.

    ``chunks`` are the ProviderChunks fed to the adapter, in order; ``events`` the ModelEvents it
    emitted. ``positions`` (optional) gives, per event, the 0-based index of the chunk the adapter
    had read when it emitted that event (``-1`` before any, ``len(chunks)`` after the transport
    ended); without it the pairing is inferred from the order (see :func:`pair_events`).
    ``slots`` (optional, Provider index → content slot) names slots no event reported, marked
    ``*``: an adapter that fails on its first write to a slot emits no event naming it. Pass
    05-5's measured ``experiment.slots``, or ``provider_index_slots(chunks)`` for an adapter
    edited to ``content_index = chunk.index``; the step that fails then shows the telling slot
    (``content[4]`` while content has one slot), like an event naming slot 4 would.
    Chunks and events are read by their ``type`` and field names only, so events from any copy of
    the course package (a learner's practice copy, a scratch copy with a broken adapter) work.
    """

    kind = "partial-stepper"

    def __init__(
        self,
        chunks: Sequence[object],
        events: Sequence[Any],
        title: str = "partial 快照",
        *,
        positions: Sequence[int] | None = None,
        slots: Mapping[int, int] | None = None,
    ) -> None:
        chunks, events = list(chunks), list(events)
        if positions is None:
            positions = pair_events(chunks, events)
        self.steps: list[PartialStep]
        self.steps, self.unread = build_partial_steps(chunks, events, positions, slots)
        pages = partial_pages(self.steps, self.unread)
        lines = partial_lines(self.steps, self.unread)
        super().__init__(title, pages, lines, partial_static(self.steps, self.unread))

    @classmethod
    async def replay(
        cls,
        chunks: Sequence[object],
        title: str = "partial 快照",
        *,
        model: Callable[[Any], Any] | None = None,
        slots: Mapping[int, int] | None = None,
    ) -> PartialStepper:
        """Run ``chunks`` through an adapter and record which chunk each event answered.

        ``model(transport)`` builds the adapter around the recording transport; by default the
        course's :class:`~pi_course.adapter.OpenAICompatibleModel` (the learner's own in a
        practice copy). ``slots`` as for the constructor.
        """
        events, positions = await replay(chunks, model)
        return cls(chunks, events, title, positions=positions, slots=slots)


class SSEBufferStepper(Stepper):
    """Step through network reads: the buffer after the append, the lines, the payloads, the rest.

    ``reads`` are the ``bytes`` of one response body in the order the network delivered them,
    fed to the course's :class:`~pi_course.sse.SSEDecoder`, the learner's in a practice copy. A
    decoder that is still the practice stub raises :class:`~.lesson.StepNotDone` (the notebook's
    handler names step 5.3 in one line, then shows 预期输出); a decoder that raises on a later
    read is shown up to there, and one line says what it raised.
    ``SSEBufferStepper.mainline()`` uses :func:`mainline_sse_reads` (two responses, ten reads).
    """

    kind = "sse-stepper"
    unit = "次读取"

    def __init__(self, reads: Sequence[bytes], title: str = "SSE 行缓冲区") -> None:
        self._show(trace_reads(list(reads)), title)

    @classmethod
    def mainline(cls, title: str = "主线的 SSE 字节流：十次读取") -> SSEBufferStepper:
        """The mainline's two responses in ten reads (see :func:`mainline_sse_reads`)."""
        stepper = cls.__new__(cls)
        stepper._show(trace_responses(mainline_sse_reads()), title)
        return stepper

    def _show(self, trace: SSETrace, title: str) -> None:
        failure = trace.failure
        if failure is not None and failure.step is not None and not trace.reads:
            # A practice stub: begin()'s handler prints the step in one line, then 预期输出.
            raise StepNotDone(failure.message)
        self.trace = trace
        self.reads: list[ReadStep] = list(trace.reads)
        notice = failure_html(failure) if failure is not None else ""
        Stepper.__init__(
            self,
            title,
            sse_pages(self.reads, failure),
            sse_lines(self.reads, failure),
            sse_static(self.reads, failure),
            first=1,
            notice=notice,
        )
