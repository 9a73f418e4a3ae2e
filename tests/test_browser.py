"""The steppers in a real browser: JupyterLab + Debian's Chromium, driven by playwright.

Run with ``make browser`` (``.ci/run`` installs Chromium first). Opens 05-2-state-machine, runs
all cells, moves the 4/2 stepper's slider to step 5 and presses Play on the mainline stepper.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

pytestmark = pytest.mark.browser

ROOT = Path(__file__).parent.parent
CHROMIUM = Path("/usr/bin/chromium")
SCREENSHOTS = ROOT / "build" / "browser"
NOTEBOOK = "05-2-state-machine.ipynb"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A JupyterLab server on a scratch copy of the notebook, with its own config and runtime."""
    home = tmp_path_factory.mktemp("lab")
    (home / "notebooks").mkdir()
    shutil.copy(ROOT / "notebooks" / NOTEBOOK, home / "notebooks" / NOTEBOOK)
    port, token = free_port(), secrets.token_hex(16)
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(home / "config"),
        "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
        "JUPYTERLAB_WORKSPACES_DIR": str(home / "workspaces"),
    }
    server = subprocess.Popen(
        [
            sys.executable, "-m", "jupyter", "lab", "--no-browser", f"--port={port}", "--ip=127.0.0.1",
            f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={home}",
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate", "--LabApp.news_url=None",
            "--LabApp.extension_manager=readonly", "--allow-root",
        ],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{base}/api/status", params={"token": token}).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert server.poll() is None and time.monotonic() < deadline, "JupyterLab did not start"
            time.sleep(0.25)
        yield f"{base}/lab/tree/notebooks/{NOTEBOOK}?token={token}"
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()


def test_steppers_step_through_partials_in_chromium(lab: str) -> None:
    from playwright.sync_api import expect, sync_playwright

    assert CHROMIUM.exists(), "Debian's chromium is required: apt-get install chromium"
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM),
            args=["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"],
        )  # fmt: skip
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.set_default_timeout(90_000)
            page.goto(lab)
            page.locator(".jp-NotebookPanel").first.wait_for()
            # Run All only once the kernel is connected and idle, or the cells are not queued.
            expect(page.locator(".jp-StatusBar-TextItem", has_text="| Idle").first).to_be_visible()
            page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
            page.locator("li[data-command='runmenu:run-all']").click()
            expect(page.locator(".jp-InputPrompt", has_text="[1]:").first).to_be_visible()

            stepper = page.locator(".widget-vbox", has_text="诊断 fixture：index 4 / 2").first
            stepper.scroll_into_view_if_needed()
            shown = stepper.locator(".widget-html-content:visible", has_text="step")
            expect(shown).to_contain_text("step 0: start")

            handle = stepper.locator(".noUi-handle").first
            handle.focus()
            for _ in range(5):
                handle.press("ArrowRight")
            expect(shown).to_contain_text("step 5: text_delta")
            expect(shown).to_contain_text("先读，再查")
            expect(shown.locator("td", has_text="先读，再查")).to_have_attribute(
                "style", re.compile("fff3b0")
            )
            page.screenshot(path=str(SCREENSHOTS / "05-2-state-machine-step-5.png"), full_page=False)

            mainline = page.locator(".widget-vbox", has_text="主线：call-1 / index 0").first
            mainline.scroll_into_view_if_needed()
            mainline.locator(".widget-play button").first.click()  # Play: 900 ms per step
            playing = mainline.locator(".widget-html-content:visible", has_text="step")
            expect(playing).to_contain_text("step 4: done")  # Play stops at the last step
            expect(playing).to_contain_text("call-1 · read · {'path': 'README.md'}")
            page.screenshot(path=str(SCREENSHOTS / "05-2-state-machine-play.png"), full_page=False)
        except Exception:
            page.screenshot(path=str(SCREENSHOTS / "05-2-state-machine-failure.png"), full_page=False)
            raise
        finally:
            browser.close()
