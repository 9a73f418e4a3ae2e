"""The comparison's own inputs (tests/test_05_compare.py): the abort places taken from every
recording, what tells two reads or chunks apart, and the observations added for issue 43."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from pi_course import FinishChunk, TextChunk, ToolChunk


@pytest.fixture(scope="module")
def compare() -> ModuleType:
    path = Path(__file__).parents[1] / "test_05_compare.py"
    spec = importlib.util.spec_from_file_location("compare_under_test", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_every_abort_place_is_taken_once_a_run_counted_up_to_two(compare: ModuleType) -> None:
    seen: set[object] = set()
    assert list(compare.abort_positions(["a", "a", "a", "b"], seen)) == [0, 1, 2, 3, 4]
    # Before the first, inside a run (first and second of it), after the last: the third a is like the second.
    assert list(compare.abort_positions(["a", "a", "a", "a"], seen)) == [4]
    assert list(compare.abort_positions(["a", "a", "a", "b"], seen)) == []
    assert list(compare.abort_positions(["b"], set())) == [0, 1]


def test_a_read_is_told_by_the_fields_the_chapters_reader_looks_at(compare: ModuleType) -> None:
    text = b'data: {"id":"x","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}\n\n'
    other_provider = b'data: {"id":"y","model":"m","choices":[{"index":0,"delta":{"content":"yo"}}]}\n\n'
    finish = b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
    usage = b'data: {"choices":[],"usage":{"prompt_tokens":1}}\n\n'
    assert compare.read_kind(text) == compare.read_kind(other_provider) == ("choices[0].delta.content",)
    assert compare.read_kind(finish) == ("choices[0].finish_reason",)
    assert compare.read_kind(usage) == ("choices[]", "usage")
    assert compare.read_kind(b"data: [DONE]\n\n") == ("[DONE]",)
    assert compare.read_kind(b": keep-alive\n\n") == ("comment",)
    assert compare.read_kind(b"event: error\ndata: {}\n\n") == ("event",)


def test_a_chunk_is_told_by_its_type_a_tools_index_and_what_came_with_it(compare: ModuleType) -> None:
    kind = compare.chunk_kind
    assert kind(TextChunk("a")) == kind(TextChunk("b")) != kind(TextChunk(""))
    assert kind(ToolChunk(0, "call-1", "read", "{")) != kind(ToolChunk(0, None, None, "}"))
    assert kind(ToolChunk(0, None, None, "a")) != kind(ToolChunk(1, None, None, "a"))
    assert kind(FinishChunk("stop")) != kind(FinishChunk("length"))
    assert kind(RuntimeError("x")) == "RuntimeError"


def test_a_redacted_mark_without_a_key_is_seen(compare: ModuleType) -> None:
    garbled = compare.Seen([], RuntimeError("[redacted]b[redacted]o[redacted]"), [], True)
    plain = compare.Seen([], RuntimeError("boom"), [], True)
    flag = "没有 key 时错误里有 [redacted]"
    assert compare.transport_seen(garbled, plain, "")[flag] is True
    assert compare.transport_seen(plain, plain, "")[flag] is False
    assert flag not in compare.transport_seen(plain, plain, compare.KEY)
