from __future__ import annotations

import json

import httpx

from .protocol import AbortError
from .sse import iter_sse_events
from .stream_rules import AbortRace


def redact(self, message):
    if not self._value:
        return message
    return message.replace(self._value, REDACTED)  # noqa: F821


def chat_completions_url(base_url):
    endpoint = base_url.rstrip("/") + "/chat/completions"
    try:
        url = httpx.URL(endpoint)
    except httpx.InvalidURL:
        raise ValueError(f"base_url is not a URL: {base_url!r}") from None
    if url.scheme not in ("http", "https") or not url.host:
        raise ValueError(f"base_url must be an absolute http(s) URL, got {base_url!r}")
    return endpoint


def _headers(self):
    return {
        "Accept": "text/event-stream",
        "Authorization": f"Bearer {self._key.reveal()}",
        "Content-Type": "application/json",
    }


def request_body(self, request):
    body = dict(request)
    body["stream"] = True
    body["stream_options"] = {"include_usage": True}
    return body


async def stream(self, request, *, signal=None):
    failure = None
    try:
        async with self._reads(request, signal) as reads:
            async for chunk in self.read_chunks(iter_sse_events(reads)):
                yield chunk
    except AbortError:
        raise
    except Exception as error:
        failure = ProviderTransportError(self._key.redact(str(error) or type(error).__name__))  # noqa: F821
    if failure is not None:
        raise failure  # outside the except block: nothing chained keeps the original text


async def _reads(self, request, signal):
    if signal is not None and signal.aborted:
        raise AbortError()
    race = AbortRace(signal)
    body = json.dumps(self.request_body(request), ensure_ascii=False).encode("utf-8")
    outgoing = self._client.build_request("POST", self.url, headers=self._headers(), content=body)
    try:
        response = await race.run(self._client.send(outgoing, stream=True))
        try:
            await _check_response(response)  # noqa: F821
            yield race.iterate(response.aiter_bytes())
        finally:
            await response.aclose()
    finally:
        race.close()
