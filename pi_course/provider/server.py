"""An embedded, scripted OpenAI-compatible provider on loopback: no key, no network, no cost.

``POST /v1/chat/completions`` answers with Server-Sent Events when ``stream`` is true and with a
JSON completion otherwise; ``GET /v1/models`` lists the scripts, ``GET /v1/models/{id}`` gives one.
The reply is chosen by the request's model name (``mainline`` is the chapter's main line); a name
that is neither a script nor a recording gets what a real OpenAI-compatible server answers: HTTP
404, ``model_not_found``. Every error, on every route and method, is OpenAI's JSON shape. No key is
checked unless one is set (``api_key``, ``serve --api-key``): then any other Bearer key gets 401
``invalid_api_key``. A page served from another loopback port may call it (CORS).

``recorded/<name>`` replays, byte for byte, a stream recorded from a real provider (the corpus in
``recordings/``, described by its ``index.json``), so real-world streams can be read offline.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import threading
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from ..chapter.fixtures import interleaved_chunks
from ..chapter.wire import choice_payload, mainline_payloads, payloads_of, usage_payload
from . import DEFAULT_PORT

# --- scripts ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Pause:
    seconds: float


class Drop:
    """Break the connection here, in the middle of the response body."""


ScriptStep = dict[str, Any] | Pause | Drop


@dataclass(frozen=True)
class HTTPFailure:
    status: int
    message: str
    type: str
    code: str | None = None

    def response(self) -> JSONResponse:
        error: dict[str, Any] = {"message": self.message, "type": self.type, "param": None, "code": self.code}
        return JSONResponse({"error": error}, status_code=self.status)


Reply = list[ScriptStep] | HTTPFailure
MessageList = Sequence[dict[str, Any]]


def mainline(messages: MessageList) -> Reply:
    """Turn 1: ``read`` as call-1 in two fragments; once a tool result is in: a text answer."""
    answered = any(message.get("role") == "tool" for message in messages)
    return list(mainline_payloads(2 if answered else 1))


def interleaved(first: int, second: int) -> Callable[[MessageList], Reply]:
    """Text between two tools; 4/2 is the chapter's diagnostic, 0/1 what real providers send."""

    def script(messages: MessageList) -> Reply:
        return list(payloads_of(interleaved_chunks(first, second)))

    return script


def text(content: str) -> dict[str, Any]:
    return choice_payload({"content": content})


def slow(messages: MessageList) -> Reply:
    """Five text deltas 50 ms apart, to watch events arrive one by one."""
    steps: list[ScriptStep] = []
    for piece in ("一", "二", "三", "四", "五"):
        steps += [text(piece), Pause(0.05)]
    return [*steps, choice_payload({}, "stop"), usage_payload(5, 5)]


SCRIPTS: dict[str, Callable[[MessageList], Reply]] = {
    "mainline": mainline,
    "interleaved-4-2": interleaved(4, 2),
    "interleaved": interleaved(0, 1),
    "slow": slow,
    "fault-401": lambda m: HTTPFailure(
        401, "Incorrect API key provided.", "invalid_request_error", code="invalid_api_key"
    ),
    "fault-429": lambda m: HTTPFailure(429, "Rate limit reached, retry later.", "rate_limit_error"),
    "fault-500": lambda m: HTTPFailure(500, "The server had an error.", "server_error"),
    "fault-stream-error": lambda m: [
        text("正在"),
        {"error": {"message": "The model is overloaded.", "type": "server_error"}},
    ],
    "fault-drop": lambda m: [text("正在"), Drop()],
    "fault-missing-finish": lambda m: [text("正在"), text("读取")],
    "fault-invalid-chunk": lambda m: [text("正在"), {"choices": [{"index": 0, "delta": {"content": 42}}]}],
}


def reply_for(model: str, messages: MessageList) -> Reply:
    """The script's reply; an unknown name is an HTTP 404, as a real provider answers it."""
    script = SCRIPTS.get(model)
    if script is None:
        return unknown_model(model)
    return script(messages)


