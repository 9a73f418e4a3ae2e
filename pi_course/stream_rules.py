"""Given code, not the lesson: the byte-stream rules chapter 05 relies on but does not teach.

The lab regions in ``sse.py`` and ``transport.py`` call these helpers: :class:`SSETextDecoder`
(UTF-8 across reads, one BOM, every line ending → ``"\\n"``), :class:`SSEFieldReader` (the
``event``/``id``/comment lines, the dispatched :class:`SSEEvent`), :func:`check_event_size` and
:class:`AbortRace` (every read races the abort signal).
"""

from __future__ import annotations

import asyncio
import codecs
from collections.abc import AsyncIterator, Awaitable
from contextlib import suppress
from typing import NamedTuple, TypeVar

from .protocol import AbortError, AbortSignal

T = TypeVar("T")

DEFAULT_MAX_EVENT_SIZE = 16 * 1024 * 1024


class SSEEvent(NamedTuple):
    """One dispatched event (a named tuple: one is built per token, so it must be cheap)."""

    data: str
    event: str = "message"
    id: str = ""


class SSEError(Exception):
    """The byte stream cannot be framed (an event larger than the configured bound)."""


class SSETextDecoder:
    """Network reads → text whose lines all end in ``"\\n"`` (UTF-8, BOM, CR, CRLF handled)."""

    def __init__(self) -> None:
        self._utf8 = codecs.getincrementaldecoder("utf-8")("replace")
        self._at_start = True
        self._held_cr = False  # a CR at the end of a read may be the first half of a CRLF

    def decode(self, chunk: bytes, *, final: bool = False) -> str:
        """The text of one read; a character or CRLF cut by the read boundary waits for the next.

        ``final=True`` at the end of input: whatever was held back is returned now.
        """
        text = self._utf8.decode(chunk, final)
        if self._at_start and text:
            self._at_start = False
            if text[0] == "\ufeff":
                text = text[1:]
        if self._held_cr:
            text = "\r" + text
            self._held_cr = False
        if "\r" in text:
            if text[-1] == "\r" and not final:
                text, self._held_cr = text[:-1], True
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        return text


class SSEFieldReader:
    """The event-stream fields besides the data lines, and the event a blank line dispatches."""

    def __init__(self) -> None:
        self.event_type = ""
        self.last_id = ""

    def read_line(self, line: str) -> str | None:
        """Read one non-blank line: ``event``, ``id``, a comment (None); a data line gives its value."""
        if line[0] == ":":
            return None  # a comment
        name, colon, value = line.partition(":")
        if colon and value[:1] == " ":
            value = value[1:]
        if name == "data":
            return value  # also a bare "data" line: ""
        if name == "event":
            self.event_type = value
        elif name == "id" and "\0" not in value:
            self.last_id = value
        return None  # retry and unknown field names are ignored

    def dispatch(self, data: list[str]) -> SSEEvent | None:
        """At a blank line: the event whose data is the data lines joined with a newline.

        ``None`` when no data line came.
        """
        event_type = self.event_type or "message"
        self.event_type = ""
        if not data:
            return None
        return SSEEvent("\n".join(data), event_type, self.last_id)


def check_event_size(pending: str, data: list[str], limit: int) -> None:
    """Raise :class:`SSEError` when the event still arriving is longer than ``limit`` characters."""
    if len(pending) + sum(map(len, data)) > limit:
        raise SSEError(f"SSE event exceeds {limit} characters without a blank line")


class AbortRace:
    """Races each awaited step against the signal, so abort() ends even a read that blocks.

    ``await race.run(step)`` raises :class:`AbortError` when the signal fires first (the step is
    cancelled); ``race.iterate(reads)`` does that for every read of an async iterator;
    ``race.close()`` releases the waiter once the request is over.
    """

    def __init__(self, signal: AbortSignal | None) -> None:
        self.signal = signal
        self._waiter: asyncio.Future[None] | None = None

    async def run(self, step: Awaitable[T]) -> T:
        if self.signal is None:
            return await step
        if self._waiter is None:
            self._waiter = asyncio.ensure_future(self.signal.wait())
        task = asyncio.ensure_future(step)
        try:
            await asyncio.wait((task, self._waiter), return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not task.done():  # the abort won, or our own task is being cancelled
                task.cancel()
                with suppress(asyncio.CancelledError, Exception):
                    await task
        if self.signal.aborted and (task.cancelled() or task.exception() is not None):
            raise AbortError()
        return task.result()

    async def iterate(self, reads: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
        """Each read of ``reads``, with the signal checked before it and again after it returns."""
        while True:
            if self.signal is not None and self.signal.aborted:
                raise AbortError()
            try:
                chunk = await self.run(anext(reads))
            except StopAsyncIteration:
                return
            if self.signal is not None and self.signal.aborted:  # aborted while the read returned
                raise AbortError()
            yield chunk

    def close(self) -> None:
        if self._waiter is not None:
            self._waiter.cancel()
