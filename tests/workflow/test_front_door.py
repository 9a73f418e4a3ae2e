"""Bad input at the front door: refused before anything is written, in one Chinese line with the fix.

practice onto a file, into an existing copy, inside one or above one; check in a folder above a
copy; grade given an empty folder, a folder with no copy, a file or a folder inside a copy; and a
Python without the course, told which Python has it by its real path.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from pi_course.course.cli import main
from pi_course.course.copies import practice as practice_module
from pi_course.course.copies import pythons
from pi_course.course.copies.locate import check_target
from pi_course.course.copies.practice import create_practice
from pi_course.course.grade import GradeError, discover
from pi_course.course.grade import command as grade_command

ROOT = Path(__file__).parents[2]


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding one practice copy, ``pi-05``."""
    parent = tmp_path_factory.mktemp("home")
    create_practice(parent / "pi-05")
    return parent


def refused(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    """Run a command that must refuse: exit 2, one line on stderr, nothing on stdout."""
    assert main(argv) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert captured.out == "" and len(lines) == 1, captured
    return lines[0]


def snapshot(folder: Path) -> list[str]:
    return sorted(str(path.relative_to(folder)) for path in folder.rglob("*"))


def test_practice_onto_a_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    target = tmp_path / "notes.txt"
    target.write_text("mine", encoding="utf-8")
    line = refused(capsys, ["practice", "05", str(target)])
    assert line.startswith(f"{target} 是一个文件，不是文件夹") and "换一个路径" in line
    assert "不是空目录" not in line and target.read_text(encoding="utf-8") == "mine"
    assert snapshot(tmp_path) == ["notes.txt"]


def test_practice_into_an_existing_copy_says_cd_into_it(
    capsys: pytest.CaptureFixture[str], made: Path
) -> None:
    copy = made / "pi-05"
    before = snapshot(made)
    line = refused(capsys, ["practice", "05", str(copy)])
    assert line.startswith("这里已经是你的练习副本：接着做就 cd " + str(copy)), line
    assert "-m pi_course check 05" in line
    inside = refused(capsys, ["practice", "05", str(copy / "notebooks")])
    assert inside.startswith(f"{copy / 'notebooks'} 在你的练习副本 {copy} 里面：接着做就 cd {copy}"), inside
    above = refused(capsys, ["practice", "05", str(made)])
    assert f"它下面已经有练习副本：{copy}" in above and f"cd {copy}" in above, above
    assert snapshot(made) == before


def test_check_above_a_copy_names_the_copy_below(made: Path) -> None:
    copy = made / "pi-05"
    root, line = check_target(None, made, ROOT)
    assert root is None and line is not None
    assert f"它下面有：{copy}" in line and f"cd {copy}" in line and f"--path {copy}" in line
    root, line = check_target(str(made), made, ROOT)
    assert root is None and line is not None
    assert f"它下面有：{copy}" in line and f"--path {copy}" in line, line
    assert check_target(str(copy), made, ROOT) == (copy, None)


def test_grade_with_nothing_to_grade_writes_nothing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    empty = tmp_path / "not-a-copy"
    empty.mkdir()
    junk = tmp_path / "junk"
    (junk / "a").mkdir(parents=True)
    (junk / "a" / "x.txt").write_text("x", encoding="utf-8")
    loose = tmp_path / "roster.csv"
    loose.write_text("ada", encoding="utf-8")
    out = tmp_path / "out"
    for given, says in ((empty, "是空文件夹"), (junk, "里没有练习副本"), (loose, "是一个文件，不是文件夹")):
        assert (
            grade_command.run([str(given)], csv_file=str(out / "c.csv"), json_file=str(out / "c.json")) == 2
        )
        line = capsys.readouterr().err.strip()
        assert "\n" not in line and line.startswith("grade 05：没有可以评的副本：") and says in line, line
        assert "没有评分，也没有写任何文件" in line
        assert not out.exists()


def test_grade_inside_a_copy_names_the_copy(made: Path) -> None:
    copy = made / "pi-05"
    with pytest.raises(GradeError, match=f"在副本 {copy} 里面"):
        discover([copy / "notebooks"])
    assert [source.kind for source in discover([copy])] == ["folder"]


def test_grade_keeps_a_learners_junk_beside_real_copies(made: Path, tmp_path: Path) -> None:
    """A learner's folder that is no copy is still a row when the class has copies: reported, not lost."""
    (made / "junk").mkdir(exist_ok=True)
    kinds = {source.name: source.kind for source in discover([made])}
    assert kinds == {"pi-05": "folder", "junk": "not-a-copy"}


# --- which Python has the course -----------------------------------------------------------------


def fake_venv(root: Path) -> Path:
    """A ``.venv/bin/python`` (an executable file, never run) with an ``activate`` beside it."""
    bin_dir = root / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "python").write_text("#!/bin/sh\nexit 1\n", encoding="utf-8")
    (bin_dir / "python").chmod(0o755)
    (bin_dir / "activate").write_text("# activate\n", encoding="utf-8")
    return bin_dir / "python"


