"""``grade 05``: a class of practice copies at a glance, checked as untrusted code.

The class test builds a class from independent learner solutions (tests/workflow/learners/) and
their typical mistakes, grades it through the command line, asserts every row, the time bound of
the whole class and that the instructor's originals are unchanged. The other tests pin the parts
on their own with a stand-in for ``check 05 --json`` (a few lines of Python), so they run in
milliseconds: discovery, safe extraction, the scrubbed environment, killing a process group, and
the escaping in each output. Every test that starts a process is marked ``slow``.
"""

from __future__ import annotations

import csv
import hashlib
import html
import io
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tarfile
import time
import tomllib
import zipfile
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
import yaml
from children import sigint_default
from learners import apply, copy_of, mistake, tree_digest

from pi_course.chapter.steps import CHAPTER_TOTAL, STEPS
from pi_course.course import grade as grading
from pi_course.course.checker.import_failure import IMPORT_BOUND
from pi_course.course.copies.assemble import Instructor
from pi_course.course.copies.classroom import (
    CI_REQUIREMENTS,
    classroom_workflow,
    focused_tests,
    grader_command,
)
from pi_course.course.grade import (
    FIELDS,
    Graded,
    GradeError,
    Sandbox,
    Source,
    UnsafeArchive,
    discover,
    extract,
    grade_one,
    instructor_copy,
)
from pi_course.course.grade.command import _with_output
from pi_course.course.grade.gradebook import GradebookError, Points, parse_points, to_csv
from pi_course.course.grade.page import to_html
from pi_course.course.grade.report import table

ROOT = Path(__file__).parents[2]
NONE = Sandbox("none", "test")


@pytest.fixture(scope="module")
def instructor() -> Iterator[Instructor]:
    with instructor_copy() as made:
        yield made


def cli(*args: str, cwd: Path = ROOT, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pi_course", *args], cwd=cwd, capture_output=True, text=True, timeout=timeout,
        check=False,
    )  # fmt: skip


def fake_copy(folder: Path) -> Path:
    """The files that make a folder a practice copy's course tree: enough for discovery and the stand-in."""
    (folder / "pi_course").mkdir(parents=True)
    (folder / "pi_course" / "__init__.py").write_text("", encoding="utf-8")
    (folder / "LEARNING.md").write_text("", encoding="utf-8")
    (folder / "tests").mkdir()
    (folder / "tests" / "test_05_provider_adapter.py").write_text("", encoding="utf-8")
    return folder


def stand_in(script: str) -> Callable[[Path], list[str]]:
    """A ``check 05 --json`` stand-in: ``script`` runs with the temporary copy as ``sys.argv[1]``."""
    prelude = (
        "import json, os, sys, time\n"
        "def record(status, first_failure=None):\n"
        "    print(json.dumps({'name': 'x', 'path': sys.argv[1], 'status': status, 'focused': {},\n"
        "        'focused_passed': 0, 'focused_total': 11, 'beyond_passed': 0, 'beyond_total': 0,\n"
        "        'first_failure': first_failure, 'seconds': 0.0}))\n"
    )
    return lambda copy: [sys.executable, "-c", prelude + script, str(copy)]


# --- discovery and archives ---------------------------------------------------------------------


def test_discover_finds_copies_archives_and_what_is_not_a_copy(tmp_path: Path) -> None:
    course = tmp_path / "class"
    fake_copy(course / "ada")
    fake_copy(course / "bo" / "pi-05-main")  # a clone inside the learner's folder
    (course / "notes").mkdir()
    (course / "notes" / "todo.txt").write_text("x", encoding="utf-8")
    (course / "roster.csv").write_text("ada,bo", encoding="utf-8")  # a loose file: not a learner
    (course / ".git").mkdir()
    with zipfile.ZipFile(course / "cy.zip", "w") as archive:
        archive.writestr("cy-main/pi_course/__init__.py", "")
    found = discover([course, course / "ada"])
    assert [(source.name, source.kind) for source in found] == [
        ("ada", "folder"), ("bo", "folder"), ("cy", "archive"), ("notes", "not-a-copy"), ("ada", "folder"),
    ]  # fmt: skip
    assert found[3].why is not None and "notes" in found[3].why
    with pytest.raises(GradeError, match="nowhere"):
        discover([tmp_path / "nowhere", course])


def test_an_archive_that_climbs_out_is_refused_whole(tmp_path: Path) -> None:
    archive = tmp_path / "evil.zip"
    with zipfile.ZipFile(archive, "w") as opened:
        opened.writestr("lab/pi_course/__init__.py", "")
        opened.writestr("lab/../../escaped.txt", "gotcha")
    with pytest.raises(UnsafeArchive, match=r"escaped\.txt"):
        extract(archive, tmp_path / "out" / "here")
    assert not (tmp_path / "escaped.txt").exists() and not (tmp_path / "out" / "escaped.txt").exists()
    assert list((tmp_path / "out" / "here").iterdir()) == []

    absolute = tmp_path / "absolute.tar.gz"
    with tarfile.open(absolute, "w:gz") as opened:
        data = b"gotcha"
        member = tarfile.TarInfo(str(tmp_path / "abs.txt"))
        member.size = len(data)
        opened.addfile(member, io.BytesIO(data))
    with pytest.raises(UnsafeArchive):
        extract(absolute, tmp_path / "out2")
    assert not (tmp_path / "abs.txt").exists()


