"""One call to get a working model: a real provider when configured, else the local one."""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from urllib.parse import urlsplit

from pi_course_here import in_a_tab

from ..adapter import OpenAICompatibleModel
from ..transport import OpenAICompatibleTransport
from . import LOCAL_DEFAULT_MODEL as LOCAL_DEFAULT_MODEL  # the rule is stated in the package
from . import default_model as default_model

LOCAL_PROVIDER_NAME = "pi-course-local"
# The embedded provider ignores keys. A non-empty placeholder lets a transport written the way the
# chapter writes it (it always sends `Authorization: Bearer <key>`) talk to it unchanged.
LOCAL_API_KEY = "pi-course-local-key"

_local = None
_local_lock = threading.Lock()


class ConfigurationError(ValueError):
    """A ``PI_COURSE_*`` variable is missing or malformed; the message names it and the fix."""


def local_provider_url() -> str:
    """Start the embedded provider once per process (a daemon thread) and return its base URL."""
    global _local
    with _local_lock:
        if _local is None:
            from .server import LocalProvider

            _local = LocalProvider().start()
        return _local.base_url


def check_base_url(base_url: str) -> str:
    """``PI_COURSE_BASE_URL`` as given when it is an http(s) URL with a host; else ConfigurationError."""
    fix = "把它设成 provider 的 base URL（例如 https://api.openai.com/v1），或者取消它、改用本地 provider"
    try:
        parts = urlsplit(base_url.strip())
        parts.port  # noqa: B018 -- raises ValueError for a port that is not a number in range
    except ValueError as error:
        problem = f"不是有效的 URL（{error}）"
        raise ConfigurationError(f"PI_COURSE_BASE_URL={base_url!r} {problem}：{fix}。") from None
    if parts.scheme not in ("http", "https"):
        if "://" in base_url:
            problem = f"用的是 {parts.scheme}://，只有 http:// 和 https:// 可以"
        else:
            problem = "不是以 http:// 或 https:// 开头"
        raise ConfigurationError(f"PI_COURSE_BASE_URL={base_url!r} {problem}：{fix}。")
    if not parts.hostname:
        raise ConfigurationError(f"PI_COURSE_BASE_URL={base_url!r} 里没有主机名：{fix}。")
    return base_url.strip()


def connect(model: str | None = None, *, env: Mapping[str, str] | None = None) -> OpenAICompatibleModel:
    """A model over ``PI_COURSE_BASE_URL``/``PI_COURSE_API_KEY``/``PI_COURSE_MODEL`` when set.

    Without ``PI_COURSE_BASE_URL`` it talks to the embedded local provider (see
    :func:`local_model`), whose scripts are chosen by model name (``"mainline"`` by default).

    With ``PI_COURSE_BASE_URL`` set, the transport is built with ``strict=False``, real-provider
    mode: what a provider meant is read before the chapter's checks (a finish reason without
    ``delta``, whole tool calls without ``index``, array ``content``, a ``content_filter`` finish as
    an error saying so, choice 0 of an ``n > 1`` stream; annotations skipped), see
    :mod:`pi_course.payload_reading`. The local path stays strict.

    A malformed ``PI_COURSE_BASE_URL``, or one without a model to ask for, raises
    :class:`ConfigurationError` (a ``ValueError``) naming the variable. Close the transport's HTTP
    client with ``await model.transport.aclose()`` when done; notebooks may leave it to the process.
    """
    env = os.environ if env is None else env
    base_url = env.get("PI_COURSE_BASE_URL")
    name = model or default_model(env)
    if not base_url:
        return local_model(name or LOCAL_DEFAULT_MODEL)
    base_url = check_base_url(base_url)
    if not name:
        raise ConfigurationError(
            "设置了 PI_COURSE_BASE_URL，却没有设置 PI_COURSE_MODEL：把 PI_COURSE_MODEL 设成那家 provider 的"
            "模型名（或传 model= / --model），或者取消 PI_COURSE_BASE_URL、改用本地 provider。"
        )
    provider = urlsplit(base_url).hostname or "openai-compatible"
    api_key = env.get("PI_COURSE_API_KEY", "")
    transport = OpenAICompatibleTransport(base_url=base_url, api_key=api_key, strict=False)
    return OpenAICompatibleModel(provider=provider, model=name, transport=transport)


def local_model(script: str = LOCAL_DEFAULT_MODEL, *, strict: bool = True) -> OpenAICompatibleModel:
    """Always the embedded local provider, whatever the environment says (reproducible output).

    The transport sends a placeholder key (:data:`LOCAL_API_KEY`), which the local provider
    ignores, and is strict (the chapter's reader) unless ``strict=False``: replaying a real
    provider's recording (``"recorded/<name>"``) the way :func:`connect` would read it. In a
    browser tab (``pi_course_here.in_a_tab()``) the provider's app runs in this process instead of
    on loopback (:mod:`.inprocess`): the same events, streamed the same way.
    """
    if in_a_tab():  # a browser (JupyterLite): no sockets, the app runs in process
        from .inprocess import IN_PROCESS_BASE_URL, local_client

        transport = OpenAICompatibleTransport(
            base_url=IN_PROCESS_BASE_URL, api_key=LOCAL_API_KEY, client=local_client(), strict=strict
        )
    else:
        url = local_provider_url()
        transport = OpenAICompatibleTransport(base_url=url, api_key=LOCAL_API_KEY, strict=strict)
    return OpenAICompatibleModel(provider=LOCAL_PROVIDER_NAME, model=script, transport=transport)


def not_found_hint(error_message: str | None, base_url: str | None) -> str | None:
    """For an HTTP 404 from a base URL without a ``/v1`` segment: "did you forget /v1?"."""
    if not error_message or not base_url or "HTTP 404" not in error_message:
        return None
    try:
        segments = urlsplit(base_url.strip()).path.split("/")
    except ValueError:
        return None
    if "v1" in segments:
        return None
    suggestion = base_url.strip().rstrip("/") + "/v1"
    return (
        f"提示：PI_COURSE_BASE_URL={base_url!r} 里没有 /v1，是不是漏了？"
        f"多数 OpenAI 兼容的 provider 需要 {suggestion}（did you forget /v1?）"
    )
