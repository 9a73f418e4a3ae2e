"""Notebook hygiene: the committed outputs are real, complete and reproducible."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).parent.parent / "notebooks").glob("*.ipynb"))
EXPECTED = [
    "05-0-overview.ipynb",
    "05-1-outbound.ipynb",
    "05-2-state-machine.ipynb",
    "05-3-sse.ipynb",
    "05-4-http-and-redaction.ipynb",
    "05-5-break-it.ipynb",
    "05-6-migration.ipynb",
]
VARIABLE = {
    "an absolute path": re.compile(r"(?<![\w.])/(?:home|root|tmp|work|Users|var|opt)/|[A-Z]:\\\\"),
    "a memory address": re.compile(r"\b0x[0-9a-f]{6,}\b"),
    "a loopback port": re.compile(r"127\.0\.0\.1:\d+|localhost:\d+"),
    "a timestamp": re.compile(r"\b20\d\d-\d\d-\d\d[T ]\d\d:\d\d"),
    "a timing": re.compile(r"\b\d+(?:\.\d+)?\s?(?:ms|µs|seconds?)\b"),
}


def test_the_series_is_complete() -> None:
    assert [path.name for path in NOTEBOOKS] == EXPECTED


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.stem)
def test_executed_top_to_bottom_without_errors(path: Path) -> None:
    notebook = json.loads(path.read_text(encoding="utf-8"))
    assert notebook["metadata"]["kernelspec"]["name"] == "python3"
    code = [cell for cell in notebook["cells"] if cell["cell_type"] == "code"]
    assert [cell["execution_count"] for cell in code] == list(range(1, len(code) + 1))
    outputs = [output for cell in code for output in cell["outputs"]]
    assert not [output for output in outputs if output["output_type"] == "error"]
    assert not [output for output in outputs if output.get("name") == "stderr"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.stem)
def test_checked_outputs_hold_nothing_machine_specific(path: Path) -> None:
    notebook = json.loads(path.read_text(encoding="utf-8"))
    for cell in notebook["cells"]:
        source = "".join(cell["source"])
        if cell["cell_type"] != "code" or "NBVAL_IGNORE_OUTPUT" in source:
            continue
        for output in cell["outputs"]:
            texts = [output.get("text", "")] + [
                value for mime, value in output.get("data", {}).items() if mime.startswith("text/")
            ]
            text = "".join("".join(t) if isinstance(t, list) else t for t in texts)
            for what, pattern in VARIABLE.items():
                assert not pattern.search(text), f"{path.name}: {what} in output of {source[:60]!r}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.stem)
def test_practice_notebooks_end_with_their_checkpoint(path: Path) -> None:
    notebook = json.loads(path.read_text(encoding="utf-8"))
    code = [cell for cell in notebook["cells"] if cell["cell_type"] == "code"]
    first = "".join(code[0]["source"])
    assert "describe_edition()" in first  # says which pi_course it uses
    step = {"05-1": "5.1", "05-2": "5.2", "05-3": "5.3", "05-4": "5.4"}.get(path.name[:4])
    if step is None:
        return
    last = "".join(code[-1]["source"]) if step != "5.4" else "".join(code[-2]["source"])
    assert f'check("{step}")' in last
    expected = {"5.1": "1/1 通过", "5.2": "3/3 通过", "5.3": "5/5 通过", "5.4": "2/2 通过"}[step]
    printed = "".join("".join(output.get("text", "")) for cell in code[-2:] for output in cell["outputs"])
    assert expected in printed
    if step == "5.4":
        assert "第 05 章聚焦测试：11/11" in printed


def test_widget_state_is_saved_where_steppers_are_shown() -> None:
    for path in NOTEBOOKS:
        notebook = json.loads(path.read_text(encoding="utf-8"))
        shows_widget = any(
            "application/vnd.jupyter.widget-view+json" in output.get("data", {})
            for cell in notebook["cells"]
            for output in cell.get("outputs", [])
        )
        if shows_widget:
            state = notebook["metadata"]["widgets"]["application/vnd.jupyter.widget-state+json"]
            assert state["state"], path.name