@pytest.mark.slow  # reads sys.executable (the suite's marker rule); no process is started
def test_a_copy_records_the_python_that_made_it(made: Path) -> None:
    recorded = (made / "pi-05" / pythons.MADE_BY).read_text(encoding="utf-8").strip()
    assert recorded == str(Path(sys.executable).absolute())
    learning = (made / "pi-05" / "LEARNING.md").read_text(encoding="utf-8")
    assert (
        "/path/to" not in learning
        and f"`{Path(sys.executable).absolute()} -m pi_course check 05`" in learning
    )


@pytest.mark.slow
def test_another_python_in_a_copy_is_told_the_one_that_made_it(made: Path, tmp_path: Path) -> None:
    """The copy names its maker by path; here this Python without site-packages stands for another."""
    copy = made / "pi-05"
    maker = fake_venv(tmp_path)
    recorded = copy / pythons.MADE_BY
    original = recorded.read_text(encoding="utf-8")
    recorded.write_text(f"{maker}\n", encoding="utf-8")
    try:
        result = subprocess.run(
            [sys.executable, "-S", "-m", "pi_course", "check", "05", "--step", "5.1"],
            cwd=copy, capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
    finally:
        recorded.write_text(original, encoding="utf-8")
    [line] = result.stderr.strip().splitlines()
    assert result.returncode == 2 and result.stdout == ""
    assert line == (
        f"这个 Python（{sys.executable}）没有安装 pi-course。请写成 {maker} -m pi_course check 05 --step 5.1"
        f"（或先 source {maker.parent / 'activate'}，之后的 python 就是它）。"
    )


def test_practice_with_a_python_without_the_course_names_the_clones(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    clone = tmp_path / "clone"
    venv_python = fake_venv(clone)
    monkeypatch.setattr(practice_module, "missing_packages", lambda: ["httpx", "jupyterlab"])
    monkeypatch.setattr(practice_module, "course_root", lambda: clone)
    monkeypatch.setattr(practice_module.sys, "argv", ["-m", "practice", "05", str(tmp_path / "lab")])
    line = refused(capsys, ["practice", "05", str(tmp_path / "lab")])
    assert re.match(r"这个 Python（/\S+）没有安装 httpx、jupyterlab，", line) and "没有创建任何文件" in line
    assert f"请写成 {venv_python} -m pi_course practice 05 {tmp_path / 'lab'}" in line, line
    assert not (tmp_path / "lab").exists()


@pytest.mark.slow
def test_practice_with_this_python_without_site_packages_makes_nothing(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-S", "-m", "pi_course", "practice", "05", str(tmp_path / "lab")],
        cwd=ROOT, capture_output=True, text=True, timeout=60, check=False,
        env={**os.environ, "PYTHONPATH": ""},
    )  # fmt: skip
    assert result.returncode == 2 and result.stdout == "", result.stderr
    [line] = result.stderr.strip().splitlines()
    assert "没有安装 httpx" in line and "没有创建任何文件" in line and "pi-course[lab]" in line
    assert list(tmp_path.iterdir()) == []


def test_grade_with_a_python_without_the_course_grades_nothing(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Every copy would read as one that does not import: refused, naming the clone's Python."""
    clone = tmp_path / "clone"
    venv_python = fake_venv(clone)
    monkeypatch.setattr(grade_command, "missing_packages", lambda needed: ["httpx"])
    monkeypatch.setattr(grade_command, "course_root", lambda: clone)
    monkeypatch.setattr(grade_command.sys, "argv", ["-m", "grade", "05", "class", "--csv", "c.csv"])
    out = tmp_path / "c.csv"
    assert grade_command.run([str(tmp_path)], csv_file=str(out)) == 2
    line = capsys.readouterr().err.strip()
    assert line.startswith("grade 05：这个 Python（") and "没有安装 httpx" in line and "没有评分" in line
    assert line.endswith(
        f"请写成 {venv_python} -m pi_course grade 05 class --csv c.csv"
        f"（或先 source {venv_python.parent / 'activate'}，之后的 python 就是它）。"
    )
    assert not out.exists()


def test_a_missing_dependency_names_the_command_that_was_run(monkeypatch: pytest.MonkeyPatch) -> None:
    from pi_course.course.checker import import_failure

    monkeypatch.setattr(import_failure.sys, "argv", [str(ROOT / "pi_course" / "__main__.py"), "chat", "hi"])
    line = import_failure.import_failure_line("ModuleNotFoundError: No module named 'httpx'")
    assert "-m pi_course chat hi" in line and "check 05" not in line, line
    monkeypatch.setattr(import_failure.sys, "argv", ["pytest"])
    assert "-m pi_course check 05" in import_failure.import_failure_line(
        "ModuleNotFoundError: No module named 'x'"
    )


def test_an_os_error_is_said_in_chinese(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """The C library's English reason (No such file or directory) never reaches a line."""
    copy = create_practice(tmp_path / "ada")
    line = refused(capsys, ["grade", "05", str(copy), "--roster", str(tmp_path / "nope.csv")])
    assert line == f"--roster {tmp_path / 'nope.csv'}：无法读取：不存在。"
    from pi_course.course.oserrors import reason

    assert reason(PermissionError(13, "Permission denied")) == "没有权限"
    assert reason(OSError(98, "Address already in use")) == "端口已被占用"
    assert reason(OSError(5, "Input/output error")) == "Input/output error"  # an unusual one, as it is
