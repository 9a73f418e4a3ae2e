"""Practice 5.3 and 5.4 — the HTTP transport: one POST, an SSE response, abort and key redaction.

The API key goes only into the ``Authorization`` header; every error leaving ``stream()`` has it
replaced by ``[redacted]``.
"""

from __future__ import annotations

import json
import ssl
from collections.abc import AsyncIterable, AsyncIterator
from contextlib import asynccontextmanager
from copy import copy
from functools import cache
from types import TracebackType
from typing import Any

import httpx

from .protocol import AbortError, AbortSignal
from .seam import ProviderChunk, ProviderRequest, UsageSent
from .sse import iter_provider_chunks, iter_sse_events
from .stream_rules import AbortRace, SSEEvent

REDACTED = "[redacted]"
DEFAULT_TIMEOUT = httpx.Timeout(60.0, connect=10.0)


@cache
def _shared_tls_context() -> ssl.SSLContext:
    """Given: one TLS context for every transport that makes its own client (loading CAs takes ~30 ms)."""
    return httpx.create_ssl_context()


class ProviderTransportError(Exception):
    """An HTTP, network or protocol failure, with any API key already redacted."""


class _Secret:
    """Holds the key so that no repr, log line or verbose traceback's locals can show it."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def redact(self, message: str) -> str:
        """Lab 5.4: Replace every occurrence of the key in ``message`` with ``[redacted]``.

        An empty key is no key (``connect()`` without ``PI_COURSE_API_KEY``, for a provider that needs
        none): there is nothing to hide, and the message stays as it is.
        """
        # BEGIN LAB 5.4 (starter: return message)
        return message.replace(self._value, REDACTED) if self._value else message
        # END LAB 5.4

    def __repr__(self) -> str:
        return REDACTED


def chat_completions_url(base_url: str) -> str:
    """Lab 5.4: ``base_url`` without trailing slashes + ``/chat/completions``; must be absolute http(s)."""
    # BEGIN LAB 5.4 (starter: return base_url + "/chat/completions")
    url = base_url.rstrip("/") + "/chat/completions"
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL as error:
        raise ValueError(f"base_url is not a valid URL: {base_url!r} ({error})") from None
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise ValueError(
            f"base_url must be an absolute http(s) URL such as 'https://api.openai.com/v1', got {base_url!r}"
        )
    return url
    # END LAB 5.4


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
        # BEGIN LAB 5.4 (starter: return {"Authorization": f"Bearer {self._key.reveal()}"})
        headers = {"Accept": "text/event-stream", "Content-Type": "application/json"}
        if self._key.reveal():  # keyless local servers (Ollama, llama.cpp) get no empty Bearer
            headers["Authorization"] = f"Bearer {self._key.reveal()}"
        return headers
        # END LAB 5.4

    def request_body(self, request: ProviderRequest) -> dict[str, Any]:
        """Lab 5.4: The request plus ``stream: true`` and ``stream_options.include_usage``."""
        # BEGIN LAB 5.4 (starter: return dict(request))
        return {**request, "stream": True, "stream_options": {"include_usage": True}}
        # END LAB 5.4

    async def stream(
        self, request: ProviderRequest, *, signal: AbortSignal | None = None
    ) -> AsyncIterator[ProviderChunk]:
        """Lab 5.3: _reads → iter_sse_events → self.read_chunks; AbortError kept, others redacted."""
        # BEGIN LAB 5.3
        failure: str | None = None
        try:
            async with self._reads(request, signal) as reads:
                async for chunk in self.read_chunks(iter_sse_events(reads)):
                    yield chunk
        except AbortError:
            raise
        except Exception as error:  # CancelledError is a BaseException and passes through
            failure = self._key.redact(_describe(error))
        if failure is not None:
            # Raised outside the except block: no __context__ keeps the unredacted original.
            raise ProviderTransportError(failure)
        # END LAB 5.3

    @asynccontextmanager
    async def _reads(
        self, request: ProviderRequest, signal: AbortSignal | None
    ) -> AsyncIterator[AsyncIterator[bytes]]:
        """Lab 5.3: Send with the signal raced by AbortRace, _check_response, hand out raced body reads."""
        # BEGIN LAB 5.3
        if signal is not None and signal.aborted:
            raise AbortError()
        http_request = self._client.build_request(
            "POST",
            self.url,
            headers=self._headers(),
            content=json.dumps(self.request_body(request), ensure_ascii=False).encode(),
        )
        abort = AbortRace(signal)
        try:
            response = await abort.run(self._client.send(http_request, stream=True))
            try:
                await _check_response(response)
                yield abort.iterate(response.aiter_bytes())
            finally:
                await response.aclose()
        finally:
            abort.close()
        # END LAB 5.3


async def _check_response(response: httpx.Response) -> None:
    """A non-2xx status or a non-SSE content type is an error, before any body is read."""
    if not response.is_success:
        body = (await response.aread()).decode("utf-8", "replace")
        raise ProviderTransportError(f"Provider returned HTTP {response.status_code}: {_error_message(body)}")
    content_type = response.headers.get("content-type", "")
    if not content_type.startswith("text/event-stream"):
        raise ProviderTransportError(
            f"Provider returned content type {content_type or 'none'!r}, expected text/event-stream"
        )


def _error_message(body: str) -> str:
    """The provider's ``error.message`` when the body is OpenAI-style JSON, else its start."""
    try:
        payload = json.loads(body)
    except ValueError:
        payload = None
    if isinstance(payload, dict):
        error = payload.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return str(error["message"])
        if isinstance(error, str):
            return error
    snippet = " ".join(body.split())[:200]
    return snippet or "(empty body)"


def _describe(error: Exception) -> str:
    if isinstance(error, httpx.TimeoutException):
        kind = {
            httpx.ConnectTimeout: "connecting to",
            httpx.ReadTimeout: "reading from",
            httpx.WriteTimeout: "writing to",
            httpx.PoolTimeout: "waiting for a connection to",
        }.get(type(error), "talking to")
        detail = f": {error}" if str(error) else ""
        return f"Timed out {kind} the provider ({type(error).__name__}){detail}"
    if isinstance(error, httpx.ConnectError):
        return f"Could not connect to the provider: {error}"
    if isinstance(error, httpx.RemoteProtocolError):
        return f"Provider connection broke off: {error}"
    return str(error) or type(error).__name__
