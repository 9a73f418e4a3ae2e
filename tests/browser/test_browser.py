"""Every notebook in a real browser: JupyterLab + Debian's Chromium, driven by playwright.

Run with ``make browser`` (``.ci/run`` installs Chromium first). For each notebook in notebooks/
(a scratch copy; the repository's files are never saved over) it runs all cells, asserts that no
cell has an error output, checks that each stepper shows once (the live widget; its static table is
hidden) and steps every stepper to its last step, asserting what the pages show: the Provider
index and the tool_buffers table (PartialStepper), the blank-line mark and the empty-buffer label
(SSEBufferStepper), and that stepping keeps the stepper's size and its columns' positions (the
bounding boxes of every step are equal). Then one stepper is shown in the dark theme and the
highlighted row's text contrast is computed from the page's computed styles (at least 4.5:1).
Screenshots go to build/browser/.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import nbformat
import pytest
from lab_server import jupyter_lab, lab_environment, learner_settings

pytestmark = pytest.mark.browser

ROOT = Path(__file__).parents[2]
CHROMIUM = Path("/usr/bin/chromium")
SCREENSHOTS = ROOT / "build" / "browser"
NOTEBOOKS = sorted(path.name for path in (ROOT / "notebooks").glob("*.ipynb"))
SKIP = {"notebooks", ".git", ".venv", "build", ".pytest_cache", ".mypy_cache", ".ruff_cache"}


@dataclass
class Lab:
    base: str
    token: str

    def url(self, notebook: str, folder: str = "notebooks") -> str:
        # One workspace per notebook: several are open at once, each in its own page.
        workspace = notebook.removesuffix(".ipynb")
        return f"{self.base}/lab/workspaces/{workspace}/tree/{folder}/{notebook}?reset&token={self.token}"

    def shutdown_kernels(self) -> None:
        headers = {"Authorization": f"token {self.token}"}
        for kernel in httpx.get(f"{self.base}/api/kernels", headers=headers).json():
            httpx.delete(f"{self.base}/api/kernels/{kernel['id']}", headers=headers)


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """JupyterLab on a scratch copy of notebooks/, beside links to the rest of the repository."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    for old in SCREENSHOTS.glob("*.png"):
        old.unlink()
    home = tmp_path_factory.mktemp("lab")
    shutil.copytree(
        ROOT / "notebooks", home / "notebooks", ignore=shutil.ignore_patterns(".ipynb_checkpoints")
    )
    for entry in ROOT.iterdir():
        if entry.name not in SKIP:
            (home / entry.name).symlink_to(entry)
    settings = learner_settings(home)
    env = lab_environment(home, settings)  # its data folder holds the signatures `jupyter trust` writes
    with jupyter_lab(home, env, "--LabApp.extension_manager=readonly") as server:
        # While the server starts: an executed notebook with saved widget state, signed, and a copy
        # that is not. Lab renders widgets only in trusted output (File → Trust Notebook).
        saved = home / "saved" / "steppers.ipynb"
        saved_state_notebook(saved)
        copy = nbformat.read(saved, as_version=4)
        copy.metadata["copy"] = "untrusted"  # another digest: the signature below does not cover it
        nbformat.write(copy, saved.with_name("untrusted.ipynb"))  # as a fresh clone: never signed here
        trust = [sys.executable, "-m", "jupyter", "trust", str(saved)]
        subprocess.run(trust, env=env, check=True, capture_output=True)
        server.wait_until_up()
        yield Lab(server.base, server.token)


SAVED_STATE_SOURCE = """\
from pi_course.chapter.fixtures import DIAGNOSTIC_4_2_CHUNKS, MAINLINE_CHUNKS
from pi_course.notebook.widgets import PartialStepper, SSEBufferStepper

await PartialStepper.replay(MAINLINE_CHUNKS, "主线（保存的 widget 状态）")
"""
DIAGNOSTIC_SOURCE = 'await PartialStepper.replay(DIAGNOSTIC_4_2_CHUNKS, "诊断 fixture：index 4 / 2")'

