from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import urlsplit

from .protocol import AbortError, AbortSignal, json_stringify
from .seam import ProviderChunk, ProviderRequest
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
        return message.replace(self._value, REDACTED) if self._value else message


def chat_completions_url(base_url: str) -> str:
    """Lab 5.4: ``base_url`` without trailing slashes + ``/chat/completions``; must be absolute http(s)."""
    url = base_url.rstrip("/") + "/chat/completions"
    parsed = urlsplit(url)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise ValueError(
            f"base_url must be an absolute http(s) URL such as 'https://api.openai.com/v1', got {base_url!r}"
        )
    return url


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
        try:
            async with self._reads(request, signal) as reads:
                async for chunk in self.read_chunks(iter_sse_events(reads)):
                    yield chunk
            return
        except AbortError:
            raise
        except Exception as error:
            failure = self._key.redact(_describe(error))
        raise ProviderTransportError(failure)  # outside the except block: no chain back to the key

    @asynccontextmanager
    async def _reads(
        self, request: ProviderRequest, signal: AbortSignal | None
    ) -> AsyncIterator[AsyncIterator[bytes]]:
        """Lab 5.3: Send with the signal raced by AbortRace, _check_response, hand out raced body reads."""
        if signal is not None and signal.aborted:
            raise AbortError()
        race = AbortRace(signal)
        try:
            outgoing = self._client.build_request(
                "POST",
                self.url,
                headers=self._headers(),
                content=json_stringify(self.request_body(request)).encode(),
            )
            response = await race.run(self._client.send(outgoing, stream=True))
            try:
                await race.run(_check_response(response))
                yield race.iterate(response.aiter_bytes())
            finally:
                await response.aclose()
        finally:
            race.close()
