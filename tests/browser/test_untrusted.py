"""A freshly cloned notebook is untrusted: its saved diagrams must still be drawn, as images.

JupyterLab sanitizes HTML from untrusted outputs (inline SVG is dropped) and refuses
``image/svg+xml`` there; it draws PNG. This opens the committed 05-0 and 05-3, never run and never
signed in this JupyterLab, in Debian's Chromium, and finds each diagram drawn as an ``<img>`` of
the expected size, with no "Cannot display an untrusted SVG" notice. Screenshots (light and dark)
go to build/browser/.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from lab_server import jupyter_lab, lab_environment

pytestmark = pytest.mark.browser

ROOT = Path(__file__).parents[2]
CHROMIUM = Path("/usr/bin/chromium")
SCREENSHOTS = ROOT / "build" / "browser"
DIAGRAMS = {"05-0-overview.ipynb": 1, "05-3-sse.ipynb": 1}  # notebook → diagrams it shows


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """JupyterLab over copies of the committed notebooks, with a fresh (empty) trust database."""
    home = tmp_path_factory.mktemp("untrusted")
    (home / "notebooks").mkdir()
    for name in DIAGRAMS:
        shutil.copyfile(ROOT / "notebooks" / name, home / "notebooks" / name)
    env = lab_environment(home)  # no signatures in its data folder: every notebook is untrusted
    with jupyter_lab(home, env) as server:
        server.wait_until_up()
        yield server.base, server.token


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_saved_diagrams_are_drawn_as_images_in_an_untrusted_notebook(
    lab: tuple[str, str], theme: str
) -> None:
    from playwright.sync_api import sync_playwright

    assert CHROMIUM.exists(), "Debian's chromium is required: apt-get install chromium"
    base, token = lab
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=["--no-sandbox", "--disable-gpu", "--no-first-run"]
        )
        try:
            for name, count in DIAGRAMS.items():
                page = browser.new_page(viewport={"width": 1400, "height": 1000})
                page.set_default_timeout(60_000)
                workspace = f"{name.removesuffix('.ipynb')}-{theme}"
                page.goto(f"{base}/lab/workspaces/{workspace}/tree/notebooks/{name}?reset&token={token}")
                page.locator(".jp-Notebook").first.wait_for()
                page.wait_for_function("() => window.jupyterapp && window.jupyterapp.commands")
                page.evaluate(
                    "t => window.jupyterapp.commands.execute('apputils:change-theme', {theme: t})",
                    "JupyterLab Dark" if theme == "dark" else "JupyterLab Light",
                )
                page.wait_for_function(
                    "dark => document.body.dataset.jpThemeLight === String(!dark)", arg=theme == "dark"
                )
                images = page.locator(".jp-OutputArea-output img")
                images.first.wait_for()
                found = images.evaluate_all(
                    "imgs => imgs.map(i => ({src: i.src.slice(0, 22), w: i.getBoundingClientRect().width,"
                    " h: i.getBoundingClientRect().height, done: i.complete && i.naturalWidth > 0}))"
                )
                drawn = [
                    image for image in found if image["src"].startswith("data:image/png") and image["done"]
                ]
                assert len(drawn) == count, (name, found)
                assert all(image["w"] > 400 and image["h"] > 100 for image in drawn), (name, drawn)
                assert page.get_by_text("Cannot display an untrusted SVG").count() == 0
                assert page.locator(".jp-OutputArea-output svg text").count() == 0  # no inline SVG left
                images.first.scroll_into_view_if_needed()
                page.screenshot(path=str(SCREENSHOTS / f"untrusted-{workspace}.png"))
                page.close()
        finally:
            browser.close()
