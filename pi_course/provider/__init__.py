"""The embedded OpenAI-compatible provider on loopback, and ``connect()`` to it or to a real one.

This module imports nothing of the lesson: the command line reads its settings before any lesson
module has to import.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

DEFAULT_PORT = 8765  # python -m pi_course serve: http://127.0.0.1:8765/v1
LOCAL_DEFAULT_MODEL = "mainline"


def default_model(env: Mapping[str, str] | None = None) -> str | None:
    """The model ``connect()`` uses without ``model=``: ``None`` when one must be named."""
    env = os.environ if env is None else env
    if env.get("PI_COURSE_BASE_URL"):
        return env.get("PI_COURSE_MODEL") or None
    return LOCAL_DEFAULT_MODEL
