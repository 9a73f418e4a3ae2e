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
from contextlib import contextmanager
from pathlib import Path

import pytest
from lab_server import jupyter_lab, lab_environment, learner_settings
from test_browser import RUN_ALL

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


# --- every notebook as a learner first sees it: untrusted, light and dark; a copy mid-way 5.1 -----

VIEWPORT = {"width": 1400, "height": 1000}
NOTEBOOKS = sorted(path.name for path in (ROOT / "notebooks").glob("*.ipynb"))
PRACTICE = (
    "05-1-outbound.ipynb",
    "05-2-state-machine.ipynb",
    "05-3-sse.ipynb",
    "05-4-http-and-redaction.ipynb",
)

# Heights of the outputs a reader scrolls past: the static stepper tables and the 预期输出 boxes.
HEIGHTS = """() => [...document.querySelectorAll('.jp-OutputArea-output')]
  .filter(o => o.querySelector('.pi-static') || o.textContent.includes('预期输出（参考实现的真实输出）'))
  .map(o => ({height: Math.round(o.getBoundingClientRect().height), text: o.textContent.slice(0, 60)}))"""


@pytest.fixture(scope="module")
def seen(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str, Path]]:
    """JupyterLab over untrusted copies of every notebook and a practice copy with half of 5.1 written."""
    import subprocess
    import sys

    sys.path.insert(0, str(ROOT / "tests" / "workflow"))
    from test_stages import apply_steps

    home = tmp_path_factory.mktemp("seen")
    shutil.copytree(ROOT / "notebooks", home / "notebooks")
    for name in ("pi_course", "tests"):
        (home / name).symlink_to(ROOT / name)
    copy = home / "practice"
    made = subprocess.run(
        [sys.executable, "-m", "pi_course", "practice", "05", str(copy)], capture_output=True, text=True
    )
    assert made.returncode == 0, made.stderr
    apply_steps(copy, "bo", ("5.1",))  # then take back outbound.py: protocol done, the wire not yet
    starter = subprocess.run(
        [sys.executable, "-m", "pi_course", "practice", "05", str(home / "starter")], capture_output=True
    )
    assert starter.returncode == 0
    shutil.copyfile(home / "starter" / "pi_course" / "outbound.py", copy / "pi_course" / "outbound.py")
    settings = learner_settings(home)
    env = lab_environment(home, settings)  # no signatures: every notebook is untrusted
    with jupyter_lab(home, env) as server:
        server.wait_until_up()
        yield server.base, server.token, home


@contextmanager
def _chromium() -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=["--no-sandbox", "--disable-gpu", "--no-first-run"]
        )
        try:
            yield browser
        finally:
            browser.close()


def _open(browser: object, base: str, token: str, path: str, workspace: str, dark: bool) -> object:
    page = browser.new_page(viewport=VIEWPORT)  # type: ignore[attr-defined]
    page.set_default_timeout(60_000)
    page.goto(f"{base}/lab/workspaces/{workspace}/tree/{path}?reset&token={token}")
    try:
        page.locator(".jp-Notebook").first.wait_for()
    except Exception:
        page.screenshot(path=str(SCREENSHOTS / f"{workspace}-failed-to-open.png"))
        raise
    page.wait_for_function("() => window.jupyterapp && window.jupyterapp.commands")
    theme = "JupyterLab Dark" if dark else "JupyterLab Light"
    page.evaluate("t => window.jupyterapp.commands.execute('apputils:change-theme', {theme: t})", theme)
    page.wait_for_function("dark => document.body.dataset.jpThemeLight === String(!dark)", arg=dark)
    return page


def _shots(page: object, stem: str) -> None:
    """The top of the notebook, then each tall output, each on its own screenshot."""
    page.screenshot(path=str(SCREENSHOTS / f"{stem}-top.png"))  # type: ignore[attr-defined]
    outputs = page.locator(".jp-OutputArea-output:has(.pi-static)")  # type: ignore[attr-defined]
    for number in range(outputs.count()):
        outputs.nth(number).scroll_into_view_if_needed()
        page.screenshot(path=str(SCREENSHOTS / f"{stem}-table-{number + 1}.png"))  # type: ignore[attr-defined]


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_untrusted_static_tables_fit_one_screen(seen: tuple[str, str, Path], theme: str) -> None:
    base, token, _ = seen
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    tall = []
    with _chromium() as browser:
        for name in NOTEBOOKS:
            stem = f"seen-{name.removesuffix('.ipynb')}-untrusted-{theme}"
            page = _open(browser, base, token, f"notebooks/{name}", stem, theme == "dark")
            page.wait_for_timeout(500)
            heights = page.evaluate(HEIGHTS)
            tall += [(name, found) for found in heights if found["height"] > VIEWPORT["height"] - 100]
            _shots(page, stem)
            page.close()
    assert not tall, tall


def test_a_practice_copy_mid_way_5_1_runs_every_notebook_without_an_error(
    seen: tuple[str, str, Path],
) -> None:
    base, token, _ = seen
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    problems, seconds = [], {}
    with _chromium() as browser:
        for name in NOTEBOOKS:
            stem = f"seen-practice-half-51-{name.removesuffix('.ipynb')}"
            page = _open(browser, base, token, f"practice/notebooks/{name}", stem, False)
            result = page.evaluate(RUN_ALL)
            seconds[name] = result["seconds"]
            problems += [f"{name} {error}" for error in result["errors"]]
            text = page.locator(".jp-Notebook").inner_text()
            for bad in ("Traceback", "RuntimeWarning", "can't start new thread"):
                if bad in text:
                    problems.append(f"{name}: {bad}")
            heights = page.evaluate(HEIGHTS)
            problems += [
                f"{name}: {found}" for found in heights if found["height"] > VIEWPORT["height"] - 100
            ]
            if name in PRACTICE and "先完成实践 5.1" not in text:
                problems.append(f"{name}: no cell names 5.1")
            _shots(page, stem)
            page.close()
    with _chromium() as browser:  # the same notebooks in the clone, for comparison
        reference = {}
        for name in NOTEBOOKS:
            stem = f"seen-reference-run-{name.removesuffix('.ipynb')}"
            page = _open(browser, base, token, f"notebooks/{name}", stem, False)
            result = page.evaluate(RUN_ALL)
            reference[name] = result["seconds"]
            problems += [f"reference {name} {error}" for error in result["errors"]]
            page.close()
    print("Run All seconds, reference:", reference)
    print("Run All seconds, practice copy mid-way 5.1:", seconds)
    assert not problems, problems
