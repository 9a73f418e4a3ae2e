"""Predict, then see — in a real Chromium, on practice copies and on the reference (issue 36).

A complete practice copy (learner ``ada``): Run All leaves every question's answer unshown (its
cell says to write the prediction first); writing a prediction and running the cell shows the
answer; the 4/2 stepper's list then grows as it steps (a later step's event is not on screen
before that step); 05-5 shows the correct and broken runs side by side. A fresh copy: a
question's cell shows no 预期输出 box before the prediction. The complete copy's 05-0 saved,
closed and reopened shows its stepper again, not "model not found". Light and dark screenshots go
to ``build/browser/predict-*.png`` and ``reopen-*.png``.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from lab_server import jupyter_lab, lab_environment, learner_settings
from test_browser import CHROMIUM, RUN_ALL, SKIP, set_theme

sys.path.insert(0, str(Path(__file__).parents[1] / "workflow"))  # the learners' code, as test data
from learners import apply, new_copy

pytestmark = pytest.mark.browser

ROOT = Path(__file__).parents[2]
SHOTS = ROOT / "build" / "browser"
ASKED = "先写下你对上面问题的预测"


def _copy(base: Path, name: str, learner: str | None) -> Path:
    folder = new_copy(base / name, cwd=ROOT)
    if learner is not None:
        apply(folder, learner)
    return folder


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """JupyterLab over a folder holding a complete copy, a fresh copy and the reference's notebooks."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    home = tmp_path_factory.mktemp("predict")
    _copy(home, "done", "ada")
    _copy(home, "fresh", None)
    book = home / "book"  # the reference: its notebooks copied (never saved over), the rest linked
    shutil.copytree(
        ROOT / "notebooks", book / "notebooks", ignore=shutil.ignore_patterns(".ipynb_checkpoints")
    )
    for entry in ROOT.iterdir():
        if entry.name not in SKIP:
            (book / entry.name).symlink_to(entry)
    env = lab_environment(home, learner_settings(home))
    with jupyter_lab(home, env, "--LabApp.extension_manager=readonly") as server:
        server.wait_until_up()
        yield server.base, server.token


def _open(browser: Any, lab: tuple[str, str], path: str) -> Any:
    base, token = lab
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.set_default_timeout(120_000)
    workspace = path.replace("/", "-").removesuffix(".ipynb")
    page.goto(f"{base}/lab/workspaces/{workspace}/tree/{path}?reset&token={token}")
    page.locator(".jp-NotebookPanel").first.wait_for()
    return page


def _run_all(page: Any) -> dict[str, Any]:
    result: dict[str, Any] = page.evaluate(f"({RUN_ALL})")
    return result


def _cell(page: Any, marker: str) -> int:
    index: int = page.evaluate(
        """(marker) => { const cells = window.jupyterapp.shell.currentWidget.content.model.cells;
           for (let i = 0; i < cells.length; i++) if (cells.get(i).sharedModel.getSource().includes(marker)) return i;
           return -1; }""",
        marker,
    )
    assert index >= 0, marker
    return index


def _write_and_run(page: Any, index: int, old: str, new: str) -> None:
    page.evaluate(
        """async ([index, old, new_]) => { const panel = window.jupyterapp.shell.currentWidget;
           const cell = panel.content.model.cells.get(index);
           cell.sharedModel.setSource(cell.sharedModel.getSource().replace(old, new_));
           panel.content.activeCellIndex = index;
           await window.jupyterapp.commands.execute('notebook:run-cell'); }""",
        [index, old, new],
    )


def _output(page: Any, index: int) -> Any:
    return page.locator(".jp-Notebook .jp-Cell").nth(index).locator(".jp-OutputArea")


def _light_and_dark(page: Any, shown: Any, name: str) -> None:
    """Screenshots ``name``-light.png and ``name``-dark.png with ``shown`` in view; light again after."""
    for theme in ("light", "dark"):
        set_theme(page, f"JupyterLab {theme.title()}")
        shown.scroll_into_view_if_needed()
        page.screenshot(path=str(SHOTS / f"{name}-{theme}.png"))
    set_theme(page, "JupyterLab Light")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    assert CHROMIUM.exists(), "Debian's chromium is required: apt-get install chromium"
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=str(CHROMIUM),
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run"],
        )  # fmt: skip
        try:
            yield launched
        finally:
            launched.close()