#: A stepper must fit this height at both widths (a 900 px window shows about 780 px of notebook).
MAX_HEIGHT = 760
WIDTHS = (1000, 1400)


def saved_state_notebook(path: Path) -> None:
    """A notebook executed by nbclient with its widget state saved, as `make notebooks` stores them."""
    from nbclient import NotebookClient

    cells = [
        nbformat.v4.new_code_cell(SAVED_STATE_SOURCE),
        nbformat.v4.new_code_cell("SSEBufferStepper.mainline()"),
        nbformat.v4.new_code_cell(DIAGNOSTIC_SOURCE),
    ]
    notebook = nbformat.v4.new_notebook(cells=cells)
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    NotebookClient(notebook, kernel_name="python3", store_widget_state=True).execute()
    path.parent.mkdir(parents=True)
    nbformat.write(notebook, path)


# JavaScript run in the page (window.jupyterapp: --LabApp.expose_app_in_browser) --------------------

RUN_ALL = """async () => {
  const app = window.jupyterapp;
  const panel = app.shell.currentWidget;
  await panel.context.ready;
  await panel.sessionContext.ready;
  const deadline = Date.now() + 60000;
  while (panel.sessionContext.session?.kernel?.status !== 'idle' && Date.now() < deadline) {
    await new Promise(resolve => setTimeout(resolve, 100));
  }
  const started = Date.now();
  await app.commands.execute('notebook:run-all-cells');
  const seconds = (Date.now() - started) / 1000;
  const errors = [], unrun = [];
  const cells = panel.content.model.cells;
  for (let i = 0; i < cells.length; i++) {
    const cell = cells.get(i);
    if (cell.type !== 'code') continue;
    if (cell.executionCount === null && cell.sharedModel.getSource().trim()) unrun.push(i);
    for (const output of cell.outputs.toJSON()) {
      if (output.output_type === 'error') errors.push(`cell ${i}: ${output.ename}: ${output.evalue}`);
    }
  }
  return {errors, unrun, count: cells.length, seconds};
}"""

# WCAG contrast of every visible highlighted cell: colours resolved by a canvas, so any CSS colour
# syntax (rgb, color(srgb …), color-mix) works; translucent backgrounds are composited upwards.
CONTRAST = """(selector) => {
  const canvas = document.createElement('canvas');
  canvas.width = canvas.height = 1;
  const ctx = canvas.getContext('2d', {willReadFrequently: true});
  const rgba = (css) => {
    ctx.clearRect(0, 0, 1, 1);
    ctx.fillStyle = '#000';
    ctx.fillStyle = css;
    ctx.fillRect(0, 0, 1, 1);
    const [r, g, b, a] = ctx.getImageData(0, 0, 1, 1).data;
    return [r, g, b, a / 255];
  };
  const over = (top, bottom) => top.slice(0, 3).map((c, i) => c * top[3] + bottom[i] * (1 - top[3]));
  const background = (element) => {
    const layers = [];
    for (let node = element; node && node.nodeType === 1; node = node.parentElement) {
      const colour = rgba(getComputedStyle(node).backgroundColor);
      if (colour[3] > 0) layers.push(colour);
      if (colour[3] >= 1) break;
    }
    let result = [255, 255, 255];
    for (const layer of layers.reverse()) result = over(layer, result);
    return result;
  };
  const luminance = (rgb) => {
    const [r, g, b] = rgb.map(c => { c /= 255; return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4; });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  const results = [];
  for (const cell of document.querySelectorAll(selector)) {
    if (!cell.offsetParent) continue;
    const bg = background(cell);
    const fg = over(rgba(getComputedStyle(cell).color), bg);
    const [hi, lo] = [luminance(fg), luminance(bg)].sort((a, b) => b - a);
    results.push({text: cell.innerText.slice(0, 40), fg, bg, ratio: (hi + 0.05) / (lo + 0.05)});
  }
  return results;
}"""


@dataclass
class Seen:
    """What the steppers showed across all notebooks."""

    partial: list[str] = field(default_factory=list)  # notebook names
    sse: list[str] = field(default_factory=list)
    provider_indexes: set[str] = field(default_factory=set)
    dark_done: bool = False
    report: list[str] = field(default_factory=list)


