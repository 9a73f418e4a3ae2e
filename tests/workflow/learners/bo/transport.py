from __future__ import annotations

import contextlib

import httpx

from .protocol import AbortError
from .sse import iter_sse_events
from .stream_rules import AbortRace


def redact(self, message):
    return message.replace(self._value, REDACTED) if self._value else message  # noqa: F821


def chat_completions_url(base_url):
    while base_url.endswith("/"):
        base_url = base_url[:-1]
    url = f"{base_url}/chat/completions"
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL as problem:
        message = f"base_url {base_url!r} is not a valid URL: {problem}"
    else:
        if parsed.scheme in ("http", "https") and parsed.host:
            return url
        message = f"base_url {base_url!r} must start with http:// or https:// and name a host"
    raise ValueError(message)


def _headers(self):
    headers = {"Accept": "text/event-stream", "Content-Type": "application/json"}
    headers["Authorization"] = "Bearer " + self._key.reveal()
    return headers


def request_body(self, request):
    return {**request, "stream": True, "stream_options": {"include_usage": True}}


async def stream(self, request, *, signal=None):
    redacted = None
    try:
        async with self._reads(request, signal) as reads:
            events = iter_sse_events(reads)
            async for chunk in self.read_chunks(events):
                yield chunk
    except AbortError:
        raise
    except Exception as error:
        redacted = self._key.redact(_describe(error))  # noqa: F821
    if redacted is not None:
        raise ProviderTransportError(redacted)  # noqa: F821


async def _reads(self, request, signal):
    race = AbortRace(signal)
    async with contextlib.AsyncExitStack() as cleanup:
        cleanup.callback(race.close)
        if signal and signal.aborted:
            raise AbortError()
        outgoing = self._client.build_request(
            "POST", self.url, headers=self._headers(), json=self.request_body(request)
        )
        response = await race.run(self._client.send(outgoing, stream=True))
        cleanup.push_async_callback(response.aclose)
        await _check_response(response)  # noqa: F821
        yield race.iterate(response.aiter_bytes())
