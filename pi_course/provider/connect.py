"""One call to get a working model: a real provider when configured, else the local one."""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from urllib.parse import urlsplit

from ..adapter import OpenAICompatibleModel
from ..http import OpenAICompatibleTransport

LOCAL_PROVIDER_NAME = "pi-course-local"

_local = None
_local_lock = threading.Lock()


def local_provider_url() -> str:
    """Start the embedded provider once per process (a daemon thread) and return its base URL."""
    global _local
    with _local_lock:
        if _local is None:
            from .server import LocalProvider

            _local = LocalProvider().start()
        return _local.base_url


def connect(model: str | None = None, *, env: Mapping[str, str] | None = None) -> OpenAICompatibleModel:
    """A model over ``PI_COURSE_BASE_URL``/``PI_COURSE_API_KEY``/``PI_COURSE_MODEL`` when set.

    Without ``PI_COURSE_BASE_URL`` it talks to the embedded local provider, whose scripts are
    chosen by model name (``"mainline"`` by default). Close the transport's HTTP client with
    ``await model.transport.aclose()`` when done; notebooks may simply leave it to the process.
    """
    env = os.environ if env is None else env
    base_url = env.get("PI_COURSE_BASE_URL")
    if base_url:
        name = model or env.get("PI_COURSE_MODEL")
        if not name:
            raise ValueError("PI_COURSE_BASE_URL is set, so PI_COURSE_MODEL (or model=) must name a model")
        provider = urlsplit(base_url).hostname or "openai-compatible"
        api_key = env.get("PI_COURSE_API_KEY", "")
    else:
        return local_model(model or "mainline")
    transport = OpenAICompatibleTransport(base_url=base_url, api_key=api_key)
    return OpenAICompatibleModel(provider=provider, model=name, transport=transport)


def local_model(script: str = "mainline") -> OpenAICompatibleModel:
    """Always the embedded local provider, whatever the environment says (reproducible output)."""
    transport = OpenAICompatibleTransport(base_url=local_provider_url(), api_key="")
    return OpenAICompatibleModel(provider=LOCAL_PROVIDER_NAME, model=script, transport=transport)
