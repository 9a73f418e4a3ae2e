"""The kept drawing of the comparisons' inputs (pi_course/course/checker/drawn.py): fresh, faithful, refused when it cannot stand."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from pi_course import AbortError, AgentContext, SSEEvent, TextContent, ToolCall, UserMessage
from pi_course.course.checker import drawn
from pi_course.protocol import ToolDefinition

COMPARE = Path(__file__).resolve().parents[1] / "test_05_compare.py"


def test_the_kept_inputs_are_drawn_from_this_test_file() -> None:
    store = json.loads(drawn.STORE.read_text(encoding="utf-8"))
    assert store["facts"] == drawn.facts(COMPARE), (
        "tests/test_05_compare.py changed since its inputs were drawn: run `make drawn`"
    )
    sites = {where.partition(":")[0] for where in store["drawings"]}
    calls = COMPARE.read_text(encoding="utf-8").count("on_generated(") - 1  # less its definition
    assert len(store["drawings"]) == calls, f"a drawing was not kept (make drawn says why): {sorted(sites)}"


def test_every_kept_drawing_replays(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = importlib.util.spec_from_file_location(COMPARE.stem, COMPARE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, COMPARE.stem, module)  # its classes (Exchange …) are named in it
    spec.loader.exec_module(module)
    store = json.loads(drawn.STORE.read_text(encoding="utf-8"))
    for where, drawing in store["drawings"].items():
        values = drawn.replay(where, COMPARE)
        assert values is not None and len(values) == len(drawing["values"]) > 0, where


VALUES = [
    AgentContext(
        (UserMessage((TextContent("读"),), 1),),
        system_prompt=None,
        tools=(ToolDefinition("read", "d", {"a": [1, 2.5, None, -0.0]}),),
    ),
    (ToolCall("c", "n", {"k": (1,)}, None), AbortError(), RuntimeError()),
    [SSEEvent("data"), b"\x00\xff", {1: "int key", "s": True}, float("inf")],
]


@pytest.mark.parametrize("value", VALUES, ids=["context", "calls-and-errors", "events-bytes-keys"])
def test_a_value_comes_back_the_same_and_fresh(value: object) -> None:
    signatures: dict[str, object] = {}
    tree = json.loads(json.dumps(drawn.encode(value, signatures)))
    back = drawn.decode(tree, drawn._classes(signatures))
    assert repr(back) == repr(value)
    assert back is not value


def test_a_class_called_differently_now_is_not_replayed(monkeypatch: pytest.MonkeyPatch) -> None:
    signatures: dict[str, object] = {}
    drawn.encode(ToolDefinition("read", "d", {}), signatures)
    (ref,) = signatures
    signatures[ref] = [["name", "POSITIONAL_OR_KEYWORD", "<class 'inspect._empty'>"]]
    with pytest.raises(drawn.NotKept):
        drawn._classes(signatures)


def test_a_value_without_an_encoding_is_refused() -> None:
    with pytest.raises(drawn.NotKept):
        drawn.encode(object(), {})
    with pytest.raises(drawn.NotKept):
        drawn.encode({1, 2}, {})


def test_the_switch_and_another_test_file_draw_again(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    where = next(iter(json.loads(drawn.STORE.read_text(encoding="utf-8"))["drawings"]))
    other = tmp_path / "test_05_compare.py"
    other.write_text(COMPARE.read_text(encoding="utf-8") + "\n# edited\n", encoding="utf-8")
    assert drawn.replay(where, other) is None
    monkeypatch.setenv(drawn.SWITCH, "0")
    assert drawn.replay(where, COMPARE) is None


def test_hypothesis_draws_without_the_local_code_s_constants_and_gets_them_back_after() -> None:
    from hypothesis.internal.conjecture import providers

    before = providers._get_local_constants
    with drawn.same_inputs_everywhere():
        assert providers._get_local_constants().strings == set()
    assert providers._get_local_constants is before