def test_a_copy_asks_first_then_shows_and_the_stepper_grows(lab: tuple[str, str], browser: Any) -> None:
    from playwright.sync_api import expect

    expect.set_options(timeout=30_000)
    page = _open(browser, lab, "done/notebooks/05-2-state-machine.ipynb")
    result = _run_all(page)
    assert not result["errors"], result["errors"]
    question = _cell(page, "my_slot_count = ...")
    output = _output(page, question)
    expect(output).to_contain_text(ASKED)
    assert output.locator(".pi-stepper").count() == 0  # the answer waits
    output.scroll_into_view_if_needed()
    page.screenshot(path=str(SHOTS / "predict-copy-05-2-asked-light.png"))
    _write_and_run(page, question, "my_slot_count = ...", "my_slot_count = 3")
    _write_and_run(page, question, "my_first_index = ...", "my_first_index = 4")
    stepper = output.locator(".pi-stepper")
    expect(stepper).to_have_count(1)
    expect(output).to_contain_text("你的预测：(3, 4)")
    expect(output).to_contain_text("✓ 第 1 个预测对了")  # judged, each with its one-line why
    expect(output).to_contain_text("✗ 第 2 个预测不对：你写的是 4，答案是 0。")
    handle = stepper.locator(".noUi-handle").first
    handle.focus()
    handle.press("Home")
    handle.press("ArrowRight")
    listing = stepper.locator(".pi-page:visible .pi-steps-col .pi-grow > div:first-child")
    expect(listing.locator("tr.pi-current")).to_contain_text("▶ 1")
    text = listing.inner_text()
    assert "toolcall_delta" in text and "text_delta" not in text and "done" not in text, text
    stepper.scroll_into_view_if_needed()
    stepper.screenshot(path=str(SHOTS / "predict-copy-05-2-stepper-at-1-light.png"))
    handle.press("End")
    expect(listing).to_contain_text("done")
    set_theme(page, "JupyterLab Dark")
    handle.press("Home")
    handle.press("ArrowRight")
    handle.press("ArrowRight")
    stepper.screenshot(path=str(SHOTS / "predict-copy-05-2-stepper-at-2-dark.png"))
    set_theme(page, "JupyterLab Light")
    page.close()


def test_a_copy_shows_the_break_side_by_side(lab: tuple[str, str], browser: Any) -> None:
    from playwright.sync_api import expect

    expect.set_options(timeout=60_000)
    page = _open(browser, lab, "done/notebooks/05-5-break-it.ipynb")
    result = _run_all(page)
    assert not result["errors"], result["errors"]
    cell = _cell(page, "my_first_slot = ...")
    output = _output(page, cell)
    expect(output).to_contain_text(ASKED)
    _write_and_run(page, cell, "my_first_slot = ...", 'my_first_slot = "error"')
    table = output.locator("table.pi-compare")
    expect(table).to_have_count(1)
    expect(output).to_contain_text("第一处不同在第 1 条事件")
    expect(output).to_contain_text("2/3 通过")
    assert output.locator("td.pi-missing").count() == 1  # the first difference, marked once
    _light_and_dark(page, table, "predict-copy-05-5-break")
    restored = _output(page, _cell(page, "as_it_is(DIAGNOSTIC_4_2_CHUNKS)"))
    expect(restored.locator("table.pi-compare")).to_have_count(1)
    assert restored.locator("td.pi-bad, td.pi-missing").count() == 0
    restored.scroll_into_view_if_needed()
    page.screenshot(path=str(SHOTS / "predict-copy-05-5-restored-light.png"))
    page.close()


