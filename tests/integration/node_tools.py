"""The node side of the integration tests: tools/upstream_pi, skipped with a reason when not installed."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

TOOLS = Path(__file__).parents[2] / "tools" / "upstream_pi"
INSTALL = "npm ci --prefix tools/upstream_pi (make upstream-pi does it and runs these tests)"


def need_node_tools() -> None:
    """Skip, saying what to run, when node or the pinned npm packages are absent."""
    if shutil.which("node") is None:
        pytest.skip("node is not installed: these tests run pi-ai and the AI SDK under node")
    if not (TOOLS / "node_modules").is_dir():
        pytest.skip(f"tools/upstream_pi/node_modules is absent: run {INSTALL}")


def run_node(script: str, *args: str, timeout: float = 180) -> Any:
    """Run one of tools/upstream_pi's scripts; its stdout is JSON."""
    need_node_tools()
    done = subprocess.run(
        ["node", str(TOOLS / script), *args], capture_output=True, text=True, timeout=timeout, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)
