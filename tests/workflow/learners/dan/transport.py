from __future__ import annotations

import asyncio
import contextlib
import json

import httpx

from .protocol import AbortError
from .sse import iter_provider_chunks, iter_sse_events


def redact(self, message):
    match self._value:
        case "":
            return message
        case key:
            return message.replace(key, "[redacted]")


def chat_completions_url(base_url):
    url = base_url.rstrip("/") + "/chat/completions"
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL:
        raise ValueError(f"not a URL: {base_url!r}") from None
    match parsed.scheme:
        case "http" | "https" if parsed.host:
            return url
    raise ValueError(f"base_url must be an absolute http(s) URL, got {base_url!r}")


def _headers(self):
    return {
        "Accept": "text/event-stream",
        "Authorization": f"Bearer {self._key.reveal()}",
        "Content-Type": "application/json",
    }


def request_body(self, request):
    return dict(request) | {"stream": True, "stream_options": {"include_usage": True}}


async def stream(self, request, *, signal=None):
    failure = None
    try:
        async with self._reads(request, signal) as reads:
            async for chunk in iter_provider_chunks(iter_sse_events(reads), strict=self.strict):
                yield chunk
    except AbortError:
        raise
    except Exception as error:
        failure = self._key.redact(_describe(error))  # noqa: F821
    if failure is not None:
        raise ProviderTransportError(failure)  # noqa: F821


async def _reads(self, request, signal):
    if signal is not None and signal.aborted:  # before anything is sent
        raise AbortError()
    body = json.dumps(self.request_body(request), ensure_ascii=False).encode()
    outgoing = self._client.build_request("POST", self.url, headers=self._headers(), content=body)
    response = await _against_abort(self._client.send(outgoing, stream=True), signal)
    try:
        await _check_response(response)  # noqa: F821
        yield _reads_against_abort(response.aiter_bytes(), signal)
    finally:
        await response.aclose()


async def _against_abort(step, signal):
    """Await ``step``, unless the signal fires first; the signal is checked again once it is done."""
    if signal is None:
        return await step
    work = asyncio.ensure_future(step)
    abort = asyncio.ensure_future(signal.wait())
    try:
        await asyncio.wait((work, abort), return_when=asyncio.FIRST_COMPLETED)
    finally:
        abort.cancel()
        if not work.done():
            work.cancel()
            with contextlib.suppress(BaseException):
                await work
    if not signal.aborted:
        return work.result()
    if work.done() and not work.cancelled() and work.exception() is None:
        close = getattr(work.result(), "aclose", None)
        if close is not None:
            await close()
    raise AbortError()


async def _reads_against_abort(reads, signal):
    while True:
        if signal is not None and signal.aborted:
            raise AbortError()
        try:
            read = await _against_abort(anext(reads), signal)
        except StopAsyncIteration:
            return
        yield read
