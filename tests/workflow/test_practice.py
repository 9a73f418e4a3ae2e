"""The learner's workflow: practice copy → first red light → green, from a clone or a wheel.

Like nbgrader's validate and ``--invert``: the reference passes (test_check.py runs that), the
starter fails the way the chapter says, and the reference modules copied into the starter make it
pass again. A completed copy's notebooks run under nbval-lax once, in test_learners.py, with a
learner's own code.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from pi_course.chapter.steps import LESSON_FILES
from pi_course.course.copies.starters import make_starter, starter_sources
from pi_course_here import edition_of

ROOT = Path(__file__).parents[2]
PACKAGE = ROOT / "pi_course"


def cli(*args: str, cwd: Path = ROOT, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pi_course", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def copy_reference(into: Path, names: tuple[str, ...]) -> None:
    for name in names:
        text = (PACKAGE / name).read_text(encoding="utf-8")
        (into / "pi_course" / name).write_text(text, encoding="utf-8")


@pytest.fixture
def practice(tmp_path: Path) -> Path:
    result = cli("practice", "05", str(tmp_path / "lab"))
    assert result.returncode == 0, result.stderr
    return tmp_path / "lab"


@pytest.mark.slow
def test_a_copy_written_over_with_the_reference_still_reads_as_a_practice_copy(practice: Path) -> None:
    """The edition comes from the copy: the reference's ``__init__.py`` pasted in (the target's) changes nothing."""
    copy_reference(practice, ("__init__.py",))
    said = subprocess.run(
        [sys.executable, "-c", "import pi_course; print(pi_course.EDITION)"],
        cwd=practice, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert said.stdout == "practice\n", said.stderr


def test_make_starter_replaces_removes_and_keeps_generators() -> None:
    source = (
        "def f():\n"
        '    """Lab 5.2: f."""\n'
        "    # BEGIN LAB 5.2\n"
        "    yield 1\n"
        "    # END LAB 5.2\n"
        "# BEGIN LAB 5.1 REMOVE\n"
        "X = 1\n"
        "# END LAB 5.1 REMOVE\n"
        "def g():\n"
        "    # BEGIN LAB 5.4 (starter: return 0)\n"
        "    return 42\n"
        "    # END LAB 5.4\n"
    )
    assert make_starter(source) == (
        "def f():\n"
        '    """Lab 5.2: f."""\n'
        '    raise NotImplementedError("Lab 5.2 normalized transport 状态机 尚未实现")\n'
        "    if False:  # never runs: it only keeps this a generator (harmless if left in)\n"
        "        yield\n"
        "def g():\n"
        "    return 0  # starter: Lab 5.4 replaces this line\n"
    )
    assert "return 42" in make_starter(source, steps={"5.2"})
    with pytest.raises(ValueError, match="not closed"):
        make_starter("# BEGIN LAB 5.1\nx = 1\n")


def test_every_stub_names_its_step_in_message_and_docstring() -> None:
    stubs = 0
    for name, text in starter_sources().items():
        assert "BEGIN LAB" not in text or name == "course/copies/starters.py"
        for match in re.finditer(
            r'"""Lab (\d\.\d): [^\n]*\n\s*raise NotImplementedError\("Lab (\d\.\d) ', text
        ):
            assert match[1] == match[2]
            stubs += 1
    assert stubs >= 15
    assert "class ToolDefinition" not in starter_sources()["protocol.py"]


@pytest.mark.slow
def test_practice_copy_layout(practice: Path) -> None:
    assert sorted(path.name for path in practice.iterdir()) == [
        ".github",
        ".gitignore",  # check's kept results (.pi_course/) are not the learner's work
        ".pi_course_python",  # the Python that made it (pythons.MADE_BY)
        "LEARNING.md",
        "notebooks",
        "pi_course",
        "tests",
    ]
    learning = (practice / "LEARNING.md").read_text(encoding="utf-8")
    for expected in ("1/1", "3/3", "5/5", "2/2", "11/11", "python -m pi_course check 05"):
        assert expected in learning
    notebook = json.loads((practice / "notebooks" / "05-1-outbound.ipynb").read_text(encoding="utf-8"))
    assert all(cell.get("outputs", []) == [] for cell in notebook["cells"])
    assert edition_of(practice / "pi_course") == "practice" and edition_of(PACKAGE) == "reference"