# The stepper's size and its columns' boxes relative to it, in CSS pixels.
BOXES = """(stepper) => {
  const page = [...stepper.querySelectorAll('.pi-page')].find(p => p.offsetParent);
  const outer = stepper.getBoundingClientRect();
  const box = (e) => {
    const r = e.getBoundingClientRect();
    return [r.x - outer.x, r.y - outer.y, r.width, r.height].map(Math.round);
  };
  return {stepper: [Math.round(outer.width), Math.round(outer.height)],
          page: box(page), steps: box(page.querySelector('.pi-steps-col')),
          detail: box(page.querySelector('.pi-detail-col'))};
}"""


def step_through(page: Any, stepper: Any, shot: Path, report: list[str] | None = None) -> list[str]:
    """Move the slider one step at a time; return each visible page's text.

    Every step keeps the stepper's size and its two columns where they were (nothing below it
    jumps, nothing moves sideways); the boxes go to ``report``. Screenshots: ``shot`` at the
    fourth step (PartialStepper: step 3; SSEBufferStepper: read 4 — and reads 5 and 7, several
    events in one read and the cut character) and at the last step.
    """
    from playwright.sync_api import expect

    stepper.scroll_into_view_if_needed()
    handle = stepper.locator(".noUi-handle").first
    first = round(float(handle.get_attribute("aria-valuemin") or "0"))
    last = round(float(handle.get_attribute("aria-valuemax") or "0"))
    visible = stepper.locator(".pi-page:visible")
    texts, boxes = [], []
    handle.focus()
    for number in range(first, last + 1):
        if number > first:
            handle.press("ArrowRight")
        current = visible.locator("tr.pi-current")
        expect(current).to_have_count(1)
        expect(current).to_contain_text(f"▶ {number}")
        texts.append(visible.inner_text())
        boxes.append(stepper.evaluate(BOXES))
        if number == min(first + 3, last):
            stepper.screenshot(path=str(shot))
        elif number == last or (first == 1 and number in (5, 7)):
            stepper.screenshot(path=str(shot.with_name(shot.name.replace("-light", f"-at-{number}-light"))))
    if report is not None:
        report.append(f"{shot.stem}: every step {boxes[0]}")
    assert boxes[0]["stepper"][1] <= MAX_HEIGHT, (shot.stem, "taller than the window shows", boxes[0])
    moved = [(number, box) for number, box in enumerate(boxes, start=first) if box != boxes[0]]
    assert not moved, (shot.stem, "layout moved while stepping", boxes[0], moved[:3])
    return texts


def check_partial(texts: list[str], stepper: Any, notebook: str, seen: Seen) -> None:
    joined = "\n".join(texts)
    assert "tool_buffers" in joined and ("partial.content" in joined or "最终 content" in joined), notebook
    seen.provider_indexes.update(
        line.split("Provider index ")[1].split()[0]
        for line in joined.splitlines()
        if "Provider index " in line
    )
    if "不存在" in joined:  # 05-5's broken run names slot 4 while content has one slot
        assert "content[4] 不存在" in joined and "只有 1 个槽位" in joined, notebook
        return
    if "Provider index 4" in joined and "Provider index 2" in joined:
        # the 4/2 diagnostic: Provider index 4 and 2 in the tool_buffers table
        buffers = stepper.locator(".pi-page:visible .pi-detail-col .pi-cur table").first
        expect_rows = buffers.locator("tr")
        assert expect_rows.count() == 3, notebook  # header, Provider index 4, Provider index 2
        assert [expect_rows.nth(i).locator("td").first.inner_text() for i in (1, 2)] == ["4", "2"]
        content = stepper.locator(".pi-page:visible .pi-detail-col .pi-cur table").last.locator("tr")
        slots = [content.nth(i).locator("td").first.inner_text() for i in range(1, content.count())]
        assert slots == ["0", "1", "2"], (notebook, slots)  # content slots 0, 1, 2


