"""Network reads through the course's own :class:`~pi_course.sse.SSEDecoder`, one read at a time.

The decoder drives everything: before and after each ``feed(read)`` the trace takes its
``pending`` (the line still arriving) and the events it dispatched. The text a read appended is
what the given :class:`~pi_course.stream_rules.SSETextDecoder` makes of those bytes (the same given code the
decoder calls), so the complete lines taken out are the buffer minus what the decoder kept. In a
practice copy the decoder is the learner's: a stub or a bug ends the trace with a
:class:`DecoderFailure` instead of an exception. No widget or HTML here: :mod:`.sse_view` draws it.
"""

from __future__ import annotations

import codecs
from collections.abc import Sequence
from dataclasses import dataclass, replace


@dataclass(frozen=True)
class ReadStep:
    """One network read, as the chapter draws the line buffer."""

    number: int
    response: int  # 1-based response number (a new response starts with a new decoder)
    data: bytes  # the bytes of this read
    carried: bytes  # bytes of a split character carried in from the previous read
    text: str  # the text this read appended to the buffer (line ends already "\n")
    held: bytes  # bytes of a character this read cut, held back by the UTF-8 decoder
    held_cr: bool  # the read ended on "\r": held back, it may be the first half of "\r\n"
    carried_cr: bool  # the previous read's held "\r" comes first
    before: str  # decoder.pending before the read
    lines: tuple[str, ...]  # complete lines taken out by this read ("" is the blank line)
    payloads: tuple[str, ...]  # data of the events the decoder dispatched on this read
    pending: str  # decoder.pending after the read: the start of the next line
    waiting: tuple[str, ...]  # data lines taken out, still waiting for their blank line
    cut_char: str = ""  # the character whose first bytes are ``held`` (known once the next read comes)
    mismatch: bool = False  # pending is not the end of the buffer: the decoder lost or made up text

    @property
    def buffer(self) -> str:
        """The buffer right after the append."""
        return self.before + self.text


@dataclass(frozen=True)
class DecoderFailure:
    """The decoder raised on read ``read``: a practice stub (``step``) or a bug."""

    read: int
    step: str | None  # "5.3" when the decoder is still the practice stub
    message: str


@dataclass(frozen=True)
class SSETrace:
    reads: tuple[ReadStep, ...]
    failure: DecoderFailure | None = None


def _taken(buffer: str, pending: str) -> tuple[tuple[str, ...], bool]:
    """The complete lines the decoder took out (the buffer minus ``pending``), and whether that fits."""
    if not buffer.endswith(pending):
        return (), True
    taken = buffer[: len(buffer) - len(pending)]
    if taken and not taken.endswith("\n"):
        return (), True
    return tuple(taken.split("\n")[:-1]), False


def _failure(number: int, error: Exception) -> DecoderFailure:
    from .lesson import missing_step

    return DecoderFailure(number, missing_step(error), f"{type(error).__name__}: {error}")


def trace_reads(reads: Sequence[bytes], *, response: int = 1, start: int = 1) -> SSETrace:
    """Feed ``reads`` to a new :class:`~pi_course.sse.SSEDecoder` and record each read."""
    try:
        from ..sse import SSEDecoder
        from ..stream_rules import SSETextDecoder

        decoder = SSEDecoder()
    except Exception as error:
        return SSETrace((), _failure(start, error))
    text_of = SSETextDecoder()  # given: what the decoder appends for these bytes
    utf8 = codecs.getincrementaldecoder("utf-8")("replace")  # only to show a cut character's bytes
    steps: list[ReadStep] = []
    waiting: list[str] = []
    carried_cr = False
    for number, chunk in enumerate(reads, start=start):
        carried = utf8.getstate()[0]
        utf8.decode(chunk)
        held = utf8.getstate()[0]
        text = text_of.decode(chunk)
        try:
            before = decoder.pending
            events = decoder.feed(chunk)
            pending = decoder.pending
        except Exception as error:
            return SSETrace(_with_cut_chars(steps), _failure(number, error))
        lines, mismatch = _taken(before + text, pending)
        for line in lines:
            if not line:
                waiting = []
            elif line.startswith("data:"):
                waiting.append(line)
        steps.append(
            ReadStep(
                number, response, bytes(chunk), carried, text, held, chunk.endswith(b"\r"), carried_cr,
                before, lines, tuple(str(event.data) for event in events), pending, tuple(waiting),
                mismatch=mismatch,
            )
        )  # fmt: skip
        carried_cr = chunk.endswith(b"\r")
    return SSETrace(_with_cut_chars(steps))


def _with_cut_chars(steps: list[ReadStep]) -> tuple[ReadStep, ...]:
    """Name the character a read cut, from the start of the next read."""
    named = list(steps)
    for index, step in enumerate(steps[:-1]):
        following = steps[index + 1]
        if step.held and following.carried == step.held and following.text:
            named[index] = replace(step, cut_char=following.text[0])
    return tuple(named)


def trace_responses(responses: Sequence[Sequence[bytes]]) -> SSETrace:
    """Several response bodies, each through its own decoder; reads numbered across them."""
    reads: list[ReadStep] = []
    for number, response in enumerate(responses, start=1):
        trace = trace_reads(response, response=number, start=len(reads) + 1)
        reads += trace.reads
        if trace.failure is not None:
            return SSETrace(tuple(reads), trace.failure)
    return SSETrace(tuple(reads))