def unknown_model(model: str) -> HTTPFailure:
    """OpenAI's answer to an unknown model (HTTP 404, ``model_not_found``), naming the ones there are."""
    names = ", ".join(SCRIPTS)
    return HTTPFailure(
        404,
        f"The model `{model}` does not exist. Available models: {names}, and recorded/<name> "
        "for the recorded streams (GET /v1/models lists them all).",
        "invalid_request_error",
        code="model_not_found",
    )


# --- recorded streams from real providers -------------------------------------------------------

RECORDED_PREFIX = "recorded/"
# Beside this module, wherever it loads from (in a browser tab the wheel, not the copy's storage).
RECORDINGS = Path(__file__).with_name("recordings")


@cache
def recordings_index() -> dict[str, dict[str, Any]]:
    """The corpus index by recording name (it ships inside the package, so the wheel has it)."""
    index = json.loads((RECORDINGS / "index.json").read_text(encoding="utf-8"))
    return {entry["name"]: entry for entry in index["recordings"]}


def recorded_models() -> list[str]:
    return [RECORDED_PREFIX + name for name in recordings_index()]


def recording_bytes(name: str) -> bytes:
    """The recorded body of ``recorded/<name>`` (or of ``<name>``), exactly as stored."""
    entry = recordings_index()[name.removeprefix(RECORDED_PREFIX)]
    return (RECORDINGS / str(entry["file"])).read_bytes()


async def _recorded_body(data: bytes) -> AsyncIterator[bytes]:
    """The stored bytes, one SSE event per write, so a client sees them arrive as a stream."""
    for piece in re.split(rb"(?<=\n\n)", data):
        if piece:
            yield piece
            await asyncio.sleep(0)


# --- the HTTP app -------------------------------------------------------------------------------


class _DroppedConnection(Exception):
    pass


def _with_envelope(payload: dict[str, Any], model: str) -> dict[str, Any]:
    if "error" in payload:
        return payload
    return {
        "id": "chatcmpl-pi-course",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": model,
        **payload,
    }


async def _sse_body(steps: Sequence[ScriptStep], model: str, include_usage: bool) -> AsyncIterator[bytes]:
    for step in steps:
        if isinstance(step, Pause):
            await asyncio.sleep(step.seconds)
        elif isinstance(step, Drop):
            raise _DroppedConnection("scripted connection drop")
        elif include_usage or step.get("choices") != []:
            data = json.dumps(_with_envelope(step, model), ensure_ascii=False)
            yield f"data: {data}\n\n".encode()
    yield b"data: [DONE]\n\n"


def _completion(steps: Sequence[ScriptStep], model: str) -> dict[str, Any]:
    """Fold a script into one non-streaming chat completion; a fault stays the fault.

    Content that is not a string is sent as it is (``fault-invalid-chunk``), and a script without
    a finish reason answers ``finish_reason: null`` and no usage (``fault-missing-finish``).
    """
    text: list[str] = []
    invalid: object = None
    calls: dict[int, dict[str, Any]] = {}
    reason, totals = None, None
    for step in steps:
        if not isinstance(step, dict) or "error" in step:
            continue
        totals = step.get("usage") or totals
        for choice in step["choices"]:
            fields = choice["delta"]
            content = fields.get("content")
            if content is not None and not isinstance(content, str):
                invalid = content
            text.append(content if isinstance(content, str) else "")
            for call in fields.get("tool_calls") or []:
                slot = calls.setdefault(
                    call["index"], {"id": "", "type": "function", "function": {"name": "", "arguments": ""}}
                )
                slot["id"] = call.get("id") or slot["id"]
                slot["function"]["name"] += call["function"].get("name") or ""
                slot["function"]["arguments"] += call["function"].get("arguments") or ""
            reason = choice.get("finish_reason") or reason
    message: dict[str, Any] = {
        "role": "assistant",
        "content": invalid if invalid is not None else "".join(text) or None,
    }
    if calls:
        message["tool_calls"] = [calls[index] for index in calls]
    return {
        "id": "chatcmpl-pi-course",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": reason}],
        "usage": totals,
    }


