from __future__ import annotations

import json
from collections.abc import AsyncIterable, AsyncIterator
from contextlib import asynccontextmanager
from copy import copy
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

import httpx

from .protocol import AbortError, AbortSignal
from .seam import ProviderChunk, ProviderRequest, UsageSent
from .sse import iter_provider_chunks, iter_sse_events
from .stream_rules import AbortRace, SSEEvent
from .transport import (  # given in this module
    DEFAULT_TIMEOUT,
    REDACTED,
    ProviderTransportError,
    _check_response,
    _describe,
    _shared_tls_context,
)


class _Secret:
    """Holds the key so that no repr, log line or verbose traceback's locals can show it."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def redact(self, message: str) -> str:
        """Lab 5.4: Replace every occurrence of the key in ``message`` with ``[redacted]``."""
        if self._value == "":
            return message  # an empty key: "".replace would put [redacted] between every character
        return message.replace(self._value, REDACTED)

    def __repr__(self) -> str:
        return REDACTED


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
    """POST ``{base_url}/chat/completions`` with ``stream: true`` and read the SSE reply as chunks.

    Without ``client`` it owns an ``httpx.AsyncClient`` (``aclose()`` or ``async with``).
    ``strict=False`` reads real providers' quirks before the chapter's checks.
    """

    def __init__(
        self,
        *,
        base_url: str,
        api_key: str,
        client: httpx.AsyncClient | None = None,
        strict: bool = True,
        timeout: httpx.Timeout = DEFAULT_TIMEOUT,
    ) -> None:
        self.url = chat_completions_url(base_url)
        self.strict = strict
        self._usage_sent: UsageSent | None = None  # set on the view made for one model stream
        self._key = _Secret(api_key)
        self._owns_client = client is None
        if client is None:
            client = httpx.AsyncClient(timeout=timeout, verify=_shared_tls_context())
        self._client = client

    def __repr__(self) -> str:
        return f"OpenAICompatibleTransport(url={self.url!r}, api_key={self._key!r}, strict={self.strict!r})"

    async def aclose(self) -> None:
        if self._owns_client:
            await self._client.aclose()

    async def __aenter__(self) -> OpenAICompatibleTransport:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    def reporting_to(self, sent: UsageSent) -> OpenAICompatibleTransport:
        """Given: this transport for one stream, noting in ``sent`` the usage the provider sends."""
        one_stream = copy(self)
        one_stream._usage_sent = sent
        return one_stream

    def read_chunks(self, events: AsyncIterable[SSEEvent]) -> AsyncIterator[ProviderChunk]:
        """Given: the chapter's reader (``read_provider_chunks``) after the given reading of each payload."""
        return iter_provider_chunks(events, strict=self.strict, usage_sent=self._usage_sent)

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