@pytest.mark.slow
def test_an_existing_non_empty_directory_is_refused_and_left_untouched(tmp_path: Path) -> None:
    (tmp_path / "mine.txt").write_text("keep me", encoding="utf-8")
    result = cli("practice", "05", str(tmp_path))
    assert result.returncode == 2
    assert "不是空目录" in result.stderr
    assert [path.name for path in tmp_path.iterdir()] == ["mine.txt"]


@pytest.mark.slow
def test_fresh_copy_shows_the_first_red_light_then_turns_green_step_by_step(practice: Path) -> None:
    red = cli("check", "05", cwd=practice)
    assert red.returncode == 1
    assert red.stdout.strip().splitlines() == [
        "第 05 章：未完成——第一次红灯：pi_course 没有导出 ToolDefinition；AgentContext 没有 tools 字段。"
        "先完成实践 5.1 的两个类型。"
    ]
    assert "Traceback" not in red.stdout + red.stderr

    copy_reference(practice, ("protocol.py", "outbound.py", "__init__.py"))
    after_51 = cli("check", "05", "--path", str(practice))
    assert after_51.returncode == 1
    assert after_51.stdout.splitlines()[:2] == [
        "出站转换：1/1 通过",
        "normalized transport 状态机：0/3 未通过",
    ]

    copy_reference(practice, ("adapter.py",))
    assert "normalized transport 状态机：3/3 通过" in cli("check", "05", "--step", "5.2", cwd=practice).stdout

    # transport.py with 5.3 done and 5.4 still at its starter: SSE passes, the request shape does not.
    (practice / "pi_course" / "sse.py").write_text(
        (PACKAGE / "sse.py").read_text(encoding="utf-8"), encoding="utf-8"
    )
    half = make_starter((PACKAGE / "transport.py").read_text(encoding="utf-8"), steps={"5.4"})
    (practice / "pi_course" / "transport.py").write_text(half, encoding="utf-8")
    lines = cli("check", "05", "--course-only", cwd=practice).stdout.splitlines()
    assert lines[2:5] == [
        "SSE 与 unknown 边界：5/5 通过",
        "fetch transport 与密钥脱敏：0/2 未通过",
        "第 05 章聚焦测试：9/11",
    ]
    # Then a line per failing test, saying what to look at first (and the decisive difference).
    assert [line.split(" — ")[0] for line in lines[5:] if line.startswith("  ✗ ")] == [
        "  ✗ test_fetch_transport_sends_the_exact_request",
        "  ✗ test_fetch_transport_redacts_the_key_from_an_underlying_error",
    ]

    copy_reference(practice, LESSON_FILES)
    green = cli("check", "05", "--course-only", cwd=practice)
    assert green.returncode == 0 and green.stdout.splitlines()[-2:] == [
        "第 05 章聚焦测试：11/11",
        "第 05 章聚焦测试：完成",
    ]


@pytest.mark.slow
def test_checkpoint_command_and_target_diff() -> None:
    summary = cli("checkpoint", "05").stdout
    for expected in (
        "起点（parent）",
        "终点（target）",
        "pi_course/adapter.py",
        "tests/test_05_provider_adapter.py",
        "practice 05 DIR",
    ):
        assert expected in summary
    diff = cli("checkpoint", "05", "--diff").stdout
    assert "--- starter/pi_course/protocol.py" in diff and "+++ target/pi_course/protocol.py" in diff
    assert "+class ToolDefinition:" in diff
    assert "+++ target/pi_course/__init__.py" in diff and "+        ToolDefinition," in diff
    assert '-    raise NotImplementedError("Lab 5.1 出站转换 尚未实现")' in diff
    assert "BEGIN LAB" not in diff