def check_sse(texts: list[str], notebook: str) -> None:
    joined = "\n".join(texts)
    assert "空行" in joined and "↵" in joined, notebook
    assert "缓冲区为空" in joined and "读取到此为止" in joined, notebook
    assert "\\\\" not in joined, notebook


def contrast(page: Any, selector: str) -> list[dict[str, Any]]:
    results: list[dict[str, Any]] = page.evaluate(CONTRAST, selector)
    return results


PARALLEL = 2  # two notebooks at once: the next one loads and runs while this one is stepped


def test_every_notebook_runs_and_every_stepper_steps_in_chromium(lab: Lab) -> None:
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=15_000)
    assert CHROMIUM.exists(), "Debian's chromium is required: apt-get install chromium"
    assert NOTEBOOKS, "no notebooks"
    seen = Seen()
    failures: list[str] = []
    started = time.monotonic()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM),
            args=["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"],
        )  # fmt: skip
        try:
            pending = list(NOTEBOOKS)
            running: list[tuple[str, Any]] = []

            def start_next() -> None:
                notebook = pending.pop(0)
                page = browser.new_page(viewport={"width": 1400, "height": 1200})
                page.set_default_timeout(90_000)
                page.goto(lab.url(notebook))
                page.locator(".jp-NotebookPanel").first.wait_for()
                page.evaluate(f"() => {{ window.__runAll = ({RUN_ALL})(); }}")
                running.append((notebook, page))

            while pending and len(running) < PARALLEL:
                start_next()
            while running:
                notebook, page = running.pop(0)
                try:
                    check_notebook(notebook, page, seen, failures)
                finally:
                    page.evaluate("() => window.jupyterapp.shell.currentWidget.sessionContext.shutdown()")
                    page.close()
                    seen.report.append(f"{notebook}: done at {time.monotonic() - started:.1f} s")
                if pending:
                    start_next()
        finally:
            browser.close()
            lab.shutdown_kernels()
    print("\n".join(seen.report))
    assert not failures, "\n".join(failures)
    assert seen.partial and seen.sse, seen.report
    assert {"4", "2", "0"} <= seen.provider_indexes
    assert seen.dark_done, "no 4/2 stepper to repeat in the dark theme"


def check_notebook(notebook: str, page: Any, seen: Seen, failures: list[str]) -> None:
    from playwright.sync_api import expect

    stem = notebook.removesuffix(".ipynb")
    try:
        result = page.evaluate("() => window.__runAll")
        failures.extend(f"{notebook} {error}" for error in result["errors"])
        if result["unrun"]:
            failures.append(f"{notebook}: cells not run {result['unrun']}")
        page.screenshot(path=str(SCREENSHOTS / f"{stem}-light.png"))
        steppers = page.locator(".pi-stepper")
        count = steppers.count()
        # the live widget shows each stepper once: its static table is hidden
        expect(page.locator(".pi-static:visible")).to_have_count(0)
        assert page.locator(".pi-static").count() >= count
        dark_target: int | None = None
        for number in range(count):
            stepper = steppers.nth(number)
            shot = SCREENSHOTS / f"{stem}-stepper-{number + 1}-light.png"
            texts = step_through(page, stepper, shot, seen.report)
            if "pi-partial-stepper" in (stepper.get_attribute("class") or ""):
                check_partial(texts, stepper, notebook, seen)
                seen.partial.append(notebook)
                joined = "\n".join(texts)
                if "Provider index 4" in joined and "不存在" not in joined and dark_target is None:
                    dark_target = number
            else:
                check_sse(texts, notebook)
                seen.sse.append(notebook)
            seen.report.append(f"{notebook} stepper {number + 1}: {len(texts)} steps")
        if not seen.dark_done and dark_target is not None:
            dark(page, steppers.nth(dark_target), stem, seen)
    except Exception:
        page.screenshot(path=str(SCREENSHOTS / f"{stem}-failure.png"))
        raise


