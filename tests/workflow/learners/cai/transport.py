from __future__ import annotations

import json
from urllib.parse import urlsplit

from .protocol import AbortError
from .sse import iter_sse_events
from .stream_rules import AbortRace


def redact(self, message):
    if self._value == "":
        return message
    return message.replace(self._value, "[redacted]")


def chat_completions_url(base_url):
    url = base_url.rstrip("/") + "/chat/completions"
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018
    except ValueError:
        raise ValueError(f"base_url is not a valid URL: {base_url!r}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"base_url must be an absolute http(s) URL: {base_url!r}")
    return url


def _headers(self):
    return {
        "Accept": "text/event-stream",
        "Authorization": "Bearer " + self._key.reveal(),
        "Content-Type": "application/json",
    }


def request_body(self, request):
    body = {key: value for key, value in request.items()}
    body.update(stream=True, stream_options={"include_usage": True})
    return body


async def stream(self, request, *, signal=None):
    message = None
    try:
        async with self._reads(request, signal) as reads:
            async for chunk in self.read_chunks(iter_sse_events(reads)):
                yield chunk
    except AbortError:
        raise
    except Exception as error:
        message = self._key.redact(str(error) or type(error).__name__)
    if message is not None:
        raise ProviderTransportError(message)  # noqa: F821


async def _reads(self, request, signal):
    if signal is not None and signal.aborted:
        raise AbortError()
    race = AbortRace(signal)
    try:
        content = json.dumps(self.request_body(request), ensure_ascii=False).encode()
        outgoing = self._client.build_request("POST", self.url, headers=self._headers(), content=content)
        response = await race.run(self._client.send(outgoing, stream=True))
        try:
            await _check_response(response)  # noqa: F821
            yield race.iterate(response.aiter_bytes())
        finally:
            await response.aclose()
    finally:
        race.close()
