"""`make lab` serves the repository root: `pi_course/*.py` sits beside the notebooks it opens.

The test takes the command `make lab` would run (``make -n``), starts it on a free loopback port
without a browser, and asks the Jupyter server what its root holds.
"""

from __future__ import annotations

import json
import os
import shlex
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]


def lab_command() -> list[str]:
    planned = subprocess.run(["make", "-n", "lab"], cwd=ROOT, capture_output=True, text=True, check=True)
    [line] = [line for line in planned.stdout.splitlines() if "jupyter lab" in line]
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
    assert command[-1] == "notebooks/05-0-overview.ipynb"
    assert ("--allow-root" in command) == (os.geteuid() == 0)


@pytest.mark.slow
def test_make_lab_serves_a_root_that_lists_the_package(tmp_path: Path) -> None:
    port, token = free_port(), "pi-course-test"
    extra = ["--no-browser", f"--ServerApp.port={port}", f"--IdentityProvider.token={token}"]
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(tmp_path), "JUPYTER_CONFIG_DIR": str(tmp_path)}
    server = subprocess.Popen(
        [*lab_command(), *extra], cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 240
        while True:
            try:
                root = contents(port, token)
                break
            except (urllib.error.URLError, ConnectionError):
                assert server.poll() is None, "jupyter lab exited"
                assert time.monotonic() < deadline, "jupyter lab did not answer within 240 s"
                time.sleep(0.3)
        names = {item["name"] for item in root["content"]}  # type: ignore[attr-defined]
        assert {"pi_course", "notebooks", "README.md"} <= names
        package = {item["name"] for item in contents(port, token, "pi_course")["content"]}  # type: ignore[attr-defined]
        assert {"protocol.py", "outbound.py", "adapter.py", "sse.py", "transport.py"} <= package
    finally:
        server.terminate()
        server.wait(timeout=30)