@pytest.mark.slow
def test_a_wheel_carries_what_practice_needs(tmp_path: Path) -> None:
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(tmp_path), str(ROOT)],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert build.returncode == 0, build.stderr
    [wheel] = tmp_path.glob("pi_course-*.whl")
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        archive.extractall(site)
    assert "pi_course/_course/tests/test_05_provider_adapter.py" in names
    assert "pi_course/_course/notebooks/05-2-state-machine.ipynb" in names
    assert "pi_course/_course/tests/test_05_beyond.py" in names
    assert "pi_course/_course/tests/test_05_rules.py" in names
    assert "pi_course/course/copies/templates/LEARNING.md" in names

    env = {**os.environ, "PYTHONPATH": str(site)}
    made = cli("practice", "05", str(tmp_path / "lab"), cwd=tmp_path, env=env)
    assert made.returncode == 0, made.stderr
    assert (tmp_path / "lab" / "tests" / "test_05_provider_adapter.py").is_file()
    assert (tmp_path / "lab" / "tests" / "test_05_beyond.py").is_file()
    assert (tmp_path / "lab" / "tests" / "test_05_rules.py").is_file()
    assert (tmp_path / "lab" / "pi_course" / "course" / "target-05" / "transport.py").is_file()
    assert not (tmp_path / "lab" / "pi_course" / "_course").exists()
    assert len(list((tmp_path / "lab" / "notebooks").glob("05-*.ipynb"))) == len(
        list((ROOT / "notebooks").glob("05-*.ipynb"))
    )
    shutil.rmtree(site)


def test_practice_names_the_python_that_has_the_course(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Made with ``.venv/bin/python`` while ``python`` on PATH is another: the next steps name this one."""
    from pi_course.course.copies import practice as practice_module

    here = "/course/.venv/bin/python"  # the Python that made the copy (none is started here)
    monkeypatch.setattr(practice_module.sys, "executable", here)
    monkeypatch.setattr(practice_module.shutil, "which", lambda name: "/usr/bin/python")
    printed = practice_module.next_steps(tmp_path / "lab")
    assert f"{here} -m pi_course check 05" in printed
    assert f"{here} -m jupyter {practice_module.LAB_ARGUMENTS}" in printed
    assert f"cd {tmp_path / 'lab'}" in printed
    monkeypatch.setattr(practice_module.shutil, "which", lambda name: f"/course/.venv/bin/{name}")
    assert "  python -m pi_course check 05" in practice_module.next_steps(tmp_path / "lab")


@pytest.mark.slow
def test_learning_md_starts_with_the_first_steps(practice: Path) -> None:
    """“先做这个” comes first: numbered, the red light, then JupyterLab at the copy on 05-0."""
    from pi_course.course.copies.practice import LAB_ARGUMENTS

    learning = (practice / "LEARNING.md").read_text(encoding="utf-8")
    sections = re.findall(r"(?m)^## (.+)$", learning)
    assert sections[0] == "先做这个", sections
    first = learning.split("## ", 2)[1]
    steps = re.findall(r"(?m)^(\d)\. ", first)
    assert steps == ["1", "2", "3", "4"], first
    assert "python -m pi_course check 05" in first and f"python -m jupyter {LAB_ARGUMENTS}" in first
    assert f"\njupyter {LAB_ARGUMENTS}" in learning  # the activated form, in the section that opens the lab
    assert "jupyter lab notebooks/" not in learning  # that form serves notebooks/ alone: pi_course/ hidden


@pytest.mark.slow
def test_a_python_without_the_course_says_so_in_one_line(practice: Path) -> None:
    """The system Python in a copy (here: this one without its site-packages) stops in one line."""
    result = subprocess.run(
        [sys.executable, "-S", "-m", "pi_course", "check", "05"],
        cwd=practice, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1 and result.stdout == "", result.stderr
    assert (
        "没有安装 pi-course" in lines[0]
        and "-m pi_course check 05" in lines[0]
        and sys.executable in lines[0]
    )
    imported = subprocess.run(
        [sys.executable, "-S", "-c", "import pi_course"],
        cwd=practice, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert imported.stderr.strip().splitlines()[-1].startswith("ModuleNotFoundError: 这个 Python")
