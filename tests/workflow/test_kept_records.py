"""What a copy keeps between checks never changes a record: every learner, typical mistake and allowed variant.

Each case is checked four times in its copy (``check 05 --json``): with hypothesis drawing the
comparisons' inputs (``PI_COURSE_DRAWN=0``: no kept input, step result or reference side applies),
with the kept inputs and nothing else kept (every step and every reference side runs), with the
step results removed but the reference's side of the transport comparisons kept
(pi_course/course/checker/refcache.py: every comparison runs again, on the kept reference side), and
with everything kept (pi_course/course/checker/stepcache.py). The four records are the same.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest
from learners import NAMES, apply, mistake
from test_allowed_variants import VARIANTS, written
from test_learners import HANGS, MISTAKES
from test_stepcache import REFERENCE_KEPT, cli

from pi_course.chapter.contract import Edit
from pi_course.course.checker import drawn, stepcache
from pi_course.course.checker.plugin_path.pi_course_check.contract import TIMEOUT_VARIABLE
from pi_course.course.copies.practice import create_practice

pytestmark = [pytest.mark.slow, pytest.mark.workflow]

CHOICES: dict[str, tuple[Edit, ...]] = {point.name: point.variant for point in VARIANTS}
CHOICES["every-allowed-choice"] = tuple(edit for point in VARIANTS for edit in point.variant)
CASES = [
    *(("learner", name) for name in NAMES),
    *(("mistake", name) for name in MISTAKES),
    *(("variant", name) for name in CHOICES),
]


@pytest.fixture(scope="module")
def starter(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return create_practice(tmp_path_factory.mktemp("starter") / "lab")


def made(starter: Path, into: Path, kind: str, name: str) -> Path:
    copy = Path(shutil.copytree(starter, into / "lab"))
    if kind == "learner":
        apply(copy, name)
    elif kind == "mistake":
        learner, module, correct, wrong, _ = MISTAKES[name]
        apply(copy, learner)
        mistake(copy, module, correct, wrong)
    else:
        written(copy, CHOICES[name])
    return copy


# Where a loop that never awaits was interrupted: wherever the alarm found it, run by run.
INTERRUPTED_AT = re.compile(r"(第 |\.py:)\d+")


def record(copy: Path, env: dict[str, str]) -> dict[str, object]:
    result = cli("check", "05", "--json", cwd=copy, env=env)
    found: dict[str, object] = json.loads(result.stdout)
    found.pop("seconds")
    text = INTERRUPTED_AT.sub(r"\1<line>", result.stderr) if TIMEOUT_VARIABLE in env else result.stderr
    return found | {"exit": result.returncode, "text": text}


@pytest.mark.parametrize(("kind", "name"), CASES, ids=[f"{kind}-{name}" for kind, name in CASES])
def test_kept_results_and_the_kept_reference_side_give_the_record_of_a_run_without_them(
    starter: Path, tmp_path: Path, kind: str, name: str
) -> None:
    copy = made(starter, tmp_path, kind, name)
    env = dict(os.environ)
    if kind == "mistake" and name in HANGS:
        env[TIMEOUT_VARIABLE] = f"{HANGS[name]:g}"
    drawing = record(copy, env | {drawn.SWITCH: "0"})  # hypothesis draws; nothing kept is under its keys
    fresh = record(copy, env)
    assert fresh == drawing
    assert fresh["status"] == ("incomplete" if kind == "mistake" else "done"), fresh
    (copy / stepcache.CACHE_FILE).unlink(missing_ok=True)
    reference_kept = (copy / REFERENCE_KEPT).is_file()
    assert record(copy, env) == fresh  # every step again, on the reference's side kept (when it ran)
    assert record(copy, env) == fresh  # the steps kept
    assert reference_kept or kind == "mistake"  # a mistake may stop the run before the transport's
