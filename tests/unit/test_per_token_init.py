"""The per-token protocol classes' own ``__init__`` (a speed trick) builds what the dataclass's would."""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

import pytest

from pi_course import (
    EMPTY_USAGE,
    AssistantMessage,
    TextContent,
    TextDeltaEvent,
    ToolCall,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
)

PARTIAL = AssistantMessage((TextContent("hi"),), "p", "m", EMPTY_USAGE, "stop", 1)
CALL = ToolCall("call-1", "read", {"path": "README.md"}, '{"path": "README.md"}')

CASES: list[tuple[type, tuple[Any, ...], dict[str, Any]]] = [
    (TextContent, ("hi",), {}),
    (ToolCall, ("call-1", "read", {"path": "a"}), {}),
    (ToolCall, ("call-1",), {"name": "read", "arguments": {}, "raw_arguments": "{}"}),
    (TextDeltaEvent, (0, "hi", PARTIAL), {}),
    (ToolCallDeltaEvent, (), {"content_index": 1, "delta": '{"pa', "partial": PARTIAL}),
    (ToolCallEndEvent, (1, CALL, PARTIAL), {}),
]


@pytest.mark.parametrize(("cls", "args", "kwargs"), CASES)
def test_it_builds_what_the_dataclass_init_builds(
    cls: type, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    quick = cls(*args, **kwargs)
    plain_init = cls.__init__.__wrapped__  # type: ignore[misc]
    assert cls.__init__ is not plain_init
    plain = object.__new__(cls)
    plain_init(plain, *args, **kwargs)
    assert vars(quick) == vars(plain) and quick == plain and repr(quick) == repr(plain)
    # The same parameters, defaults and annotations as the dataclass's own __init__.
    assert inspect.signature(cls.__init__, follow_wrapped=False) == inspect.signature(plain_init)
    with pytest.raises(dataclasses.FrozenInstanceError):
        quick.type = "changed"
    assert dataclasses.replace(quick) == quick


def test_a_default_and_a_missing_argument_behave_as_the_dataclass_says() -> None:
    assert ToolCall("call-1", "read", {}).raw_arguments is None
    with pytest.raises(TypeError):
        TextDeltaEvent(0, "hi")  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        TextContent("hi", extra=1)  # type: ignore[call-arg]