def test_links_in_an_archive_are_left_out(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("instructor only", encoding="utf-8")
    archive = tmp_path / "links.tar.gz"
    with tarfile.open(archive, "w:gz") as opened:
        link = tarfile.TarInfo("lab/pi_course/leak.txt")
        link.type, link.linkname = tarfile.SYMTYPE, str(secret)
        opened.addfile(link)
        hard = tarfile.TarInfo("lab/hard.txt")
        hard.type, hard.linkname = tarfile.LNKTYPE, "../secret.txt"
        opened.addfile(hard)
        data = b"print('hi')\n"
        regular = tarfile.TarInfo("lab/pi_course/ok.py")
        regular.size = len(data)
        opened.addfile(regular, io.BytesIO(data))
    zipped = tmp_path / "links.zip"
    with zipfile.ZipFile(zipped, "w") as opened:
        info = zipfile.ZipInfo("lab/pi_course/leak.txt")
        info.external_attr = (0o120777 << 16) | 0x20  # a symbolic link, as Info-ZIP stores one
        opened.writestr(info, str(secret))
    skipped = extract(archive, tmp_path / "out")
    assert skipped == ["lab/pi_course/leak.txt", "lab/hard.txt"]
    assert (tmp_path / "out" / "lab" / "pi_course" / "ok.py").read_text(encoding="utf-8") == "print('hi')\n"
    assert not (tmp_path / "out" / "lab" / "pi_course" / "leak.txt").exists()
    assert not (tmp_path / "out" / "lab" / "hard.txt").exists()
    assert extract(zipped, tmp_path / "out-zip") == ["lab/pi_course/leak.txt"]
    assert not (tmp_path / "out-zip" / "lab" / "pi_course" / "leak.txt").exists()


# --- the check process: environment, time bound, originals ----------------------------------------


@pytest.mark.slow
def test_the_check_sees_no_provider_settings_or_keys(tmp_path: Path, instructor: Instructor) -> None:
    copy = fake_copy(tmp_path / "ada")
    environ = {
        **os.environ,
        "PI_COURSE_API_KEY": "sk-instructor", "PI_COURSE_BASE_URL": "https://provider.invalid/v1",
        "OPENAI_API_KEY": "sk-openai", "OPENAI_BASE_URL": "https://x.invalid", "ANTHROPIC_API_KEY": "k",
        "GITHUB_TOKEN": "ghp_x", "AWS_SECRET_ACCESS_KEY": "aws", "PYTHONPATH": "/instructor/lib",
        "LC_ALL": "C.UTF-8",
    }  # fmt: skip
    command = stand_in("record('done', json.dumps(sorted(os.environ)))")
    graded = grade_one(Source("ada", copy, "folder"), instructor, NONE, 30, None, command, environ)
    seen = json.loads(graded.record["first_failure"])
    for name in ("PI_COURSE_API_KEY", "PI_COURSE_BASE_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL",
                 "ANTHROPIC_API_KEY", "GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY"):  # fmt: skip
        assert name not in seen
    assert "PATH" in seen and "LC_ALL" in seen and "HOME" in seen
    assert graded.record["flags"] == ["tests-modified", "not-sandboxed"]  # a stand-in copy: empty tests
    env = grading.scrubbed_environment(environ)
    assert env["PYTHONPATH"] == str(Path(grading.__file__).parents[3])
    assert "sk-" not in json.dumps(env)


@pytest.mark.slow
def test_a_copy_past_its_bound_is_stopped_with_everything_it_started(
    tmp_path: Path, instructor: Instructor
) -> None:
    copy = fake_copy(tmp_path / "loop")
    pid_file = tmp_path / "grandchild.pid"
    script = (
        "import subprocess\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
        f"open({str(pid_file)!r}, 'w').write(str(child.pid))\n"
        "while True:\n    pass\n"
    )
    before = tree_digest(copy)
    graded = grade_one(Source("loop", copy, "folder"), instructor, NONE, 3, None, stand_in(script))
    assert graded.record["status"] == "timeout"
    assert graded.record["first_failure"].startswith("超过 3 秒没有结束")
    assert graded.record["focused_passed"] == 0 and graded.record["focused_total"] == 11
    grandchild = int(pid_file.read_text(encoding="utf-8"))
    for _ in range(300):  # killed at once; the kernel may take a moment (30 s: a hang bound)
        if not alive(grandchild):
            break
        time.sleep(0.1)
    else:
        pytest.fail(f"process {grandchild} started by the check is still running")
    assert tree_digest(copy) == before


def alive(pid: int) -> bool:
    """Whether ``pid`` still runs (a zombie waiting for its reaper counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.is_file() and ") Z " in stat.read_text())


@pytest.mark.slow
def test_ctrl_c_stops_every_running_check_and_starts_no_other(tmp_path: Path) -> None:
    for name in ("a", "b", "c"):
        fake_copy(tmp_path / "class" / name)
    pids = tmp_path / "pids"
    pids.mkdir()
    script = f"""
import signal, subprocess, sys
from pathlib import Path
from typing import Any
from pi_course.course.grade import Sandbox, discover, grade
loop = (
    "import os, subprocess, sys, time\\n"
    "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\\n"
    "open(os.path.join({str(pids)!r}, str(os.getpid())), 'w').write(str(child.pid))\\n"
    "while True: time.sleep(0.1)\\n"
)
try:
    grade(discover([{str(tmp_path / "class")!r}]), jobs=2, timeout=600, sandbox=Sandbox("none"),
          command=lambda copy: [sys.executable, "-c", loop, str(copy)])
except KeyboardInterrupt:
    sys.exit(130)
"""
    process = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT, preexec_fn=sigint_default)
    try:
        deadline = time.monotonic() + 180  # a hang bound: two processes start in well under a second
        while len(list(pids.iterdir())) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert len(list(pids.iterdir())) == 2
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=60) == 130
    finally:
        process.kill()
    started = {int(path.name): int(path.read_text(encoding="utf-8")) for path in pids.iterdir()}
    time.sleep(0.5)
    assert len(started) == 2  # the third copy never started
    for check_pid, child_pid in started.items():
        assert not alive(check_pid) and not alive(child_pid)


@pytest.mark.slow
def test_the_check_runs_on_a_temporary_tree(tmp_path: Path, instructor: Instructor) -> None:
    copy = fake_copy(tmp_path / "ada")
    (copy / ".venv").mkdir()
    (copy / ".venv" / "big").write_text("x", encoding="utf-8")
    (copy / "pi_course" / "link.py").symlink_to(tmp_path / "elsewhere.py")
    before = tree_digest(copy)
    script = (
        "root = sys.argv[1]\n"
        "open(os.path.join(root, 'pi_course', '__init__.py'), 'w').write('overwritten')\n"
        "record('incomplete', ','.join(sorted(os.listdir(root)) + sorted(os.listdir(os.path.join(root, 'pi_course')))))\n"
    )
    graded = grade_one(Source("ada", copy, "folder"), instructor, NONE, 30, None, stand_in(script))
    listed = graded.record["first_failure"].split(",")
    # The instructor's tree: its package and tests, no .venv, no link, the copy's lesson files only.
    assert listed[:2] == ["pi_course", "tests"] and "link.py" not in listed and "course" in listed
    assert graded.record["path"] == str(copy) and graded.record["name"] == "ada"
    assert tree_digest(copy) == before


@pytest.mark.slow
def test_a_check_without_a_record_is_reported_not_hidden(tmp_path: Path, instructor: Instructor) -> None:
    copy = fake_copy(tmp_path / "ada")
    failing = stand_in("print('boom', file=sys.stderr); sys.exit(3)")
    graded = grade_one(Source("ada", copy, "folder"), instructor, NONE, 30, None, failing)
    assert graded.record["status"] == "import-error"
    assert graded.record["first_failure"] == "check 没有给出记录（返回码 3）：boom"
    assert "boom" in graded.output


# --- the outputs ----------------------------------------------------------------------------------


def record(name: str, status: str, passed: int, first_failure: str | None = None) -> dict[str, object]:
    return {
        "name": name, "path": f"/class/{name}", "status": status,
        "focused": {"5.1": [min(passed, 1), 1], "5.2": [max(0, min(passed - 1, 3)), 3],
                    "5.3": [max(0, min(passed - 4, 5)), 5], "5.4": [max(0, min(passed - 9, 2)), 2]},
        "focused_passed": passed, "focused_total": 11, "beyond_passed": 9 if status == "done" else 0,
        "beyond_total": 9, "first_failure": first_failure, "seconds": 1.25,
        "rules_kept": 46 if status == "done" else 3, "rules_total": 46, "compared": {"5.1": 153} if passed else {},
        "flags": [],
        "graded_at": "2026-12-04T10:00:00Z", "tests": {},
    }  # fmt: skip


HOSTILE = '=HYPERLINK("http://x")<script>alert(1)</script>\x1b[2J'
RESULTS = [
    Graded(record("ada", "done", 11), "第 05 章：完成"),
    Graded(
        record(HOSTILE, "incomplete", 4, "  ✗ test_sse — <b>看</b> sse.py"), "<img src=x onerror=alert(1)>"
    ),
    Graded(record("cy", "timeout", 0, "超过 40 秒没有结束"), ""),
]


def test_the_table_puts_unfinished_copies_first_and_prints_no_control_characters() -> None:
    lines = table(RESULTS, width=120).splitlines()
    assert lines[0].split()[:7] == ["副本", "状态", "5.1", "5.2", "5.3", "5.4", "聚焦测试"]
    assert [line.split()[1] for line in lines[1:4]] == ["超时", "未完成", "完成"]
    assert lines[1].startswith("cy ") and lines[3].startswith("ada ")
    assert "\x1b" not in "\n".join(lines)
    assert "0/5" in lines[2] and "4/11" in lines[2] and "11/11" in lines[3]
    assert lines[-1] == "共 3 份：完成 1，未完成 1，超时 1"


def test_json_and_csv_hold_every_record_and_no_formula() -> None:
    records = json.loads(_with_output(RESULTS))  # grade's JSON file: each record with its check's text
    assert [list(item) for item in records] == [[*FIELDS, "output"]] * 3
    assert records[0]["output"] == "第 05 章：完成"
    assert records[1]["name"] == HOSTILE
    text = to_csv([graded.record for graded in RESULTS])
    assert text.startswith("\ufeffstudent,student_id,folder,score,max,percent,step_5.1,")
    rows = list(csv.DictReader(io.StringIO(text.removeprefix("\ufeff"))))
    assert [row["folder"] for row in rows] == ["ada", "'" + HOSTILE, "cy"]
    assert rows[1]["step_5.3"] == "0" and rows[1]["step_5.2"] == "3" and rows[1]["score"] == "4"
    assert rows[1]["max"] == "11" and rows[1]["percent"] == "36.4" and rows[0]["first_failure"] == ""
    assert rows[1]["first_failure"] == "  ✗ test_sse — <b>看</b> sse.py"


def test_the_html_page_escapes_everything_and_loads_nothing() -> None:
    page = to_html(RESULTS)
    assert "<script" not in page and "<img" not in page and "<b>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "&lt;img src=x onerror=alert(1)&gt;" in page
    assert page.count("<details>") == 3 and page.count("<tr class=") == 3
    assert "default-src 'none'" in page
    tags: list[tuple[str, list[tuple[str, str | None]]]] = []

    class Tags(HTMLParser):
        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            tags.append((tag, attrs))

    Tags().feed(page)
    assert {tag for tag, _ in tags} == {
        "html", "head", "meta", "title", "style", "body", "h1", "h2", "p", "table", "thead", "tbody", "tr", "th",
        "td", "details", "summary", "pre", "section", "figure", "figcaption", "svg", "text", "rect", "dl", "dt",
        "dd",
    }  # fmt: skip
    assert not [attrs for _, attrs in tags if any(name in ("src", "href", "action") for name, _ in attrs)]


def test_where_the_class_is_stuck_tells_not_started_from_cannot_import_and_timed_out() -> None:
    """An untouched copy's first red light is the normal start: counted apart from an import error."""
    from pi_course.course.grade.page import NOT_STARTED, STOPPED, failing_tests

    fresh = record("fresh", "incomplete", 0, "第一次红灯：pi_course 没有导出 ToolDefinition")
    broken = record("broken", "import-error", 0, "pi_course/sse.py 第 3 行：SyntaxError")
    working = {
        **record("working", "incomplete", 4, "✗ test_sse"),
        "tests": {"test_sse": False, "test_out": True},
    }
    results = [
        Graded(fresh, ""), Graded({**fresh, "name": "fresh-2"}, ""), Graded(broken, ""),
        Graded(record("cy", "timeout", 0, "超过 40 秒没有结束"), ""), Graded(working, ""),
        Graded(record("ada", "done", 11), ""),
    ]  # fmt: skip
    stuck = dict(failing_tests(results))
    assert stuck == {NOT_STARTED: 2, STOPPED["import-error"]: 1, STOPPED["timeout"]: 1, "test_sse": 1}
    page = to_html(results)
    for label in (NOT_STARTED, STOPPED["import-error"], STOPPED["timeout"]):
        assert html.escape(label) in page


def stage_record(name: str, passed: dict[str, int], beyond: tuple[int, int] = (0, 0)) -> dict[str, Any]:
    """A copy's record as check writes it: each focused test by name, failing where the step is not done."""
    tests: dict[str, bool] = {}
    for step in STEPS:
        names = FOCUSED_NAMES[step.number]
        tests.update({test: index < passed.get(step.number, 0) for index, test in enumerate(names)})
    done = all(passed.get(step.number, 0) == step.expected for step in STEPS)
    return {
        **record(name, "done" if done else "incomplete", sum(passed.values())),
        "focused": {step.number: [passed.get(step.number, 0), step.expected] for step in STEPS},
        "beyond_passed": beyond[0], "beyond_total": beyond[1], "tests": tests,
    }  # fmt: skip


FOCUSED_NAMES = {
    "5.1": ["test_outbound_conversion_maps_four_roles_and_tools_without_touching_input"],
    "5.2": [
        "test_normalized_transport_orders_content_by_first_appearance_with_tool_index_4_2",
        "test_normalized_transport_exception_ends_in_error_with_the_partial_kept",
        "test_normalized_transport_length_keeps_raw_arguments_in_both_fields",
    ],
    "5.3": [f"test_sse_case_{index}" for index in range(5)],
    "5.4": ["test_fetch_transport_sends_the_exact_request", "test_fetch_transport_redacts_the_key"],
}


def test_stuck_means_failing_in_a_step_the_copy_has_reached() -> None:
    """A class at 5.1 and 5.2: the stubs of 5.3 and 5.4 fail everywhere, and are where nobody is yet."""
    from pi_course.course.grade.page import failing_tests, reached

    at_51 = stage_record("at-5.1", {})
    at_52 = stage_record("at-5.2", {"5.1": 1, "5.2": 1})
    ahead = stage_record("ahead", {"5.1": 1, "5.3": 2})  # 5.3 started before 5.2 is done
    results = [Graded(at_51, ""), Graded(at_52, ""), Graded(ahead, "")]  # type: ignore[arg-type]
    stuck = dict(failing_tests(results, limit=20))
    assert (
        stuck
        == {
            FOCUSED_NAMES["5.1"][0]: 1,  # at-5.1
            **{name: 2 for name in FOCUSED_NAMES["5.2"][1:]},  # at-5.2 and ahead
            FOCUSED_NAMES["5.2"][0]: 1,  # ahead only: at-5.2 passes it
            **{name: 1 for name in FOCUSED_NAMES["5.3"][2:]},  # ahead, who has begun 5.3
        }
    )
    assert not any(name.startswith("test_fetch_transport") for name in stuck)
    assert reached(at_52, STEPS[1]) and not reached(at_52, STEPS[2]) and reached(ahead, STEPS[2])  # type: ignore[arg-type]
    page = to_html(results)
    for name, _ in failing_tests(results):  # every name shown whole, however long: wrapped, not cut
        assert html.escape(name) in page.replace('</tspan><tspan x="0" dy="13">', ""), name
    assert "…" not in page.split("卡住最多的地方")[1].split("</figure>")[0]
    assert "2/2 份失败" in page and "1/2 份失败" in page  # out of the two copies that reached 5.2
    from pi_course.course.grade.page import wrapped

    long = "test_sse_abort_during_a_blocked_read_ends_aborted_and_closes_the_response"
    assert wrapped(long) == ["test_sse_abort_during_a_blocked_read_ends_aborted_and_closes_", "the_response"]
    assert "".join(wrapped("x" * 150)) == "x" * 150 and wrapped("没开始") == ["没开始"]


def test_the_page_says_it_in_chinese_and_counts_beyond_one_way() -> None:
    """Status and flags in Chinese on the page and in the terminal (their values stay in CSV and
    JSON); a fresh copy and one whose beyond checks all wait count the same: 0 of the course's."""
    fresh = {**record("fresh", "incomplete", 0), "beyond_total": 0, "flags": ["not-sandboxed"]}
    waiting = {**stage_record("waiting", {"5.1": 1}, beyond=(0, 27)), "flags": ["tests-modified"]}
    done = stage_record("done", {"5.1": 1, "5.2": 3, "5.3": 5, "5.4": 2}, beyond=(27, 27))
    results = [Graded(fresh, ""), Graded(waiting, ""), Graded(done, "")]  # type: ignore[arg-type]
    page = to_html(results)
    cells = {
        name: [html.unescape(cell) for cell in re.findall(r'<td class="n wide">([^<]*)</td>', row)]
        for name, row in re.findall(r'<tr class="[^"]+" data-name="([^"]+)">(.*?)</tr>', page)
    }
    assert cells["fresh"][-2] == cells["waiting"][-2] == "0/27" and cells["done"][-2] == "27/27"
    for word in ("完成", "未完成", "没有沙箱", "改过测试", "共 3 份：完成 1，未完成 2"):
        assert word in page, word
    assert not re.search(r'<td class="status"[^>]*>(done|incomplete)<', page)
    assert '<span class="flag" title="tests-modified">改过测试</span>' in page
    lines = table(results, width=200).splitlines()
    assert [line.split()[1] for line in lines[1:4]] == ["未完成", "未完成", "完成"]
    assert all("0/27" in line for line in lines[1:3]), lines
    rows = list(
        csv.DictReader(io.StringIO(to_csv([graded.record for graded in results]).removeprefix("\ufeff")))
    )
    assert [row["status"] for row in rows] == ["incomplete", "incomplete", "done"]
    assert [row["flags"] for row in rows][:2] == ["not-sandboxed", "tests-modified"]


def test_the_page_names_the_sandbox_and_the_similarity_result(monkeypatch: pytest.MonkeyPatch) -> None:
    """Which sandbox ran, and the similarity check's result even when it found no pair."""
    from pi_course.course.grade import page as page_module
    from pi_course.course.grade.similarity import Pair

    sandboxed = to_html(RESULTS, compared=3)
    assert "沙箱：bubblewrap（全部 3 份）" in sandboxed
    assert "比较了这次评的 3 份课程代码：没有几乎相同的一对" in sandboxed
    bare = [Graded({**graded.record, "flags": ["not-sandboxed"]}, graded.output) for graded in RESULTS]
    assert "沙箱：没有（not-sandboxed，全部 3 份）" in to_html(bare, compared=3)
    mixed = [bare[0], *RESULTS[1:]]
    assert "bubblewrap 评了 2 份；1 份没有沙箱" in to_html(mixed, compared=3)
    pair = Pair("ada", "cy", 0.97, "x = 1", "x = 1")
    assert "1 对几乎相同，见页末" in to_html(RESULTS, pairs=[pair], compared=3)
    assert "这次只读到 1 份副本的课程代码" in to_html(RESULTS, compared=1)  # a re-grade of one learner
    monkeypatch.setattr(page_module, "similarity_available", lambda: False)
    assert "相似度检查没有运行：没有安装 copydetect" in to_html(RESULTS, compared=3)


@pytest.mark.slow
def test_the_command_line_refuses_a_missing_path_in_one_line(tmp_path: Path) -> None:
    result = cli("grade", "05", str(tmp_path / "nowhere"))
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.strip().splitlines() == [
        f"grade 05：这些路径不存在：{tmp_path / 'nowhere'}。没有检查任何副本。"
    ]
    bad = cli("grade", "05", str(tmp_path), "--jobs", "0")
    assert bad.returncode == 2 and "--jobs" in bad.stderr and "正整数" in bad.stderr


def test_every_output_path_is_checked_before_any_copy_is_graded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pi_course.course.grade import command

    graded: list[object] = []
    monkeypatch.setattr(command, "grade", lambda *args, **kwargs: graded.append(args) or [])
    fake_copy(tmp_path / "class" / "ada")
    blocker = tmp_path / "a-file"
    blocker.write_text("x", encoding="utf-8")
    # a path under a file cannot be written: said before any copy is graded
    code = command.run([str(tmp_path / "class")], json_file=str(blocker / "class.json"), sandbox="none")
    assert code == 2 and graded == []
    # a folder that does not exist yet is made
    out = tmp_path / "out" / "class.json"
    assert command.run([str(tmp_path / "class")], json_file=str(out), sandbox="none") == 0
    assert len(graded) == 1 and out.is_file()


# --- the copy's autograding workflow ---------------------------------------------------------------


@pytest.mark.slow
def test_a_practice_copy_ships_github_classroom_autograding(tmp_path: Path) -> None:
    made = cli("practice", "05", str(tmp_path / "lab"))
    assert made.returncode == 0, made.stderr
    workflow = yaml.safe_load(
        (tmp_path / "lab" / ".github" / "workflows" / "classroom.yml").read_text(encoding="utf-8")
    )
    assert workflow["on"] == ["push", "workflow_dispatch", "repository_dispatch"]
    assert workflow["permissions"] == {"checks": "write", "actions": "read", "contents": "read"}
    steps = workflow["jobs"]["run-autograding-tests"]["steps"]
    graders = [
        step
        for step in steps
        if step.get("uses", "").startswith("classroom-resources/autograding-command-grader@")
    ]
    tests = focused_tests(ROOT / "tests" / "test_05_provider_adapter.py")
    assert [(g["with"]["command"], g["with"]["max-score"]) for g in graders] == [
        *((grader_command(name), 1) for _, name in tests),
        ("python -m pi_course check 05", 0),
    ]
    assert [number for number, _ in tests] == [step.number for step in STEPS for _ in range(step.expected)]
    assert sum(g["with"]["max-score"] for g in graders) == CHAPTER_TOTAL
    [reporter] = [
        step
        for step in steps
        if step.get("uses", "").startswith("classroom-resources/autograding-grading-reporter@")
    ]
    runners = reporter["with"]["runners"].split(",")
    assert runners == [g["id"] for g in graders]
    assert reporter["env"] == {  # the reporter reads <ID>_RESULTS, the id upper-cased as it is
        f"{runner.upper()}_RESULTS": f"${{{{ steps.{runner}.outputs.result }}}}" for runner in runners
    }
    # What the copy's CI installs is what pyproject.toml asks for, at the same bounds.
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    declared = {*project["dependencies"], *project["optional-dependencies"]["lab"]}
    assert set(CI_REQUIREMENTS) <= declared
    install = next(step["run"] for step in steps if "pip install" in step.get("run", ""))
    assert all(f'"{requirement}"' in install for requirement in CI_REQUIREMENTS)


# --- a class ---------------------------------------------------------------------------------------

# Seconds: each copy's bound, and the whole class's (10 copies, two at a time on a busy 2-core machine;
# the loop at import time holds one worker for the full bound).
COPY_BOUND = 120  # grade's backstop: far above check's own import bound, even at load 10
CLASS_BOUND = 900  # a hang bound on the whole grade run, never a speed target


def build_class(root: Path) -> Path:
    """A class folder of learner copies, and a correct copy as a GitHub-style .zip beside it."""
    starter = root / "starter"
    made = cli("practice", "05", str(starter))
    assert made.returncode == 0, made.stderr
    course = root / "class"
    course.mkdir()

    def learner(name: str, solution: str | None) -> Path:
        return copy_of(starter, course / name, solution)

    learner("fresh", None)
    learner("ada", "ada")
    learner("bo", "bo")
    key = learner("key-in-context", "ada")
    mistake(key, "transport.py",
            "failure = ProviderTransportError(self._key.redact(str(error) or type(error).__name__))",
            "raise ProviderTransportError(self._key.redact(str(error) or type(error).__name__)) from None")  # fmt: skip
    events = learner("one-read-as-events", "bo")
    mistake(
        events, "sse.py", "self._buffer = lines.pop()", 'self._buffer = ""  # every read taken as whole lines'
    )
    race = learner("read-not-raced", "ada")
    mistake(
        race, "transport.py", "yield race.iterate(response.aiter_bytes())", "yield response.aiter_bytes()"
    )
    syntax = learner("syntax-error", "ada")
    mistake(syntax, "sse.py", "start = end + 1", "start = end +")
    loop = learner("loop-at-import", "bo")
    with (loop / "pi_course" / "outbound.py").open("a", encoding="utf-8") as module:
        module.write("\n\nwhile True:  # a learner's leftover experiment\n    pass\n")
    (course / "notes").mkdir()
    (course / "notes" / "README.md").write_text("not a copy", encoding="utf-8")

    zipped = learner("zipped", "bo")
    with zipfile.ZipFile(root / "cy.zip", "w") as archive:
        for path in sorted(zipped.rglob("*")):
            if path.is_file():
                archive.write(path, f"pi-05-cy-main/{path.relative_to(zipped).as_posix()}")
    shutil.rmtree(zipped)
    return course


@pytest.mark.slow
@pytest.mark.workflow  # a class graded: make workflows
def test_a_class_at_a_glance(tmp_path: Path) -> None:
    course = build_class(tmp_path)
    archive = tmp_path / "cy.zip"
    before = {**tree_digest(course), "cy.zip": hashlib.sha256(archive.read_bytes()).hexdigest()}
    out = tmp_path / "out"
    out.mkdir()
    result = cli(
        "grade", "05", str(course), str(archive), "--json", str(out / "class.json"), "--csv", str(out / "class.csv"),
        "--html", str(out / "class.html"), "--jobs", "2", "--timeout", str(COPY_BOUND), cwd=tmp_path,
        timeout=CLASS_BOUND,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert {**tree_digest(course), "cy.zip": hashlib.sha256(archive.read_bytes()).hexdigest()} == before
    assert "Traceback" not in result.stdout + result.stderr

    records = {item["name"]: item for item in json.loads((out / "class.json").read_text(encoding="utf-8"))}
    assert list(records) == [
        "ada", "bo", "fresh", "key-in-context", "loop-at-import", "notes", "one-read-as-events", "read-not-raced",
        "syntax-error", "cy",
    ]  # fmt: skip
    for item in records.values():
        assert list(item) == [*FIELDS, "output"]  # the check's text: a later re-grade rebuilds the page
        assert item["focused_total"] == 11
        assert sum(passed for passed, _ in item["focused"].values()) == item["focused_passed"]
    full = {"5.1": [1, 1], "5.2": [3, 3], "5.3": [5, 5], "5.4": [2, 2]}
    for name in ("ada", "bo", "cy"):
        assert records[name]["status"] == "done", records[name]
        assert records[name]["focused"] == full and records[name]["focused_passed"] == 11
        assert records[name]["beyond_passed"] == records[name]["beyond_total"] >= 5
        assert records[name]["first_failure"] is None
    assert records["cy"]["path"] == str(archive)
    assert records["ada"]["path"] == str(course / "ada")

    fresh = records["fresh"]
    assert fresh["status"] == "incomplete" and fresh["focused_passed"] == 0
    assert fresh["beyond_total"] == 0 and "ToolDefinition" in fresh["first_failure"]

    key = records["key-in-context"]
    assert key["status"] == "incomplete" and key["focused"] == full
    assert 0 < key["beyond_passed"] < key["beyond_total"]
    assert "test_key_stays_out_of_every_error_chain" in key["first_failure"]

    events = records["one-read-as-events"]
    assert events["status"] == "incomplete"
    assert events["focused"] == {**full, "5.3": [0, 5]} and events["focused_passed"] == 6
    assert "实践 5.3" in events["first_failure"] and "test_sse_interleaved" in events["first_failure"]

    race = records["read-not-raced"]
    assert race["status"] == "incomplete"
    assert race["focused"] == {**full, "5.3": [4, 5]} and race["focused_passed"] == 10
    assert "test_sse_abort" in race["first_failure"] and "超过 5 秒没有结束" in race["first_failure"]

    syntax = records["syntax-error"]
    assert syntax["status"] == "import-error" and syntax["focused_passed"] == 0
    assert (
        syntax["first_failure"].startswith("pi_course/sse.py 第 ")
        and "SyntaxError" in syntax["first_failure"]
    )

    loop = records["loop-at-import"]
    assert loop["status"] == "timeout" and loop["focused_passed"] == 0
    # check's own import bound stops it first, in one line naming the cause; grade's bound is the
    # backstop (test_a_copy_past_its_bound_is_stopped_with_everything_it_started).
    assert loop["first_failure"].startswith(f"import pi_course 超过 {IMPORT_BOUND:g} 秒没有结束")

    assert records["notes"]["status"] == "not-a-copy"

    # The table: unfinished first, then the three finished copies.
    rows = result.stdout.splitlines()
    assert rows[0].startswith("副本")
    statuses = [row.split()[1] for row in rows[1:11]]
    assert statuses == ["无法导入", "超时", "不是副本", *["未完成"] * 4, *["完成"] * 3], result.stdout
    assert rows[11] == "共 10 份：完成 3，未完成 4，无法导入 1，超时 1，不是副本 1"

    table_rows = list(csv.DictReader((out / "class.csv").open(encoding="utf-8-sig")))
    assert [row["folder"] for row in table_rows] == list(records)
    assert table_rows[0]["step_5.3"] == "5" and table_rows[0]["status"] == "done"
    assert table_rows[0]["score"] == "11" and table_rows[0]["percent"] == "100.0"
    page = (out / "class.html").read_text(encoding="utf-8")
    assert page.count("<details>") == 10
    # Behind each row, the check's full text: the next step it names, not only the first failure.
    assert "SSEDecoder.feed()：行缓冲" in page and "AbortRace.iterate()" in page
    for name in records:
        assert f'data-name="{name}"' in page


def workflow_points(workflow: str) -> dict[str, int | float]:
    """Each graded step's max-score in a Classroom workflow, by its test name."""
    steps = yaml.safe_load(workflow)["jobs"]["run-autograding-tests"]["steps"]
    return {
        step["with"]["test-name"]: step["with"]["max-score"]
        for step in steps
        if "with" in step and "max-score" in step["with"]
    }


def test_classroom_and_grade_count_the_same_points_per_step() -> None:
    for spec in (None, "5.1=1,5.2=3,5.3=2,5.4=0.5"):
        points = parse_points(spec)
        scores = workflow_points(classroom_workflow(points))
        for step in STEPS:
            in_classroom = sum(score for name, score in scores.items() if name.startswith(f"{step.number} "))
            assert in_classroom == points.step_max(step.number)
    assert parse_points("5.2=3").score({"focused": {"5.2": [2, 3], "5.3": [4, 5]}}) == {
        "5.1": 0, "5.2": 6, "5.3": 4, "5.4": 0,
    }  # fmt: skip
    with pytest.raises(GradebookError, match=r"5\.9"):
        parse_points("5.9=1")


@pytest.mark.slow
@pytest.mark.workflow  # a class graded: make workflows
def test_a_copy_at_ten_of_eleven_scores_the_same_in_classroom_and_grade(tmp_path: Path) -> None:
    copy = tmp_path / "lab"
    made = cli("practice", "05", str(copy))
    assert made.returncode == 0, made.stderr
    apply(copy, "ada")
    mistake(
        copy, "transport.py", "yield race.iterate(response.aiter_bytes())", "yield response.aiter_bytes()"
    )
    workflow = (copy / ".github" / "workflows" / "classroom.yml").read_text(encoding="utf-8")
    steps = yaml.safe_load(workflow)["jobs"]["run-autograding-tests"]["steps"]
    # Classroom's machine installs only what the workflow lists: no nbval or hypothesis plugins,
    # whose imports would cost each of the eleven pytest processes here about two seconds.
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    env["PYTEST_ADDOPTS"] = "-p no:nbval -p no:hypothesispytest"
    tests = [
        step["with"]
        for step in steps
        if step.get("with", {}).get("command", "").startswith("python -m pytest")
    ]

    def points(test: dict[str, Any]) -> int:
        ran = subprocess.run(
            [sys.executable, *shlex.split(test["command"])[1:]], cwd=copy, env=env, capture_output=True,
            text=True, timeout=120, check=False,
        )  # fmt: skip
        return int(test["max-score"]) if ran.returncode == 0 else 0

    # Classroom runs its steps one after another; here they overlap (the blocked read waits its bound).
    with ThreadPoolExecutor(max_workers=4) as pool:
        classroom = sum(pool.map(points, tests))
    assert len(tests) == 11
    checked = cli("check", "05", "--json", "--path", str(copy), cwd=tmp_path)
    record = json.loads(checked.stdout.strip().splitlines()[-1])
    graded = sum(Points({}).score(record).values())
    assert classroom == graded == 10


def test_near_identical_lesson_code_is_paired_and_the_starter_is_not_counted() -> None:
    from pi_course.course.grade.similarity import near_identical

    starter = "\n".join(
        f"def given_{index}(value):\n    return value * {index} + len(str(value))\n" for index in range(40)
    )
    mine = "\n".join(
        f"def helper_{index}(items, limit):\n    total = 0\n    for item in items[:limit]:\n"
        f"        total += item ** {index % 3 + 1}\n    return total - {index}\n"
        for index in range(30)
    )
    theirs = mine.replace("total", "acc").replace("items", "xs")  # renamed: still the same code
    other = "\n".join(
        f"class Reader{index}:\n    def read(self, stream):\n        return stream.read({index}).decode('utf-8')\n"
        for index in range(30)
    )
    codes = {"ada": starter + mine, "bo": starter + theirs, "cy": starter + other, "fresh": starter}
    pairs = near_identical(codes, starter)
    assert [(pair.left, pair.right) for pair in pairs] == [("ada", "bo")]
    assert pairs[0].similarity >= 0.9 and pairs[0].right_code == codes["bo"]