def test_a_fresh_copy_shows_no_expected_output_before_the_prediction(
    lab: tuple[str, str], browser: Any
) -> None:
    from playwright.sync_api import expect

    expect.set_options(timeout=30_000)
    page = _open(browser, lab, "fresh/notebooks/05-2-state-machine.ipynb")
    result = _run_all(page)
    assert not result["errors"], result["errors"]
    output = _output(page, _cell(page, "my_slot_count = ..."))
    expect(output).to_contain_text("需要先完成实践")
    expect(output).to_contain_text("预期输出才会显示")  # the box waits for the prediction
    assert not [
        t for t in output.locator("div").all_inner_texts() if t.startswith("预期输出（参考实现的真实输出）")
    ]
    assert output.locator(".pi-static, .pi-stepper").count() == 0, "an answer before the prediction"
    output.scroll_into_view_if_needed()
    page.screenshot(path=str(SHOTS / "predict-fresh-05-2-light.png"))
    set_theme(page, "JupyterLab Dark")
    page.screenshot(path=str(SHOTS / "predict-fresh-05-2-dark.png"))
    set_theme(page, "JupyterLab Light")
    page.close()


def test_a_fresh_copy_opens_the_answer_once_the_prediction_is_written(
    lab: tuple[str, str], browser: Any
) -> None:
    """The cell's source changed (the prediction): JupyterLab's cell id still finds its 预期输出."""
    from playwright.sync_api import expect

    expect.set_options(timeout=30_000)
    page = _open(browser, lab, "fresh/notebooks/05-1-outbound.ipynb")
    result = _run_all(page)
    assert not result["errors"], result["errors"]
    question = _cell(page, "my_count = ...")
    output = _output(page, question)
    expect(output).to_contain_text("写下预测之后才显示")
    _write_and_run(page, question, "my_count = ...", "my_count = 3  # 我的预测")
    _write_and_run(page, question, "my_first_role = ...", 'my_first_role = "system"')
    expect(output).to_contain_text("需要先完成实践 5.1")
    expect(output).to_contain_text("✗ 第 1 个预测不对：你写的是 3，答案是 4。")
    expect(output).to_contain_text("✓ 第 2 个预测对了")
    expect(output).to_contain_text("预期输出（参考实现的真实输出）")
    expect(output).to_contain_text('"role": "tool"')  # the reference's real output, found after the edit
    expect(output).not_to_contain_text("找不到")
    output.scroll_into_view_if_needed()
    page.screenshot(path=str(SHOTS / "predict-fresh-05-1-written-light.png"))
    set_theme(page, "JupyterLab Dark")
    page.screenshot(path=str(SHOTS / "predict-fresh-05-1-written-dark.png"))
    set_theme(page, "JupyterLab Light")
    page.close()


def test_the_book_folds_the_migration_answer_and_points_the_break_at_a_copy(
    lab: tuple[str, str], browser: Any
) -> None:
    from playwright.sync_api import expect

    expect.set_options(timeout=60_000)
    page = _open(browser, lab, "book/notebooks/05-6-migration.ipynb")
    result = _run_all(page)
    assert not result["errors"], result["errors"]
    folded = _output(page, _cell(page, "folded_reference(TokenEventTransport)"))
    expect(folded).to_contain_text("参考 transport：通过")
    trace = folded.locator("details pre")
    expect(trace).to_be_hidden()  # the reference's event trace waits until it is opened
    each = _output(page, _cell(page, "check_each_event(MyTokenTransport)"))
    expect(each).to_contain_text("0/4 类事件翻译对了")
    expect(each).to_contain_text("提示：")
    each.scroll_into_view_if_needed()
    page.screenshot(path=str(SHOTS / "predict-book-05-6-light.png"))
    set_theme(page, "JupyterLab Dark")
    folded.locator("summary").click()
    expect(trace).to_be_visible()
    folded.scroll_into_view_if_needed()
    page.screenshot(path=str(SHOTS / "predict-book-05-6-opened-dark.png"))
    set_theme(page, "JupyterLab Light")
    page.close()

    page = _open(browser, lab, "book/notebooks/05-5-break-it.ipynb")
    result = _run_all(page)
    assert not result["errors"], result["errors"]
    found = _output(page, _cell(page, "allow_broken=True"))
    expect(found).to_contain_text("练习副本里的这一本")
    cell = _output(page, _cell(page, "my_first_slot = ..."))
    expect(cell.locator("table.pi-compare")).to_have_count(1)  # the book shows its outputs
    expect(cell).to_contain_text("这一次是模拟")
    expect(cell).to_contain_text("2/3 通过")
    cell.locator("table.pi-compare").scroll_into_view_if_needed()
    page.screenshot(path=str(SHOTS / "predict-book-05-5-light.png"))
    set_theme(page, "JupyterLab Dark")
    page.screenshot(path=str(SHOTS / "predict-book-05-5-dark.png"))
    set_theme(page, "JupyterLab Light")
    page.close()


