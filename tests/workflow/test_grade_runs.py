"""``grade 05`` as an instructor runs it: links and nested copies found, a roster, runs cut short, re-grades.

A class folder may hold a symbolic link to a copy or a learner's folder with two attempts; each
gets a row. Ctrl-C or SIGTERM writes the rows already graded and leaves no process or temporary
folder; re-grading one student keeps everyone else's row in the class's files.
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from children import sigint_default
from learners import apply
from test_grade import fake_copy

from pi_course.course.checker.record import FIELDS, nothing_ran, record_line
from pi_course.course.grade import Sandbox, Source, discover, grade_one, instructor_copy
from pi_course.course.grade.gradebook import parse_points, read_roster, to_csv

ROOT = Path(__file__).parents[2]


def test_a_linked_copy_and_two_copies_in_one_folder_each_get_a_row(tmp_path: Path) -> None:
    course = tmp_path / "class"
    fake_copy(course / "ada")
    fake_copy(tmp_path / "elsewhere" / "bo-copy")
    (course / "bo").symlink_to(tmp_path / "elsewhere" / "bo-copy", target_is_directory=True)
    fake_copy(course / "cy" / "first-try")
    fake_copy(course / "cy" / "second-try")
    found = discover([course])
    assert [(source.name, source.kind) for source in found] == [
        ("ada", "folder"), ("bo", "folder"), ("cy/first-try", "folder"), ("cy/second-try", "folder"),
    ]  # fmt: skip
    assert found[1].path == course / "bo"
    assert found[3].path == course / "cy" / "second-try"


def test_the_gradebook_reads_a_classroom_roster_and_writes_numbers(tmp_path: Path) -> None:
    roster = tmp_path / "roster.csv"
    roster.write_text(
        "\ufeffidentifier,github_username,github_id,name\n2026001,alice,1,张三\n2026002,bob-x,2,-李四\n",
        encoding="utf-8",
    )
    students = read_roster(str(roster))
    record = {
        "name": "pi-05-alice", "status": "incomplete", "focused": {"5.1": [1, 1], "5.2": [3, 3], "5.3": [4, 5],
        "5.4": [0, 2]}, "flags": ["tests-modified"], "first_failure": "=1+1", "graded_at": "2026-12-04T10:00:00Z",
    }  # fmt: skip
    other = {**record, "name": "bob-x", "focused": {"5.1": [1, 1]}, "flags": []}
    text = to_csv([record, other, {**record, "name": "nobody"}], parse_points("5.3=2"), students)
    assert text.startswith("\ufeff")
    rows = list(csv.DictReader(io.StringIO(text.removeprefix("\ufeff"))))
    assert rows[0] == {
        "student": "张三", "student_id": "2026001", "folder": "pi-05-alice", "score": "12", "max": "16",
        "percent": "75.0", "step_5.1": "1", "step_5.2": "3", "step_5.3": "8", "step_5.4": "0",
        "status": "incomplete", "flags": "tests-modified", "first_failure": "'=1+1",
        "graded_at": "2026-12-04T10:00:00Z",
    }  # fmt: skip
    assert (rows[1]["student"], rows[1]["student_id"], rows[1]["score"]) == ("'-李四", "2026002", "1")
    assert (rows[2]["student"], rows[2]["student_id"]) == ("nobody", "")


def cli(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pi_course", *args], cwd=cwd, capture_output=True, text=True, timeout=600,
        check=False, env=env,
    )  # fmt: skip


def practice_copy(folder: Path, solution: str | None = None) -> Path:
    made = cli("practice", "05", str(folder), cwd=folder.parent)
    assert made.returncode == 0, made.stderr
    if solution is not None:
        apply(folder, solution)
    return folder


@pytest.mark.slow
@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM])
def test_a_run_cut_short_writes_the_graded_rows_and_leaves_nothing(
    tmp_path: Path, stop: signal.Signals
) -> None:
    course = tmp_path / "class"
    course.mkdir()
    practice_copy(course / "a-fresh")
    shutil.copytree(course / "a-fresh", course / "b-loop")
    with (course / "b-loop" / "pi_course" / "outbound.py").open("a", encoding="utf-8") as module:
        module.write("\n\nwhile True:\n    pass\n")
    scratch = tmp_path / "tmp"  # grade's own temporary folders go here, and must be gone afterwards
    scratch.mkdir()
    out = tmp_path / "class.json"
    process = subprocess.Popen(
        [sys.executable, "-m", "pi_course", "grade", "05", str(course), "--jobs", "1", "--json", str(out),
         "--csv", str(tmp_path / "class.csv")],
        cwd=tmp_path, env={**os.environ, "TMPDIR": str(scratch)}, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, preexec_fn=sigint_default,
    )  # fmt: skip
    try:
        assert process.stderr is not None
        for line in process.stderr:  # a hang bound: the process's own time bound ends this loop
            if line.startswith("[1/2] a-fresh"):
                break
        time.sleep(1)  # b-loop's check is running now
        process.send_signal(stop)
        assert process.wait(timeout=120) == 130
    finally:
        process.kill()
        process.wait()
    records = json.loads(out.read_text(encoding="utf-8"))
    assert [record["name"] for record in records] == ["a-fresh"] and records[0]["status"] == "incomplete"
    rows = list(csv.DictReader((tmp_path / "class.csv").open(encoding="utf-8-sig")))
    assert [row["folder"] for row in rows] == ["a-fresh"]
    assert list(scratch.iterdir()) == []
    left = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and str(course).encode() in (proc / "cmdline").read_bytes():
                left.append(proc.name)
        except OSError:
            continue
    assert left == []


@pytest.mark.slow
def test_re_grading_one_student_updates_the_class_files(tmp_path: Path) -> None:
    course = tmp_path / "class"
    course.mkdir()
    practice_copy(course / "ada")
    practice_copy(course / "bo", "bo")
    files = ["--json", str(tmp_path / "class.json"), "--csv", str(tmp_path / "class.csv")]
    first = cli("grade", "05", str(course), *files, "--html", str(tmp_path / "class.html"), cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    before = {
        item["name"]: item for item in json.loads((tmp_path / "class.json").read_text(encoding="utf-8"))
    }
    assert before["ada"]["status"] == "incomplete" and before["bo"]["status"] == "done"
    apply(course / "ada", "ada")  # ada finishes the chapter and asks to be graded again
    again = cli(
        "grade", "05", str(course / "ada"), *files, "--html", str(tmp_path / "class.html"), cwd=tmp_path
    )
    assert again.returncode == 0, again.stderr
    after = {item["name"]: item for item in json.loads((tmp_path / "class.json").read_text(encoding="utf-8"))}
    assert list(after) == ["ada", "bo"]
    assert after["ada"]["status"] == "done" and after["bo"] == before["bo"]
    rows = {row["folder"]: row for row in csv.DictReader((tmp_path / "class.csv").open(encoding="utf-8-sig"))}
    assert rows["ada"]["score"] == rows["bo"]["score"] == "11"
    page = (tmp_path / "class.html").read_text(encoding="utf-8")
    assert 'data-name="ada"' in page and 'data-name="bo"' in page


@pytest.mark.slow
def test_a_copy_without_its_beyond_file_is_never_done(tmp_path: Path) -> None:
    copy = practice_copy(tmp_path / "lab", "ada")
    (copy / "tests" / "test_05_beyond.py").unlink()
    inside = cli("check", "05", cwd=copy)  # the copy's own tests, as its notebooks run them
    assert inside.returncode == 1
    assert inside.stdout.splitlines()[-1] == (
        "第 05 章：未完成——没有找到 tests/test_05_beyond.py，本章之外的检查没有运行，不能算完成。"
        "下一步：从新的练习副本（practice 05 新目录）拷回 tests/test_05_beyond.py"
    )
    outside = cli("check", "05", "--json", "--path", str(copy), cwd=tmp_path)  # the installed tests
    record = json.loads(outside.stdout.strip().splitlines()[-1])
    assert record["status"] == "done" and record["flags"] == ["tests-modified"]
    assert "tests-modified" in outside.stderr


@pytest.mark.slow
def test_grade_keeps_every_field_of_the_record_check_printed(tmp_path: Path) -> None:
    copy = fake_copy(tmp_path / "ada")
    printed = nothing_ran("inner", "/inner", "incomplete", "先完成实践 5.3", 3.0)
    printed.update({"rules_kept": 17, "compared": {"5.1": 153}, "tests": {"test_outbound": True}})
    script = f"print({record_line(printed)!r})"
    with instructor_copy() as instructor:
        graded = grade_one(
            Source("ada", copy, "folder"), instructor, Sandbox("none", "test"), 30, None,
            lambda _: [sys.executable, "-c", script],
        )  # fmt: skip
    record = graded.record
    assert list(record) == list(FIELDS)  # nothing dropped, nothing added, in the documented order
    assert (record["rules_kept"], record["rules_total"]) == (17, printed["rules_total"])
    assert record["compared"] == {"5.1": 153} and record["tests"] == {"test_outbound": True}
    assert (record["name"], record["path"], record["first_failure"]) == ("ada", str(copy), "先完成实践 5.3")
