"""Benchmark for ``check 05`` in a learner's loop (``make bench``): CPU seconds of the whole process tree.

A finished practice copy (tests/workflow/learners/ada) is checked as a learner checks it, with
``python -m pi_course`` run in the copy; each figure is the CPU time (user + system) of that
command and every process it started, the best of a few rounds measured in this run:

* cold: no results kept in the copy (every step runs);
* warm: run again with nothing changed (no step runs);
* one lesson file edited (a statement appended), per file: the steps that use it run again (of
  ``protocol.py``'s, the transport comparisons' reference side is kept: it reads only the given part);
* ``--step 5.3`` after an edit of ``sse.py`` and with nothing changed;
* a notebook's checkpoint cell, ``check("5.x")`` run from the copy's ``notebooks/`` after an edit
  of that step's last lesson file: the step's whole check (its focused tests, rules, comparisons
  and beyond checks, what ``--step`` runs) beside its focused tests alone (``beyond=False``).

Goal lines (issue 45): cold ≤ 4 s, warm ≤ 1 s, one file edited ≤ 3 s, ``--step`` ≤ 1.5 s.
"""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "workflow"))

from learners import apply  # noqa: E402

from pi_course.chapter.steps import STEPS  # noqa: E402
from pi_course.course.checker.stepcache import CACHE_FILE  # noqa: E402

ROUNDS = 2
GOALS = {"cold": 4.0, "warm": 1.0, "edited": 3.0, "step": 1.5}


def cpu_of(command: list[str], cwd: Path) -> float:
    """CPU seconds of ``command`` and all its children (they are waited for before it returns)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1):
        raise SystemExit(done.stderr)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def check(copy: Path, *flags: str) -> float:
    return cpu_of([sys.executable, "-m", "pi_course", "check", "05", *flags], copy)


def cell(copy: Path, step: str, beyond: bool) -> float:
    """A checkpoint cell's ``check()`` in a fresh interpreter, as a kernel that just started runs it."""
    code = f"from pi_course.course.check import check\ncheck({step!r}, beyond={beyond})"
    return cpu_of([sys.executable, "-c", code], copy / "notebooks")


def touch(copy: Path, module: str, round_: int) -> None:
    """An edit of the learner's own code: a statement appended (a comment alone changes no syntax)."""
    path = copy / "pi_course" / module
    path.write_text(path.read_text(encoding="utf-8") + f"\n_edited_{round_} = {round_}\n", encoding="utf-8")


def main() -> None:
    print(f"check 05 in a finished copy; load average {os.getloadavg()[0]:.2f} (2 cores shared)")
    lessons = sorted({Path(file).name for step in STEPS for file in step.files})
    figures: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as scratch:
        copy = Path(scratch) / "lab"
        made = subprocess.run([sys.executable, "-m", "pi_course", "practice", "05", str(copy)],
                              capture_output=True, text=True, check=False)  # fmt: skip
        if made.returncode != 0:
            raise SystemExit(made.stderr)
        apply(copy, "ada")
        for round_ in range(ROUNDS):
            shutil.rmtree(copy / CACHE_FILE.parent, ignore_errors=True)
            figures.setdefault("cold", []).append(check(copy))
            figures.setdefault("warm", []).append(check(copy))
            figures.setdefault("step warm", []).append(check(copy, "--step", "5.3"))
            for module in lessons:
                touch(copy, module, round_)
                figures.setdefault(f"edited {module}", []).append(check(copy))
            touch(copy, "sse.py", round_ + 100)
            figures.setdefault("step after sse.py", []).append(check(copy, "--step", "5.3"))
            for step in STEPS:
                for beyond in (False, True):
                    touch(copy, Path(step.files[-1]).name, round_ + 200 + beyond)
                    shown = "whole step" if beyond else "focused alone"
                    figures.setdefault(f"cell {step.number} {shown}", []).append(
                        cell(copy, step.number, beyond)
                    )
    best = {name: min(values) for name, values in figures.items()}
    for name, seconds in best.items():
        goal = next((limit for key, limit in GOALS.items() if name.startswith(key)), None)
        mark = "" if goal is None else f"  goal ≤ {goal:g} s: {'met' if seconds <= goal else 'NOT met'}"
        print(f"  {name:<24} {seconds:6.2f} s CPU (best of {ROUNDS}){mark}")


if __name__ == "__main__":
    main()
