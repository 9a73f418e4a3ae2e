"""Benchmark for ``grade 05`` (``make bench``): seconds per copy, and for a class of 30 copies.

The class is 30 practice copies of independent learner solutions (tests/workflow/learners/,
alternating), all correct, so every copy runs the whole check (the 11 focused tests and the
checks beyond the chapter). Figures, all measured in this run:

* one copy graded alone (``--jobs 1``), the best of three (one ``check 05 --json`` run gives the
  record and the full text an ``--html`` page shows);
* the class of 30 at the default ``--jobs`` (the CPU count), and its seconds per copy;
* the ratio of the class to 30 times one copy: what running copies in parallel saves;
* the same class with ``--sandbox none``, and the sandbox's overhead per copy (bubblewrap's
  namespaces and mounts), when bubblewrap is installed.
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

from pi_course.course.grade import Sandbox, choose, discover, grade  # noqa: E402

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


def timed(paths: list[Path], jobs: int, sandbox: Sandbox) -> tuple[float, list[str]]:
    started = time.perf_counter()
    results = grade(discover(paths), jobs=jobs, sandbox=sandbox)
    return time.perf_counter() - started, [str(graded.record["status"]) for graded in results]


def main() -> None:
    jobs = os.cpu_count() or 1
    sandbox = choose("auto")
    kinds = [sandbox, Sandbox("none")] if sandbox.sandboxed else [sandbox]
    figures = {}
    with tempfile.TemporaryDirectory(prefix="pi-course-bench-grade-") as scratch:
        course = build_class(Path(scratch))
        copies = sorted(course.iterdir())
        for kind in kinds:
            singles = []
            for copy in copies[:3]:
                seconds, statuses = timed([copy], 1, kind)
                if statuses != ["done"]:
                    raise SystemExit(f"{copy.name}: {statuses}")
                singles.append(seconds)
            whole, statuses = timed([course], jobs, kind)
            if statuses.count("done") != CLASS_SIZE:
                raise SystemExit(f"not every copy was done: {sorted(set(statuses))}")
            figures[kind.kind] = (min(singles), whole)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"\n5. grade 05 ({CLASS_SIZE} correct copies: every focused test and beyond check runs; {jobs} CPUs,"
        f" load {load:.1f})"
    )
    for kind, (one, whole) in figures.items():
        print(f"   {kind:5} one copy {one:5.2f} s | class of {CLASS_SIZE} {whole:6.1f} s = {whole / CLASS_SIZE:4.2f} s"
              f" per copy | class / ({CLASS_SIZE} x one) {whole / (CLASS_SIZE * one):.2f}x")  # fmt: skip
    if len(figures) == 2:
        (one_box, whole_box), (one_bare, whole_bare) = figures["bwrap"], figures["none"]
        print(f"   sandbox: one copy {one_box / one_bare:.2f}x | class {whole_box / whole_bare:.2f}x"
              f" | {(whole_box - whole_bare) / CLASS_SIZE:+.2f} s per copy at --jobs {jobs}")  # fmt: skip


if __name__ == "__main__":
    main()
