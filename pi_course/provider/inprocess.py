"""The local provider without a socket: its ASGI app in this process, its body streamed.

In a browser (Pyodide) there are no sockets, threads or subprocesses, so the loopback provider of
:mod:`.server` cannot run. :class:`InProcessTransport` is an ``httpx`` transport that runs the same
starlette app as a task of the running event loop and hands its body to the client chunk by chunk
through a queue, as it is sent. (``httpx.ASGITransport`` waits for the whole body before it
returns the response, so nothing would arrive as a stream: no ``slow`` script, no abort while a
read waits.)

What a client sees is what it sees over loopback: the status, headers and body the app sends; a
body that breaks off (the ``fault-drop`` script) as ``httpx.RemoteProtocolError`` with the message
httpx gives for a connection closed mid-body; an app that fails before answering as HTTP 500.
Closing the response (an abort, or the reader stopping early) cancels the app's task.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from typing import Any

import httpx

Message = MutableMapping[str, Any]
ASGIApp = Callable[
    [MutableMapping[str, Any], Callable[[], Awaitable[Message]], Callable[[Message], Awaitable[None]]],
    Awaitable[None],
]

# What httpx (h11) says when a server closes the connection in the middle of a chunked body.
BROKEN_OFF = "peer closed connection without sending complete message body (incomplete chunked read)"
_END = object()


class _Body(httpx.AsyncByteStream):
    """The app's body chunks as they are sent; closing it cancels the app."""

    def __init__(
        self, chunks: asyncio.Queue[object], task: asyncio.Task[None], closed: asyncio.Event
    ) -> None:
        self._chunks = chunks
        self._task = task
        self._closed = closed

    async def __aiter__(self) -> AsyncIterator[bytes]:
        while True:
            item = await self._chunks.get()
            if item is _END:
                return
            if isinstance(item, BaseException):
                raise item
            assert isinstance(item, bytes)
            yield item

    async def aclose(self) -> None:
        self._closed.set()
        await _stop(self._task)


async def _stop(task: asyncio.Task[None]) -> None:
    """Cancel the app's task and wait for it to end (never raising what it raised)."""
    if not task.done():
        task.cancel()
    await asyncio.wait([task])


class InProcessTransport(httpx.AsyncBaseTransport):
    """Send each request to an ASGI ``app`` running in this event loop; stream its response."""

    def __init__(self, app: ASGIApp, *, client: tuple[str, int] = ("127.0.0.1", 0)) -> None:
        self.app = app
        self.client = client

    def _scope(self, request: httpx.Request) -> dict[str, Any]:
        url = request.url
        port = url.port or (443 if url.scheme == "https" else 80)
        return {
            "type": "http",
            # 2.4: the app learns of a disconnect from send(), so it needs no listener task.
            "asgi": {"version": "3.0", "spec_version": "2.4"},
            "http_version": "1.1",
            "method": request.method,
            "scheme": url.scheme,
            "path": url.path,
            "raw_path": url.raw_path.split(b"?")[0],
            "query_string": url.query,
            "root_path": "",
            "headers": [(key.lower(), value) for key, value in request.headers.raw],
            "server": (url.host, port),
            "client": self.client,
        }

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        body = await request.aread()
        chunks: asyncio.Queue[object] = asyncio.Queue()
        closed = asyncio.Event()
        loop = asyncio.get_running_loop()
        started: asyncio.Future[tuple[int, list[tuple[bytes, bytes]]]] = loop.create_future()
        request_sent = False

        async def receive() -> Message:
            nonlocal request_sent
            if not request_sent:
                request_sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            await closed.wait()
            return {"type": "http.disconnect"}

        async def send(message: Message) -> None:
            if closed.is_set():
                raise OSError("the client closed the response")
            if message["type"] == "http.response.start" and not started.done():
                started.set_result((int(message["status"]), list(message.get("headers", []))))
            elif message["type"] == "http.response.body":
                data = bytes(message.get("body", b""))
                if data:
                    chunks.put_nowait(data)
                if not message.get("more_body", False):
                    chunks.put_nowait(_END)

        async def run() -> None:
            try:
                await self.app(self._scope(request), receive, send)
            except Exception:
                if not started.done():  # as a server answers an app that failed before answering
                    started.set_result((500, [(b"content-type", b"text/plain; charset=utf-8")]))
                    chunks.put_nowait(b"Internal Server Error")
                    chunks.put_nowait(_END)
                else:
                    chunks.put_nowait(httpx.RemoteProtocolError(BROKEN_OFF, request=request))
                return
            if not started.done():
                started.set_result((500, []))
            chunks.put_nowait(_END)  # harmless when the body already ended

        task = asyncio.ensure_future(run())
        try:
            waiters: list[asyncio.Future[Any]] = [started, task]
            await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
            status, headers = await started
        except BaseException:
            await _stop(task)
            raise
        return httpx.Response(status, headers=headers, stream=_Body(chunks, task, closed), request=request)


def local_client() -> httpx.AsyncClient:
    """An ``httpx.AsyncClient`` whose every request goes to the embedded provider's app, in process."""
    from .server import create_app

    return httpx.AsyncClient(transport=InProcessTransport(create_app()), base_url=IN_PROCESS_BASE_URL)


# The host name is never resolved: requests go to the app, not to a network.
IN_PROCESS_BASE_URL = "http://pi-course.local/v1"
