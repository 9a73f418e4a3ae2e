"""The comparisons' inputs replayed from the kept drawing give the verdicts and records hypothesis gives.

Over dan's solution and departures from it that break a comparison on its generated inputs (one per
generated comparison of ``tests/test_05_compare.py``), ``check`` runs twice in this process: with the
kept inputs (``pi_course/course/checker/drawn_inputs.json``) and with hypothesis drawing them
(``PI_COURSE_DRAWN=0``). A replayed failure is found again and shrunk by hypothesis: the same record.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from test_rules_matrix import DEPARTURES, dan, depart  # noqa: F401 - dan: the fixture

from pi_course.chapter.steps import STEPS
from pi_course.course.checker import drawn, testrun
from pi_course.course.checker.judgement import judge, record_of
from pi_course.course.running import inkernel

pytestmark = [pytest.mark.slow, pytest.mark.workflow]

# Each breaks a comparison that draws inputs: outbound, adapter, decoder, payloads, reader, requests.
GENERATED = (
    None,
    "tools-null",
    "provider-index-as-slot",
    "cr-kept-in-the-line",
    "first-tool-call-path-always",
    "usage-added-up",
    "status-not-checked",
)


TIMESTAMP = re.compile(r"timestamp=\d+")


def checked(copy: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setattr(inkernel, "in_a_tab", lambda: True)
    judgement = judge(testrun.run_tests(STEPS, copy, beyond=True))
    facts = replace(judgement.facts, output="")  # pytest's own report holds its seconds
    shown = repr({"line": judgement.line, "record": record_of(judgement, copy, 0.0), "facts": facts})
    return TIMESTAMP.sub("timestamp=<now>", shown)  # a focused test's message may show the clock


@pytest.mark.parametrize("name", GENERATED)
def test_replayed_inputs_give_the_record_hypothesis_gives(
    dan: Path,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    name: str | None,
) -> None:
    copy = tmp_path / "lab"
    shutil.copytree(dan, copy)
    for module, old, new in DEPARTURES[name][1] if name else []:
        depart(copy, module, old, new)
    replayed = checked(copy, monkeypatch)
    monkeypatch.setenv(drawn.SWITCH, "0")
    assert checked(copy, monkeypatch) == replayed
    assert ("第 05 章：完成" in replayed) == (name is None), replayed[:200]