def _save_and_close(page: Any) -> None:
    """Save (as Ctrl+S does), shut the kernel down and close the tab: the learner's day ends."""
    page.evaluate(
        """async () => { const panel = window.jupyterapp.shell.currentWidget;
           await window.jupyterapp.commands.execute('docmanager:save');
           if (panel.context.model.dirty) throw new Error('not saved');
           await panel.sessionContext.shutdown(); }"""
    )
    page.close()  # nothing of this session's widgets is left in a page


def test_a_notebook_saved_closed_and_reopened_shows_its_stepper_again(
    lab: tuple[str, str], browser: Any
) -> None:
    """The learner's next day: run, save, close, open again. The stepper comes back from the widget
    state the save stored (the course sets JupyterLab's ``saveState``) and steps without a kernel;
    JupyterLab's own default left "model not found" under the table. Saved again that day without
    re-running the cell, the state is gone (JupyterLab keeps live widgets only): the day after, the
    table shows and the cell says how the stepper comes back, in place of JupyterLab's error."""
    from playwright.sync_api import expect

    from pi_course.notebook.stepper import MISSING_NOTE

    expect.set_options(timeout=60_000)
    path, marker = "done/notebooks/05-0-overview.ipynb", "PartialStepper.replay(MAINLINE_CHUNKS"
    page = _open(browser, lab, path)
    result = _run_all(page)
    assert not result["errors"], result["errors"]
    expect(page.locator(".pi-stepper")).to_have_count(1)
    _save_and_close(page)

    page = _open(browser, lab, path)
    page.evaluate("async () => { await window.jupyterapp.shell.currentWidget.context.ready; }")
    output = _output(page, _cell(page, marker))
    output.scroll_into_view_if_needed()
    stepper = output.locator(".pi-stepper")
    expect(stepper).to_have_count(1)
    expect(page.get_by_text("model not found")).to_have_count(0)
    expect(output.locator(".pi-static:visible")).to_have_count(0)  # shown once: the live stepper
    handle = stepper.locator(".noUi-handle").first
    handle.focus()
    handle.press("End")  # steps with no kernel: the pages and links are in the saved state
    last = round(float(handle.get_attribute("aria-valuemax") or "0"))
    expect(stepper.locator(".pi-page:visible tr.pi-current")).to_contain_text(f"▶ {last}")
    _light_and_dark(page, stepper, "reopen-05-0-stepper")
    _write_and_run(page, _cell(page, "my_same = ..."), "my_same = ...", "my_same = False")  # not the stepper
    _save_and_close(page)

    page = _open(browser, lab, path)
    page.evaluate("async () => { await window.jupyterapp.shell.currentWidget.context.ready; }")
    output = _output(page, _cell(page, marker))
    output.scroll_into_view_if_needed()
    expect(output.locator(".pi-static")).to_be_visible()
    error = page.get_by_text("model not found")
    expect(error).to_have_count(1)  # the state is gone, as JupyterLab saves it ...
    expect(error).to_be_hidden()  # ... and the cell says what to do instead
    said = error.evaluate("node => getComputedStyle(node, '::before').content")
    assert MISSING_NOTE in said, said
    _light_and_dark(page, output, "reopen-05-0-saved-again")
    page.evaluate("() => window.jupyterapp.shell.currentWidget.sessionContext.shutdown()")
    page.close()
