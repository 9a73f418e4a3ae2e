"""``grade 05 --html``: the class report, opened in a real Chromium (``make browser``).

A small real class (an untouched copy, two finished ones, a copy of one of them, one at 6/11, one
that does not import, and one whose folder name is HTML) is graded through the command line; the
page must show the class's progress and where it is stuck as pictures, every row with its status
and points, open each row to that copy's full ``check`` output, pair the near-identical copies side
by side, render the hostile name as text, and request nothing but itself. At 390 px (a phone) the
table fits the screen, the per-step columns folded into each row's details. Screenshots at 1400 px
and 390 px go to build/browser/.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

ROOT = Path(__file__).parents[2]
sys.path.insert(0, str(ROOT / "tests" / "workflow"))
from learners import apply, mistake  # noqa: E402

from pi_course.course.grade.records import STATUS_WORDS  # noqa: E402

CHROMIUM = Path("/usr/bin/chromium")
SCREENSHOTS = ROOT / "build" / "browser"
HOSTILE = "<img src=x onerror=document.title='pwned'>"


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pi_course", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def test_the_class_report_shows_every_row_and_each_copys_check_output(tmp_path: Path) -> None:
    from playwright.sync_api import expect, sync_playwright

    assert CHROMIUM.exists(), "Debian's chromium is required: apt-get install chromium"
    course = tmp_path / "class"
    made = cli("practice", "05", str(course / "fresh"), cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    for name, learner in (
        ("ada", "ada"),
        ("bo", "bo"),
        ("events", "bo"),
        ("syntax-error", "bo"),
        (HOSTILE, "ada"),
    ):
        shutil.copytree(course / "fresh", course / name)
        apply(course / name, learner)
    mistake(course / "syntax-error", "sse.py", "self._buffer = lines.pop()", "self._buffer = lines.pop(")
    mistake(
        course / "events", "sse.py", "self._buffer = lines.pop()", 'self._buffer = ""  # whole lines only'
    )
    page_file = tmp_path / "class.html"
    graded = cli(
        "grade",
        "05",
        str(course),
        "--html",
        str(page_file),
        "--json",
        str(tmp_path / "class.json"),
        cwd=tmp_path,
    )
    assert graded.returncode == 0, graded.stdout + graded.stderr
    records = json.loads((tmp_path / "class.json").read_text(encoding="utf-8"))
    statuses = {record["name"]: record["status"] for record in records}
    assert statuses == {
        "ada": "done", "bo": "done", "events": "incomplete", "fresh": "incomplete", "syntax-error": "import-error",
        HOSTILE: "done",
    }  # fmt: skip

    requests: list[str] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=["--no-sandbox", "--disable-gpu"]
        )
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.on("request", lambda request: requests.append(request.url))
            page.goto(page_file.as_uri())
            rows = page.locator("tbody tr")
            expect(rows).to_have_count(len(records))
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SCREENSHOTS / "grade-report.png"), full_page=True)  # every row closed
            # Unfinished copies first: the one that does not import, then the untouched copy.
            shown = [rows.nth(index).locator("td").first.inner_text() for index in range(len(records))]
            assert shown[:3] == ["syntax-error", "fresh", "events"]
            assert sorted(shown[3:]) == sorted(["ada", "bo", HOSTILE])
            # Above the table: progress per step and the most failing tests, as inline SVG.
            figures = page.locator("section.glance figure")
            expect(figures).to_have_count(2)
            expect(figures.nth(0).locator("svg")).to_contain_text("5.3 SSE 与 unknown 边界")
            expect(figures.nth(0).locator("svg")).to_contain_text(
                "3/6 完成"
            )  # 5.3: ada, bo and the hostile name
            # Whole names, wrapped, never cut.
            expect(figures.nth(1).locator("svg")).to_contain_text(
                "test_sse_interleaved_tool_arguments_are_recovered_by_index_with_trailing_usage"
            )
            assert "…" not in (figures.nth(1).locator("svg").text_content() or "")
            # The untouched copy is "not started", the syntax error "cannot import": two bars, not one.
            expect(figures.nth(1).locator("svg")).to_contain_text("没开始：第一次红灯")
            expect(figures.nth(1).locator("svg")).to_contain_text("无法导入 pi_course")
            # Which sandbox ran, and what the similarity check found, above the pictures.
            expect(page.locator("p#sandbox")).to_contain_text("沙箱：")
            expect(page.locator("p#similarity")).to_contain_text("比较了这次评的 6 份课程代码：4 对几乎相同")
            # Near-identical pairs: ada and the copy under the hostile name; bo and the two copies
            # that differ from bo by one line (three pairs). Each opens side by side.
            expect(page.locator("details.pair")).to_have_count(4)
            pair = page.locator("details.pair").first  # the most similar first, then by name
            expect(pair.locator("summary")).to_have_text(f"{HOSTILE} ↔ ada：课程代码相似度 100.0%")
            pair.locator("summary").click()
            expect(pair.locator(".side pre")).to_have_count(2)
            pair.screenshot(path=str(SCREENSHOTS / "grade-report-pair.png"))
            for record in records:
                row = page.locator(f'tbody tr[data-name="{record["name"]}"]')
                cells = row.locator("td")
                expect(cells.nth(1)).to_have_text(STATUS_WORDS[record["status"]])  # 完成, 未完成 …
                expect(cells.nth(2)).to_have_text(f"{record['focused_passed']}/11")  # a point per test
                details = row.locator("details pre")
                expect(details).to_be_hidden()
                row.locator("summary").click()
                expect(details).to_be_visible()
                assert details.inner_text().strip() != ""
            syntax = page.locator('tbody tr[data-name="syntax-error"] details pre')
            expect(syntax).to_contain_text("pi_course/sse.py")
            fresh = page.locator('tbody tr[data-name="fresh"] summary')
            expect(fresh).to_contain_text("ToolDefinition")
            assert page.title() != "pwned" and page.locator("img").count() == 0

            phone = browser.new_page(viewport={"width": 390, "height": 844})
            phone.on("request", lambda request: requests.append(request.url))
            phone.goto(page_file.as_uri())
            assert phone.evaluate("document.documentElement.scrollWidth") <= 390  # nothing scrolls sideways
            phone.screenshot(path=str(SCREENSHOTS / "grade-report-phone.png"), full_page=True)
            first = phone.locator("tbody tr").first
            expect(first.locator("td.wide").first).to_be_hidden()
            first.locator("summary").click()
            expect(first.locator("dl.steps")).to_be_visible()
            expect(first.locator("dl.steps")).to_contain_text("5.3")
            assert phone.evaluate("document.documentElement.scrollWidth") <= 390
            phone.screenshot(path=str(SCREENSHOTS / "grade-report-phone-open.png"))
        finally:
            browser.close()
    assert requests == [page_file.as_uri()] * 2
