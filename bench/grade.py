"""Benchmark for ``grade 05`` (``make bench``): seconds per copy, and for a class of 30 copies.

The class is 30 practice copies of independent learner solutions (tests/workflow/learners/,
alternating), all correct, so every copy runs the whole check (the 11 focused tests and the
checks beyond the chapter). Figures, all measured in this run:

* one copy graded alone (``--jobs 1``), the best of three: the record alone (table, JSON, CSV),
  and with the full check text an ``--html`` page shows (a second run of ``check`` per copy);
* the class of 30 at the default ``--jobs`` (the CPU count), the same two ways, and its seconds
  per copy;
* the ratio of the class to 30 times one copy: what running copies in parallel saves.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "workflow"))

from learners import NAMES, apply  # noqa: E402

from pi_course.course.grade import discover, grade, report_command  # noqa: E402

CLASS_SIZE = 30


def build_class(root: Path) -> Path:
    starter = root / "starter"
    made = subprocess.run(
        [sys.executable, "-m", "pi_course", "practice", "05", str(starter)],
        capture_output=True,
        text=True,
        check=False,
    )
    if made.returncode != 0:
        raise SystemExit(made.stderr)
    course = root / "class"
    course.mkdir()
    for index in range(CLASS_SIZE):
        copy = course / f"learner-{index:02d}"
        shutil.copytree(starter, copy)
        apply(copy, NAMES[index % len(NAMES)])
    return course


def timed(paths: list[Path], jobs: int, html: bool) -> tuple[float, list[str]]:
    started = time.perf_counter()
    results = grade(discover(paths), jobs=jobs, report=report_command if html else None)
    return time.perf_counter() - started, [str(graded.record["status"]) for graded in results]


def main() -> None:
    jobs = os.cpu_count() or 1
    figures: dict[bool, tuple[float, float]] = {}
    with tempfile.TemporaryDirectory(prefix="pi-course-bench-grade-") as scratch:
        course = build_class(Path(scratch))
        copies = sorted(course.iterdir())
        for html in (False, True):
            singles = []
            for copy in copies[:3]:
                seconds, statuses = timed([copy], 1, html)
                if statuses != ["done"]:
                    raise SystemExit(f"{copy.name}: {statuses}")
                singles.append(seconds)
            whole, statuses = timed([course], jobs, html)
            if statuses.count("done") != CLASS_SIZE:
                raise SystemExit(f"not every copy was done: {sorted(set(statuses))}")
            figures[html] = min(singles), whole
    print(
        f"\n5. grade 05 ({CLASS_SIZE} correct copies: every focused test and beyond check runs; {jobs} CPUs)"
    )
    for html, label in ((False, "record (table, JSON, CSV)"), (True, "with --html (full check text)")):
        one, whole = figures[html]
        print(f"   {label:<30} one copy {one:5.2f} s | class of {CLASS_SIZE} {whole:6.1f} s"
              f" = {whole / CLASS_SIZE:4.2f} s per copy | class / ({CLASS_SIZE} x one) {whole / (CLASS_SIZE * one):.2f}x")  # fmt: skip
    print(f"   --html costs {figures[True][1] / figures[False][1]:.2f}x the record alone for the class")


if __name__ == "__main__":
    main()
