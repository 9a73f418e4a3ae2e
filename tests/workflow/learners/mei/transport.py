from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import urlsplit

from .protocol import AbortError, AbortSignal
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
        if self._value == "":
            return message  # an empty key: "".replace would put [redacted] between every character
        return message.replace(self._value, REDACTED)


def chat_completions_url(base_url: str) -> str:
    """Lab 5.4: ``base_url`` without trailing slashes + ``/chat/completions``; must be absolute http(s)."""
    base = base_url.rstrip("/")
    url = base + "/chat/completions"
    # like new URL(): it must be an absolute http(s) URL
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or parts.netloc == "":
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
        body = dict(request)
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
        return body

    async def stream(
        self, request: ProviderRequest, *, signal: AbortSignal | None = None
    ) -> AsyncIterator[ProviderChunk]:
        """Lab 5.3: _reads → iter_sse_events → self.read_chunks; AbortError kept, others redacted."""
        if signal is not None and signal.aborted:
            raise AbortError()
        problem = None
        try:
            async with self._reads(request, signal) as reads:
                async for chunk in self.read_chunks(iter_sse_events(reads)):
                    yield chunk
        except AbortError:
            raise
        except Exception as error:
            problem = error
        if problem is not None:
            # raised outside the except block, so the original error (and the key) is not chained
            raise ProviderTransportError(self._key.redact(_describe(problem)))

    @asynccontextmanager
    async def _reads(
        self, request: ProviderRequest, signal: AbortSignal | None
    ) -> AsyncIterator[AsyncIterator[bytes]]:
        """Lab 5.3: Send with the signal raced by AbortRace, _check_response, hand out raced body reads."""
        race = AbortRace(signal)
        response = None
        try:
            http_request = self._client.build_request(
                "POST",
                self.url,
                headers=self._headers(),
                content=json.dumps(
                    self.request_body(request), ensure_ascii=False, separators=(",", ":")
                ).encode("utf-8"),
            )
            response = await race.run(self._client.send(http_request, stream=True))
            await _check_response(response)
            yield race.iterate(response.aiter_bytes())
        finally:
            if response is not None:
                await response.aclose()
            race.close()