async def chat_completions(request: Request) -> Response:
    try:
        body = await request.json()
        model, messages = str(body["model"]), list(body["messages"])
    except (ValueError, KeyError, TypeError):
        message = "Body must be JSON with model and messages."
        return HTTPFailure(400, message, "invalid_request_error").response()
    if model.startswith(RECORDED_PREFIX):
        return _recorded(model, bool(body.get("stream")))
    reply = reply_for(model, messages)
    if isinstance(reply, HTTPFailure):
        return reply.response()
    if not body.get("stream"):
        # A non-streaming reply cannot break off halfway: a script that fails mid-stream is a 500.
        if any(isinstance(step, Drop) or (isinstance(step, dict) and "error" in step) for step in reply):
            return HTTPFailure(500, "Scripted failure.", "server_error").response()
        return JSONResponse(_completion(reply, model))
    include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
    return StreamingResponse(
        _sse_body(reply, model, include_usage),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache"},
    )


def _recorded(model: str, stream: bool) -> Response:
    name = model.removeprefix(RECORDED_PREFIX)
    if name not in recordings_index():
        message = f"The model `{model}` does not exist: no recording {name!r} (GET /v1/models lists them)."
        return HTTPFailure(404, message, "invalid_request_error", code="model_not_found").response()
    if not stream:
        message = f"{model} replays a recorded stream: send stream: true."
        return HTTPFailure(400, message, "invalid_request_error").response()
    return StreamingResponse(
        _recorded_body(recording_bytes(name)),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache"},
    )


def _model_object(name: str) -> dict[str, Any] | None:
    """What ``GET /v1/models`` lists for one model: a script, or ``recorded/<name>`` (its provider)."""
    if name in SCRIPTS:
        return {"id": name, "object": "model", "created": 0, "owned_by": "pi-course"}
    entry = recordings_index().get(name.removeprefix(RECORDED_PREFIX))
    if name.startswith(RECORDED_PREFIX) and entry is not None:
        return {"id": name, "object": "model", "created": 0, "owned_by": entry["provider"] or "pi-course"}
    return None


async def list_models(request: Request) -> Response:
    data = [_model_object(name) for name in [*SCRIPTS, *recorded_models()]]
    return JSONResponse({"object": "list", "data": data})


async def retrieve_model(request: Request) -> Response:
    name = request.path_params["model"]
    found = _model_object(name)
    if found is None:
        return unknown_model(name).response()
    return JSONResponse(found)


_ERROR_TYPES = {401: "invalid_request_error", 404: "invalid_request_error", 405: "invalid_request_error"}


async def _http_error(request: Request, error: Exception) -> Response:
    """Starlette's own errors (an unknown route, a method a route does not take) in OpenAI's shape."""
    assert isinstance(error, HTTPException)
    if error.status_code == 404:
        message = f"Unknown request URL: {request.method} {request.url.path}."
        code = "unknown_url"
    elif error.status_code == 405:
        message = f"Method {request.method} is not allowed on {request.url.path}."
        code = "method_not_allowed"
    else:
        message, code = str(error.detail), None
    failure = HTTPFailure(
        error.status_code, message, _ERROR_TYPES.get(error.status_code, "server_error"), code
    )
    response = failure.response()
    response.headers.update(error.headers or {})
    return response


async def _server_error(request: Request, error: Exception) -> Response:
    """Anything the provider did not expect: a 500 in OpenAI's shape, never a text page."""
    return HTTPFailure(500, f"The server had an error ({type(error).__name__}).", "server_error").response()


