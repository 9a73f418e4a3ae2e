"""Upstream Pi beside the course: pi-ai's stored reading of every recording, and why it differs.

``pi_course/provider/upstream_pi.json`` is what ``tools/upstream_pi/replay.mjs`` printed; the test
marked ``node`` runs it again and fails when the stored reading is stale. The rest needs no node:
the index's ``upstream_pi`` note is ``agrees`` exactly where the two readings agree, the reasoning
pi-ai keeps in its message is the text the course sets aside, and 05-7 and the docs show the table.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from node_tools import run_node
from test_corpus import MODES, RECORDINGS, raw, read_with_pi_course

from pi_course.payload_reading import SetAside
from pi_course.provider import upstream

ROOT = Path(__file__).parents[2]
STORED = upstream.load_upstream()


@pytest.mark.node
def test_the_stored_pi_ai_reading_is_what_pi_ai_reads_now() -> None:
    fresh = run_node("replay.mjs")
    pinned = json.loads((ROOT / "tools" / "upstream_pi" / "package.json").read_text())["dependencies"]
    assert fresh["pi_ai"] == pinned["@mariozechner/pi-ai"] == STORED["pi_ai"]
    assert fresh == STORED, "stale: run `node tools/upstream_pi/replay.mjs --write` and review the diff"


def test_every_recording_has_a_pi_reading() -> None:
    assert list(STORED["readings"]) == list(RECORDINGS)


@pytest.mark.parametrize("row", upstream.compare(), ids=lambda row: row.name)
def test_the_index_says_agrees_exactly_where_the_readings_agree(row: upstream.Row) -> None:
    if row.differs:
        assert row.why != "agrees" and len(row.why) > 60, f"{row.name} differs in {row.differs}: say why"
    else:
        assert row.why == "agrees", f"{row.name}: the readings agree, the note says they differ"


def test_the_differences_are_the_known_ones() -> None:
    # Written by hand from reading the streams: a change in either reader shows up here first.
    differs = {row.name: row.differs for row in upstream.compare() if row.differs}
    assert differs == {
        "openai-refusal": ("stop_reason",),
        "openai-n3-choices": ("text",),
        "deepseek-tool-call": ("usage",),
        "mistral-thinking": ("text",),
        "openrouter-error": ("usage",),
        "xai-tool-call": ("usage",),
        "openai-text-cut": ("stop_reason",),
    }


@pytest.mark.anyio
@pytest.mark.parametrize("name", list(RECORDINGS))
async def test_the_reasoning_pi_keeps_is_the_text_the_course_sets_aside(
    name: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="pi_course.reading"):
        await read_with_pi_course([raw(name)], MODES["non_strict"])
    records = [r for r in caplog.records if r.name == "pi_course.reading"]
    set_aside: SetAside | None = records[0].set_aside if records else None  # type: ignore[attr-defined]
    ours = set_aside.reasoning() if set_aside else ""
    theirs = STORED["readings"][name]["thinking"]
    if name == "mistral-thinking":  # pi-ai makes "[object Object]" of the parts: no thinking block
        assert theirs == "" and ours.startswith("The user is asking")
    else:
        assert ours == theirs


def test_the_docs_show_the_table_rendered_now() -> None:
    docs = (ROOT / "docs" / "real-providers.md").read_text(encoding="utf-8")
    assert upstream.markdown_table() in docs
    assert STORED["pi_ai"] in docs


def test_05_7_shows_the_comparison_rendered_now() -> None:
    notebook = json.loads((ROOT / "notebooks" / "05-7-real-providers.ipynb").read_text(encoding="utf-8"))
    cells = [c for c in notebook["cells"] if "upstream_summary(" in "".join(c["source"])]
    assert len(cells) == 1, "05-7 prints pi_course.provider.upstream.upstream_summary() in one cell"
    shown = ["".join(output["data"]["text/markdown"]) for output in cells[0]["outputs"] if "data" in output]
    assert shown == [upstream.upstream_summary()]


def test_05_7_shows_the_reading_table_the_index_expects() -> None:
    from types import SimpleNamespace

    def message(expected: dict[str, Any]) -> SimpleNamespace:
        if expected["outcome"] == "accepted":
            return SimpleNamespace(stop_reason=expected["stop_reason"], error_message=None)
        return SimpleNamespace(stop_reason="error", error_message=expected["error"])

    strict = {name: message(entry["expected"]["strict"]) for name, entry in RECORDINGS.items()}
    lenient = {name: message(entry["expected"]["non_strict"]) for name, entry in RECORDINGS.items()}
    notebook = json.loads((ROOT / "notebooks" / "05-7-real-providers.ipynb").read_text(encoding="utf-8"))
    [cell] = [c for c in notebook["cells"] if "reading_table(" in "".join(c["source"])]
    shown = {
        kind: "".join(output["data"][kind])
        for output in cell["outputs"]
        if "data" in output
        for kind in ("text/markdown", "text/html")
        if kind in output["data"]
    }
    assert shown == {
        "text/markdown": upstream.reading_table(strict, lenient),
        "text/html": upstream.error_texts(strict, lenient),
    }
