from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import aclosing, asynccontextmanager
from typing import Any

import httpx

from .protocol import AbortError, AbortSignal, json_stringify
from .seam import ProviderChunk, ProviderRequest, carry_usage_sent, usage_sent_by
from .sse import iter_sse_events
from .stream_rules import AbortRace
from .transport import (  # given in this module
    REDACTED,
    ProviderTransportError,
    _check_response,
    _describe,
)


class _Secret:
    def redact(self, message: str) -> str:
        """Lab 5.4: Replace every occurrence of the key in ``message`` with ``[redacted]``."""
        if not self._value:  # an empty key occurs "everywhere": there is nothing to hide
            return message
        return message.replace(self._value, REDACTED)


def chat_completions_url(base_url: str) -> str:
    """Lab 5.4: ``base_url`` without trailing slashes + ``/chat/completions``; must be absolute http(s)."""
    endpoint = base_url.rstrip("/") + "/chat/completions"
    problem = (
        f"base_url must be an absolute http(s) URL such as 'https://api.openai.com/v1', got {base_url!r}"
    )
    try:
        parsed = httpx.URL(endpoint)
    except httpx.InvalidURL as error:
        raise ValueError(problem) from error
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise ValueError(problem)
    return endpoint


class OpenAICompatibleTransport:
    def _headers(self) -> dict[str, str]:
        """Lab 5.4: Accept SSE, send JSON, and the key as a Bearer token (the only place it goes)."""
        return {
            "Accept": "text/event-stream",
            "Authorization": f"Bearer {self._key.reveal()}",
            "Content-Type": "application/json",
        }

    def request_body(self, request: ProviderRequest) -> dict[str, Any]:
        """Lab 5.4: The request plus ``stream: true`` and ``stream_options.include_usage``."""
        return {**request, "stream": True, "stream_options": {"include_usage": True}}

    async def stream(
        self, request: ProviderRequest, *, signal: AbortSignal | None = None
    ) -> AsyncIterator[ProviderChunk]:
        """Lab 5.3: _reads → iter_sse_events → self.read_chunks; AbortError kept, others redacted."""
        failure: Exception
        try:
            async with (
                self._reads(request, signal) as reads,
                aclosing(iter_sse_events(reads)) as events,
                aclosing(self.read_chunks(events)) as chunks,
            ):
                async for chunk in chunks:
                    yield chunk
            return
        except AbortError:
            raise  # cancellation keeps its name: the adapter ends in "aborted"
        except Exception as error:
            failure = error
        # Raised outside the except block on purpose: no __context__/__cause__, so no traceback
        # or error chain can carry the original (unredacted) text.
        raise self._sanitized(failure)

    def _sanitized(self, error: Exception) -> ProviderTransportError:
        sanitized = ProviderTransportError(self._key.redact(_describe(error)))
        carried = usage_sent_by(error)
        if carried is not None:
            carry_usage_sent(sanitized, carried)
        return sanitized

    @asynccontextmanager
    async def _reads(
        self, request: ProviderRequest, signal: AbortSignal | None
    ) -> AsyncIterator[AsyncIterator[bytes]]:
        """Lab 5.3: Send with the signal raced by AbortRace, _check_response, hand out raced body reads."""
        if signal is not None and signal.aborted:
            raise AbortError()  # nothing is sent for a request cancelled before it starts
        race = AbortRace(signal)
        try:
            http_request = self._client.build_request(
                "POST", self.url, headers=self._headers(), content=json_stringify(self.request_body(request))
            )
            response = await race.run(self._client.send(http_request, stream=True))
            try:
                await race.run(_check_response(response))
                async with aclosing(response.aiter_bytes()) as body, aclosing(race.iterate(body)) as reads:
                    yield reads
            finally:
                await response.aclose()  # normal end, parse error and abort all close here
        finally:
            race.close()