def set_theme(page: Any, theme: str) -> None:
    from playwright.sync_api import expect

    page.evaluate(f"() => window.jupyterapp.commands.execute('apputils:change-theme', {{theme: '{theme}'}})")
    light = "false" if "Dark" in theme else "true"
    expect(page.locator(f"body[data-jp-theme-light='{light}']")).to_have_count(1)
    page.wait_for_timeout(800)  # the theme's stylesheet is applied after the attribute


def dark(page: Any, target: Any, stem: str, seen: Seen) -> None:
    """The 4/2 stepper again in the dark theme: highlighted rows keep a 4.5:1 text contrast."""
    from playwright.sync_api import expect

    target.scroll_into_view_if_needed()
    handle = target.locator(".noUi-handle").first
    handle.focus()
    handle.press("Home")
    for _ in range(5):  # step 5: text "，再查" joins slot 1 — a changed slot and the current row
        handle.press("ArrowRight")
    expect(target.locator(".pi-page:visible tr.pi-current")).to_contain_text("▶ 5")
    light = contrast(page, ".pi-stepper tr.pi-current > td")
    set_theme(page, "JupyterLab Dark")
    target.scroll_into_view_if_needed()
    target.screenshot(path=str(SCREENSHOTS / f"{stem}-stepper-dark.png"))
    page.screenshot(path=str(SCREENSHOTS / f"{stem}-dark.png"))
    rows = contrast(page, ".pi-stepper tr.pi-current > td")
    changed = contrast(page, ".pi-stepper .pi-page tr.pi-changed > td")
    assert rows and changed
    for name, results in (("current row", rows), ("changed slot", changed), ("current row (light)", light)):
        worst = min(results, key=lambda result: result["ratio"])
        seen.report.append(f"{name} contrast ≥ {worst['ratio']:.2f}:1 (fg {worst['fg']}, bg {worst['bg']})")
        assert worst["ratio"] >= 4.5, (name, worst)
    seen.dark_done = True
    set_theme(page, "JupyterLab Light")


def measure_heights(page: Any, steppers: Any) -> list[str]:
    """Each stepper's height at 1000 px and 1400 px of window width, the same at every step."""
    from playwright.sync_api import expect

    lines, too_tall = [], []
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 900})
        page.wait_for_timeout(600)  # JupyterLab lays the panels out again
        for number in range(steppers.count()):
            stepper = steppers.nth(number)
            stepper.scroll_into_view_if_needed()
            handle = stepper.locator(".noUi-handle").first
            first = round(float(handle.get_attribute("aria-valuemin") or "0"))
            last = round(float(handle.get_attribute("aria-valuemax") or "0"))
            handle.focus()
            handle.press("Home")
            heights = set()
            for step in range(first, last + 1):
                if step > first:
                    handle.press("ArrowRight")
                expect(stepper.locator(".pi-page:visible tr.pi-current")).to_contain_text(f"▶ {step}")
                heights.add(round(stepper.bounding_box()["height"]))
            stepper.screenshot(path=str(SCREENSHOTS / f"height-{width}-stepper-{number + 1}-light.png"))
            handle.press("Home")
            kind = "sse" if "pi-sse-stepper" in (stepper.get_attribute("class") or "") else "partial"
            name = f"stepper {number + 1} ({kind}) at {width} px"
            lines.append(f"{name}: {sorted(heights)} px high")
            if max(heights) > MAX_HEIGHT or len(heights) > 1:
                too_tall.append(f"{name}: {sorted(heights)}")
    page.set_viewport_size({"width": 1400, "height": 1200})
    assert not too_tall, (f"taller than {MAX_HEIGHT} px, or not one height", too_tall)
    return lines