class KeyCheck:
    """With a key set, every request but a CORS preflight must carry ``Authorization: Bearer <key>``."""

    def __init__(self, app: ASGIApp, api_key: str | None) -> None:
        self.app = app
        self.expected = f"Bearer {api_key}".encode() if api_key else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.expected is None or scope["type"] != "http" or scope["method"] == "OPTIONS":
            await self.app(scope, receive, send)
            return
        sent = dict(scope["headers"]).get(b"authorization")
        if sent == self.expected:
            await self.app(scope, receive, send)
            return
        message = "Incorrect API key provided." if sent else "You didn't provide an API key."
        failure = HTTPFailure(401, message, "invalid_request_error", code="invalid_api_key")
        await failure.response()(scope, receive, send)


# A page on any loopback origin (another port of this machine) may call the provider.
LOOPBACK_ORIGINS = r"https?://(127\.0\.0\.1|localhost|\[::1\])(:\d+)?"


def create_app(api_key: str | None = None) -> Starlette:
    """The provider's ASGI app; with ``api_key``, requests must carry it as their Bearer key."""
    return Starlette(
        routes=[
            Route("/v1/chat/completions", chat_completions, methods=["POST"]),
            Route("/v1/models", list_models, methods=["GET"]),
            Route("/v1/models/{model:path}", retrieve_model, methods=["GET"]),
        ],
        middleware=[
            Middleware(
                CORSMiddleware,
                allow_origin_regex=LOOPBACK_ORIGINS,
                allow_methods=["*"],
                allow_headers=["*"],
            ),
            Middleware(KeyCheck, api_key=api_key),
        ],
        exception_handlers={HTTPException: _http_error, Exception: _server_error},
    )


# --- running it ---------------------------------------------------------------------------------


class LocalProvider:
    """Runs the scripted provider in a background thread, e.g. beside a notebook kernel.

    ``port=0`` picks a free port; read the address from :attr:`base_url`. With ``api_key``, any
    other Bearer key gets 401 ``invalid_api_key``; without one, no key is checked.
    """

    def __init__(self, host: str = "127.0.0.1", port: int = 0, *, api_key: str | None = None) -> None:
        import uvicorn

        # Quiet and without dictConfig: in a notebook, server logs would land in cell outputs,
        # and a scripted connection drop is logged by uvicorn as an application error.
        config = uvicorn.Config(
            create_app(api_key),
            host=host,
            port=port,
            log_config=None,
            log_level="critical",
            access_log=False,
            lifespan="off",
        )
        self._server = uvicorn.Server(config)
        self._thread: threading.Thread | None = None
        self.host = host
        self.port = port

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    def start(self, timeout: float = 10.0) -> LocalProvider:
        if self._thread is not None:
            return self
        self._thread = threading.Thread(target=self._server.run, name="pi-course-provider", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"local provider did not start on {self.host}:{self.port}")
            time.sleep(0.01)
        self.port = self._server.servers[0].sockets[0].getsockname()[1]
        return self

    def stop(self) -> None:
        if self._thread is None:
            return
        self._server.should_exit = True
        self._thread.join(timeout=10)
        self._thread = None

    def __enter__(self) -> LocalProvider:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "running" if self._thread is not None else "stopped"
        return f"LocalProvider({state})"


class _NoScriptedDrops(logging.Filter):
    """uvicorn logs an exception out of a response as an application error: a scripted drop is none.

    Its own INFO lines (started, running on, shutting down) go too: the command says where it
    listens and how to stop it in one Chinese line; warnings, errors and each request's line stay.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING:
            return False
        return not (record.exc_info and isinstance(record.exc_info[1], _DroppedConnection))


def serve(host: str = "127.0.0.1", port: int = DEFAULT_PORT, api_key: str | None = None) -> None:
    """Run the provider in the foreground (``python -m pi_course serve [--api-key KEY]``)."""
    import uvicorn

    logging.getLogger("uvicorn.error").addFilter(_NoScriptedDrops())
    uvicorn.run(create_app(api_key), host=host, port=port, log_level="info", lifespan="off")
