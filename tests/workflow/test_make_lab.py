"""JupyterLab as a newcomer starts it: `make lab` in the clone, and a practice copy's own commands.

Each serves the folder it is started in (`pi_course/*.py` beside `notebooks/`) and lands on 05-0,
both in the browser it opens (Jupyter's redirect file) and at the URL it prints (a machine with no
browser). The tests take the commands as the learner reads them (``make -n lab``, ``practice``'s
closing lines, the copy's ``LEARNING.md``), start each on a free loopback port without a browser,
and ask the Jupyter server what its root holds and where it sends the learner.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
BIN = Path(sys.executable).parent
START = "/lab/tree/notebooks/05-0-overview.ipynb"
LESSON = {"protocol.py", "outbound.py", "adapter.py", "sse.py", "transport.py"}


def lab_command() -> list[str]:
    planned = subprocess.run(["make", "-n", "lab"], cwd=ROOT, capture_output=True, text=True, check=True)
    [line] = [line for line in planned.stdout.splitlines() if "jupyter lab" in line and "echo" not in line]
    return shlex.split(line)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def contents(port: int, token: str, path: str = "") -> dict[str, object]:
    url = f"http://127.0.0.1:{port}/api/contents/{path}?token={token}"
    with urllib.request.urlopen(url, timeout=5) as response:
        value = json.load(response)
    assert isinstance(value, dict)
    return value


def test_make_lab_opens_05_0_at_the_repository_root() -> None:
    command = lab_command()
    assert f"--LabApp.default_url={START}" in command
    assert "--ServerApp.root_dir=." in command
    assert ("--allow-root" in command) == (os.geteuid() == 0)


def test_the_first_install_says_what_it_does_before_each_silent_step() -> None:
    """`make lab` on a fresh clone: a line before the venv, before pip, and before the long install."""
    planned = subprocess.run(
        ["make", "-n", "-B", ".venv/.installed"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    install = next(index for index, line in enumerate(planned) if 'pip install --quiet -e ".[dev]"' in line)
    venv = next(index for index, line in enumerate(planned) if "-m venv" in line)
    said = [line for line in planned[:install] if line.startswith("echo ")]
    assert any("创建 .venv" in line for line in planned[:venv]), planned
    assert said and "大约一分钟" in said[-1] and "装进 .venv" in said[-1], planned
    assert any(line.startswith("echo ") and "准备好了" in line for line in planned[install:]), planned


@contextlib.contextmanager
def serve(command: list[str], cwd: Path, home: Path, path_dirs: list[str]) -> Iterator[tuple[int, str, str]]:
    """Run a JupyterLab command without a browser until it answers: its port, token, and the URLs it
    printed and would open (its log and Jupyter's redirect file)."""
    port, token = free_port(), "pi-course-test"
    extra = ["--no-browser", f"--ServerApp.port={port}", f"--IdentityProvider.token={token}"]
    if os.geteuid() == 0 and "--allow-root" not in command:
        extra.append("--allow-root")
    env = {
        **os.environ,
        "PATH": os.pathsep.join(path_dirs),
        "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
        "JUPYTER_CONFIG_DIR": str(home / "config"),
        "JUPYTERLAB_WORKSPACES_DIR": str(home / "workspaces"),
    }
    log = home / "lab.log"
    with log.open("w") as sink:
        server = subprocess.Popen([*command, *extra], cwd=cwd, env=env, stdout=sink, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 240
        while "?token=" not in log.read_text() or not list((home / "runtime").glob("jpserver-*-open.html")):
            assert server.poll() is None, f"jupyter lab exited:\n{log.read_text()}"
            assert time.monotonic() < deadline, "jupyter lab did not start within 240 s"
            time.sleep(0.3)
        while True:
            try:
                contents(port, token)
                break
            except (urllib.error.URLError, ConnectionError):
                assert server.poll() is None, f"jupyter lab exited:\n{log.read_text()}"
                assert time.monotonic() < deadline, "jupyter lab did not answer within 240 s"
                time.sleep(0.3)
        opened = "".join(path.read_text() for path in (home / "runtime").glob("jpserver-*-open.html"))
        yield port, token, log.read_text() + opened
    finally:
        server.terminate()
        server.wait(timeout=30)


def assert_at_the_root_on_05_0(port: int, token: str, printed: str) -> None:
    """The root lists pi_course/ (with the lesson files) beside notebooks/; every URL goes to 05-0."""
    names = {item["name"] for item in contents(port, token)["content"]}  # type: ignore[attr-defined]
    assert {"pi_course", "notebooks"} <= names
    package = {item["name"] for item in contents(port, token, "pi_course")["content"]}  # type: ignore[attr-defined]
    assert package >= LESSON
    assert contents(port, token, START.removeprefix("/lab/tree/"))["type"] == "notebook"
    shown = re.findall(r"http://(?:127\.0\.0\.1|localhost):\d+(/\S*?)\?token=", printed)
    assert shown and set(shown) == {START}, printed  # printed and opened: 05-0, never the Launcher


@pytest.mark.slow
def test_make_lab_serves_a_root_that_lists_the_package_and_lands_on_05_0(tmp_path: Path) -> None:
    with serve(lab_command(), ROOT, tmp_path, os.environ["PATH"].split(os.pathsep)) as (port, token, printed):
        assert_at_the_root_on_05_0(port, token, printed)
        assert "README.md" in {item["name"] for item in contents(port, token)["content"]}  # type: ignore[attr-defined]


@pytest.fixture(scope="module")
def copy(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A fresh practice copy made by the venv's Python named by path, and what ``practice`` printed."""
    target = tmp_path_factory.mktemp("learner") / "pi-05"
    made = subprocess.run(
        [sys.executable, "-m", "pi_course", "practice", "05", str(target)],
        capture_output=True, text=True, check=True, timeout=300,
        env={**os.environ, "PATH": "/usr/bin:/bin"},  # the venv not activated: `python` is another one
    )  # fmt: skip
    return target, made.stdout


def printed_command(printed: str, what: str) -> list[str]:
    [line] = [line for line in printed.splitlines() if what in line]
    return shlex.split(line.split("#")[0])


@pytest.mark.slow
def test_the_copy_by_path_as_practice_prints_it(copy: tuple[Path, str], tmp_path: Path) -> None:
    """Without an activated venv: ``/path/.venv/bin/python -m jupyter lab …`` really starts, at the copy."""
    target, printed = copy
    command = printed_command(printed, "-m jupyter")
    assert command[0] == str(Path(sys.executable).absolute()), printed  # the Python that has the course
    with serve(command, target, tmp_path, ["/usr/bin", "/bin"]) as served:  # no venv on PATH: no `jupyter`
        assert_at_the_root_on_05_0(*served)


@pytest.mark.slow
def test_the_copy_activated_as_learning_md_says(copy: tuple[Path, str], tmp_path: Path) -> None:
    """With the venv activated: the ``jupyter lab …`` line of the copy's LEARNING.md."""
    target, _ = copy
    learning = (target / "LEARNING.md").read_text(encoding="utf-8")
    [line] = [line for line in learning.splitlines() if line.startswith("jupyter lab ")]
    with serve(shlex.split(line.split("#")[0]), target, tmp_path, [str(BIN), "/usr/bin", "/bin"]) as served:
        assert_at_the_root_on_05_0(*served)
