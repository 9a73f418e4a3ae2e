"""pi_course — chapter 05 of 动手学 Pi: the model boundary, in Python.

The lesson sits at the top: ``protocol`` holds the canonical protocol, ``outbound`` is practice
5.1, ``adapter`` 5.2, ``sse`` 5.3, ``transport`` 5.3 (reading and abort) and 5.4 (the request and the
key); ``seam`` is the contract between transport and adapter; ``scripted`` is chapter 04's offline
model and ``migration`` the optional exercise. The tooling lives in subpackages: ``chapter`` (the
steps and fixtures, defined once), ``provider`` (the embedded OpenAI-compatible server and
``connect()``), ``course`` (practice copies, ``check``, the CLI) and ``notebook`` (widgets and
display helpers). The names in ``__all__`` are importable
from here; each loads its module on first use, so ``python -m pi_course`` runs (and says in one
line what is wrong) even when a lesson module does not import. In a browser tab this package's
finder goes first before anything else is imported (``pi_course_here.CopyFinder``): each lesson
module is read with one request, and the tooling subpackages come from the installed wheel.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

try:
    from pi_course_here import copy_finder_first as _copy_finder_first
    from pi_course_here import edition_of as _edition_of
except ModuleNotFoundError as _missing:
    if _missing.name != "pi_course_here":
        raise
    # pi_course_here ships with the installed course: without it this Python has no pi-course
    # (the system Python in a practice copy, say). One line with the fix, not a traceback.
    import sys as _sys
    from pathlib import Path as _Path

    from .course.copies.pythons import course_python as _course_python
    from .course.copies.pythons import use_instead as _use_instead

    # The Python that made this copy (or the clone's .venv), by its real path, with the command run.
    _command = (
        " ".join(["-m pi_course", *_sys.argv[1:]]) if _sys.argv[:1] == ["-m"] else "-m pi_course check 05"
    )
    _line = f"这个 Python（{_sys.executable}）没有安装 pi-course。" + _use_instead(
        _course_python(_Path(__file__).resolve().parent.parent), _command
    )
    if _sys.argv[:1] == ["-m"]:  # python -m pi_course …: the command stops here, in one line
        print(_line, file=_sys.stderr)
        raise SystemExit(2) from None
    raise ModuleNotFoundError(_line, name="pi_course_here") from None

if TYPE_CHECKING:
    from .adapter import OpenAICompatibleModel, fixed_transport
    from .outbound import to_provider_messages, to_provider_tools
    from .protocol import (
        EMPTY_USAGE,
        AbortController,
        AbortError,
        AbortSignal,
        AgentContext,
        AgentMessage,
        AssistantMessage,
        DoneEvent,
        ErrorEvent,
        Model,
        ModelEvent,
        ModelStream,
        StartEvent,
        StopReason,
        TextContent,
        TextDeltaEvent,
        ToolCall,
        ToolCallDeltaEvent,
        ToolCallEndEvent,
        # BEGIN LAB 5.1 REMOVE
        ToolDefinition,
        # END LAB 5.1 REMOVE
        ToolResultMessage,
        Usage,
        UserMessage,
        assistant_message,
        text,
        text_of,
        user_message,
    )
    from .provider.connect import connect, local_model
    from .scripted import ScriptedModel
    from .seam import (
        FinishChunk,
        InvalidProviderChunk,
        ProviderChunk,
        ProviderRequest,
        ProviderTransport,
        TextChunk,
        ToolChunk,
    )
    from .sse import ProviderError, ProviderRefusal, SSEDecoder, SSEError, SSEEvent, iter_sse_events
    from .transport import OpenAICompatibleTransport, ProviderTransportError

_copy_finder_first(__path__)  # in a browser tab (see above); elsewhere nothing

EDITION = _edition_of(__path__[0])  # "practice" in a copy `python -m pi_course practice` made


def describe_edition() -> str:
    """Which pi_course a notebook is using, without printing any machine path."""
    if EDITION == "practice":
        return "使用的 pi_course：练习副本（practice copy）——你自己的实现"
    return "使用的 pi_course：参考实现（reference）"


__all__ = [
    "EDITION",
    "EMPTY_USAGE",
    "AbortController",
    "AbortError",
    "AbortSignal",
    "AgentContext",
    "AgentMessage",
    "AssistantMessage",
    "DoneEvent",
    "ErrorEvent",
    "FinishChunk",
    "InvalidProviderChunk",
    "Model",
    "ModelEvent",
    "ModelStream",
    "OpenAICompatibleModel",
    "OpenAICompatibleTransport",
    "ProviderChunk",
    "ProviderError",
    "ProviderRefusal",
    "ProviderRequest",
    "ProviderTransport",
    "ProviderTransportError",
    "SSEDecoder",
    "SSEError",
    "SSEEvent",
    "ScriptedModel",
    "StartEvent",
    "StopReason",
    "TextChunk",
    "TextContent",
    "TextDeltaEvent",
    "ToolCall",
    "ToolCallDeltaEvent",
    "ToolCallEndEvent",
    "ToolChunk",
    # BEGIN LAB 5.1 REMOVE
    "ToolDefinition",
    # END LAB 5.1 REMOVE
    "ToolResultMessage",
    "Usage",
    "UserMessage",
    "assistant_message",
    "connect",
    "describe_edition",
    "fixed_transport",
    "iter_sse_events",
    "local_model",
    "text",
    "text_of",
    "to_provider_messages",
    "to_provider_tools",
    "user_message",
]

# The modules the names above come from, the lesson's own order: the first that has a name gives it.
_SOURCES = ("protocol", "seam", "outbound", "adapter", "sse", "transport", "scripted", "provider.connect")


def __getattr__(name: str) -> object:
    """A public name's first use imports the modules it needs (PEP 562); later uses find it here."""
    if name in __all__:
        for source in _SOURCES:
            module = importlib.import_module(f".{source}", __name__)
            if name in vars(module):
                value = vars(module)[name]
                globals()[name] = value
                return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