def nav_buttons_and_keys(page: Any, stepper: Any) -> None:
    """◀/▶ step the slider; after a click on the page, the arrow keys step it too."""
    from playwright.sync_api import expect

    stepper.scroll_into_view_if_needed()
    current = stepper.locator(".pi-page:visible tr.pi-current")
    stepper.locator(".noUi-handle").first.focus()
    stepper.locator(".noUi-handle").first.press("Home")
    expect(current).to_contain_text("▶ 0")
    stepper.locator("button.pi-nav", has_text="▶").click()
    stepper.locator("button.pi-nav", has_text="▶").click()
    expect(current).to_contain_text("▶ 2")
    stepper.locator("button.pi-nav", has_text="◀").click()
    expect(current).to_contain_text("▶ 1")
    page.locator(".jp-Notebook").first.click(position={"x": 5, "y": 5})  # focus away from the stepper
    stepper.locator(".pi-page:visible .pi-detail-col h4").first.click()
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    expect(current).to_contain_text("▶ 3")
    page.keyboard.press("ArrowLeft")
    expect(current).to_contain_text("▶ 2")


def test_saved_widget_state_steps_and_plays_without_running_a_cell(lab: Lab) -> None:
    """Open an executed notebook without running it: the steppers come from the saved state."""
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=30_000)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=["--no-sandbox", "--disable-gpu"]
        )
        page = browser.new_page(viewport={"width": 1400, "height": 1200})
        page.set_default_timeout(60_000)
        try:
            page.goto(lab.url("steppers.ipynb", folder="saved"))
            page.locator(".jp-NotebookPanel").first.wait_for()
            steppers = page.locator(".pi-stepper")
            cells = page.locator(".jp-CodeCell")
            expect(cells).to_have_count(3)
            for number in range(3):  # a cell below the window may render its widget only once seen
                cells.nth(number).scroll_into_view_if_needed()
                expect(cells.nth(number).locator(".pi-stepper")).to_have_count(1)
            expect(steppers).to_have_count(3)
            expect(page.locator(".pi-static:visible")).to_have_count(0)
            partial, sse = steppers.nth(0), steppers.nth(1)
            heights = measure_heights(page, steppers)
            print("\n".join(heights))
            nav_buttons_and_keys(page, steppers.nth(2))
            texts = step_through(page, sse, SCREENSHOTS / "saved-state-sse-light.png")
            check_sse(texts, "saved state")
            partial.scroll_into_view_if_needed()
            partial.locator(".widget-play button").first.click()  # Play: 900 ms per step
            current = partial.locator(".pi-page:visible tr.pi-current")
            expect(current).to_contain_text("▶ 5", timeout=20_000)  # Play stops at the last step
            expect(partial.locator(".pi-page:visible")).to_contain_text("已解析 · dict")
            partial.screenshot(path=str(SCREENSHOTS / "saved-state-partial-played-light.png"))
            # Both steppers in the dark theme, the SSE one at read 7 (the cut character).
            set_theme(page, "JupyterLab Dark")
            partial.screenshot(path=str(SCREENSHOTS / "saved-state-partial-played-dark.png"))
            handle = sse.locator(".noUi-handle").first
            handle.focus()
            handle.press("Home")
            for _ in range(6):
                handle.press("ArrowRight")
            expect(sse.locator(".pi-page:visible tr.pi-current")).to_contain_text("▶ 7")
            sse.screenshot(path=str(SCREENSHOTS / "saved-state-sse-at-7-dark.png"))
            for selector in (".pi-sse-stepper tr.pi-current > td", ".pi-sse-stepper .pi-badge"):
                worst = min(contrast(page, selector), key=lambda result: result["ratio"])
                assert worst["ratio"] >= 4.5, (selector, worst)
            set_theme(page, "JupyterLab Light")
            # Untrusted (a fresh clone): Lab renders no widget there, so the static tables show.
            page.goto(lab.url("untrusted.ipynb", folder="saved"))
            page.locator(".jp-NotebookPanel").first.wait_for()
            expect(page.locator(".pi-static:visible")).to_have_count(3)
            expect(page.locator(".pi-stepper")).to_have_count(0)
            expect(page.locator(".pi-static").first).to_contain_text("已解析")
            expect(page.get_by_text("步进器要在这一格运行成功后才出现")).to_have_count(3)
            page.screenshot(path=str(SCREENSHOTS / "untrusted-static-light.png"))
        except Exception:
            page.screenshot(path=str(SCREENSHOTS / "saved-state-failure.png"))
            raise
        finally:
            browser.close()
