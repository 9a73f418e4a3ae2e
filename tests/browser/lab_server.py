"""A JupyterLab server for the browser tests: on loopback, in a scratch home, no news, no updates."""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def lab_environment(home: Path, settings: Path | None = None) -> dict[str, str]:
    """Jupyter's data (the notebook signatures), config, runtime and settings, all inside ``home``."""
    return {
        **os.environ,
        "JUPYTER_DATA_DIR": str(home / "data"),
        "JUPYTER_CONFIG_DIR": str(home / "config"),
        "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
        "JUPYTERLAB_WORKSPACES_DIR": str(home / "workspaces"),
        "JUPYTERLAB_SETTINGS_DIR": str(settings or home / "settings"),
    }


def learner_settings(home: Path) -> Path:
    """JupyterLab settings as a learner scrolls (every cell in the DOM) and with no news toast."""
    settings = home / "settings"
    tracker = settings / "@jupyterlab" / "notebook-extension" / "tracker.jupyterlab-settings"
    tracker.parent.mkdir(parents=True)
    tracker.write_text('{"windowingMode": "none"}')
    notification = settings / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings"
    notification.parent.mkdir(parents=True)
    notification.write_text('{"fetchNews": "false", "checkForUpdates": false}')
    return settings


@dataclass
class LabServer:
    base: str
    token: str
    process: subprocess.Popen[bytes]

    def wait_until_up(self, seconds: float = 60) -> None:
        deadline = time.monotonic() + seconds
        while True:
            try:
                if httpx.get(f"{self.base}/api/status", params={"token": self.token}).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            assert self.process.poll() is None and time.monotonic() < deadline, "JupyterLab did not start"
            time.sleep(0.25)


@contextmanager
def jupyter_lab(home: Path, env: dict[str, str], *extra: str) -> Iterator[LabServer]:
    """Start JupyterLab at ``home``; the caller waits (``wait_until_up``) when it is ready to."""
    port, token = free_port(), secrets.token_hex(16)
    process = subprocess.Popen(
        [sys.executable, "-m", "jupyter", "lab", "--no-browser", f"--port={port}", "--ip=127.0.0.1",
         f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={home}",
         "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate", "--LabApp.news_url=None",
         "--LabApp.expose_app_in_browser=True", "--allow-root", *extra],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        yield LabServer(f"http://127.0.0.1:{port}", token, process)
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
