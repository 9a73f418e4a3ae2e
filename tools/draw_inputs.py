"""Draw the comparisons' inputs once (``make drawn``): pi_course/course/checker/drawn_inputs.json.

Runs ``tests/test_05_compare.py`` on the reference (which passes every input, so hypothesis draws
each comparison's whole derandomized sequence) with :data:`pi_course.course.checker.drawn.SWITCH` naming a
scratch file, then puts it in place. Run it after any edit of ``tests/test_05_compare.py``; a unit
test (tests/unit/test_drawn.py) says when the kept inputs are stale.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pi_course.course.checker import drawn  # noqa: E402


def main() -> None:
    with tempfile.TemporaryDirectory() as scratch:
        made = Path(scratch) / drawn.STORE.name
        env = dict(os.environ, **{drawn.SWITCH: str(made)})
        test = ROOT / "tests" / "test_05_compare.py"
        command = [sys.executable, "-m", "pytest", str(test), "-q", "-p", "no:cacheprovider", "-n", "0"]
        done = subprocess.run(command, cwd=ROOT, env=env, check=False)
        if done.returncode != 0 or not made.exists():
            raise SystemExit("drawn: the reference did not pass its own comparisons; nothing kept")
        store = json.loads(made.read_text(encoding="utf-8"))
        drawn.STORE.write_text(made.read_text(encoding="utf-8"), encoding="utf-8")
    count = sum(len(drawing["values"]) for drawing in store["drawings"].values())
    where = drawn.STORE.relative_to(ROOT)
    print(f"drawn: {count} inputs of {len(store['drawings'])} comparisons kept in {where}")


if __name__ == "__main__":
    main()
