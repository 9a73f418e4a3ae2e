"""The ``check`` runner itself: first red light, time bounds, readable failures, flags, Ctrl-C,
the verdict line, the ``--json`` record, which tree is checked.

Learner code comes from ``tests/workflow/learners`` (written from the chapter, not the reference);
a mistake is a textual edit of that code.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from children import sigint_default
from learners import LEARNERS, apply, merge

from pi_course.chapter.rules import RULES
from pi_course.chapter.steps import STEPS, step
from pi_course.course.check import check, check_record
from pi_course.course.checker import advice, import_failure, redlight, stubs, testrun
from pi_course.course.checker.advice import failure_lines, next_step_lines
from pi_course.course.checker.facts import BeyondCheck, Detail, Report
from pi_course.course.checker.judgement import judge
from pi_course.course.checker.plugin_path.pi_course_check.contract import PLUGIN, TIMEOUT_VARIABLE
from pi_course.course.checker.results import read_cases, report_of
from pi_course.course.checker.rulestate import rule_results
from pi_course.course.checker.testrun import run_tests
from pi_course.course.copies.practice import create_practice

ROOT = Path(__file__).parents[2]
# A red light that imports nothing and finds nothing missing: the pytest process meets the package first.
RED_LIGHT_SKIPPED = f"import os\nopen(os.environ[{redlight.ANSWER_VARIABLE!r}], 'w').write('[]')\n"
PACKAGE = ROOT / "pi_course"
COURSE_LINES = [
    "出站转换：1/1 通过",
    "normalized transport 状态机：3/3 通过",
    "SSE 与 unknown 边界：5/5 通过",
    "fetch transport 与密钥脱敏：2/2 通过",
    "第 05 章聚焦测试：11/11",
]
RED_LIGHT = (
    "第一次红灯：pi_course 没有导出 ToolDefinition；AgentContext 没有 tools 字段。先完成实践 5.1 的两个类型。"
)
LEARNER = "ada"  # the learner whose code makes a completed copy here


def cli(*args: str, cwd: Path = ROOT, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pi_course", *args],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=180, check=False,
    )  # fmt: skip


@pytest.fixture(scope="module")
def starter(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One fresh practice copy; tests work on copies of it."""
    # What `practice 05` makes, made in this process (test_practice runs the command itself).
    return create_practice(tmp_path_factory.mktemp("starter") / "lab")


@pytest.fixture
def new_practice(starter: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(starter, tmp_path / "lab"))


@pytest.fixture
def completed(new_practice: Path) -> Path:
    """A practice copy with a learner's code for every step: every check passes."""
    apply(new_practice, LEARNER)
    return new_practice


def learner_steps(copy: Path, modules: tuple[str, ...]) -> None:
    """Only these modules of the learner's code: the state of a learner part-way through."""
    for name in modules:
        target = copy / "pi_course" / name
        own = (LEARNERS / LEARNER / name).read_text(encoding="utf-8")
        target.write_text(merge(target.read_text(encoding="utf-8"), own), encoding="utf-8")


def edit(copy: Path, module: str, old: str, new: str) -> None:
    path = copy / "pi_course" / module
    source = path.read_text(encoding="utf-8")
    assert source.count(old) == 1, f"{old!r} is no longer in {module} exactly once"
    path.write_text(source.replace(old, new), encoding="utf-8")


def json_record(result: subprocess.CompletedProcess[str]) -> dict[str, object]:
    """The one JSON line ``check --json`` prints, and nothing else on stdout."""
    [line] = result.stdout.splitlines()
    record = json.loads(line)
    assert isinstance(record, dict)
    assert isinstance(record.pop("seconds"), float)
    return record


FOCUSED_NONE = {"5.1": [0, 1], "5.2": [0, 3], "5.3": [0, 5], "5.4": [0, 2]}


# --- the verdict --------------------------------------------------------------------------------


@pytest.mark.slow
def test_fresh_copy_gives_the_first_red_light_as_its_verdict(new_practice: Path) -> None:
    result = cli("check", "05", cwd=new_practice)
    assert result.returncode == 1
    assert result.stdout.splitlines() == [f"第 05 章：未完成——{RED_LIGHT}"]
    assert result.stderr == ""


@pytest.mark.slow
def test_the_reference_is_checked_only_when_asked_and_then_it_is_done(tmp_path: Path) -> None:
    result = cli("check", "05", "--reference", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stderr == ""
    lines = result.stdout.splitlines()
    assert lines[:5] == COURSE_LINES
    assert lines[5] == f"本章规则：{len(RULES)}/{len(RULES)}"
    passed, total = re.fullmatch(r"本章之外的检查：(\d+)/(\d+)", lines[6]).groups()  # type: ignore[union-attr]
    assert passed == total and int(total) >= 5
    assert lines[7:-1] == [line for line in lines[7:-1] if line.startswith("  ✓ ")] and len(
        lines[7:-1]
    ) == int(total)
    assert lines[-1] == "第 05 章：完成"


@pytest.mark.slow
@pytest.mark.parametrize("where", ["outside", "the reference clone"])
def test_outside_a_practice_copy_check_refuses_in_one_line(tmp_path: Path, where: str) -> None:
    cwd = tmp_path if where == "outside" else ROOT
    result = cli("check", "05", cwd=cwd)
    assert (result.returncode, result.stdout) == (2, "")
    [line] = result.stderr.splitlines()
    assert "不在练习副本里" in line and "--path" in line and "--reference" in line


@pytest.mark.slow
def test_reference_from_a_copys_own_command_line_is_refused(new_practice: Path) -> None:
    # Inside a copy, `python -m pi_course` is the copy's own package: it is no reference.
    result = cli("check", "05", "--reference", cwd=new_practice)
    assert (result.returncode, result.stdout) == (2, "")
    assert len(result.stderr.splitlines()) == 1 and "不是参考实现" in result.stderr


@pytest.mark.slow
def test_course_only_runs_the_eleven_alone_and_verbose_prints_pytests_report_first(tmp_path: Path) -> None:
    result = cli("check", "05", "--reference", "-v", "--course-only", cwd=tmp_path)
    assert result.returncode == 0
    assert "test_sse_abort_during_a_blocked_read_ends_aborted_and_closes_the_response PASSED" in result.stdout
    assert "test_05_beyond" not in result.stdout
    assert result.stdout.splitlines()[-6:] == [*COURSE_LINES, "第 05 章聚焦测试：完成"]


@pytest.mark.slow
def test_python_check_asks_what_the_command_line_asks(capsys: pytest.CaptureFixture[str]) -> None:
    """``check()`` is ``check 05``, ``check("5.2")`` its ``--step 5.2``; ``beyond=False`` its ``--course-only``."""
    tested = "检查的是参考实现（pi_course），不是练习副本"  # pytest runs in the clone's root
    assert check()  # what a notebook's checkpoint cell calls
    lines = capsys.readouterr().out.splitlines()
    assert lines[:7] == [tested, *COURSE_LINES, f"本章规则：{len(RULES)}/{len(RULES)}"], lines
    assert re.fullmatch(r"本章之外的检查：(\d+)/\1", lines[7]) and lines[8:] == ["第 05 章：完成"], lines
    assert check(beyond=False)
    assert capsys.readouterr().out.splitlines() == [tested, *COURSE_LINES, "第 05 章聚焦测试：完成"]
    assert check("5.2")  # 5.1 and 5.2: their focused tests, rules, comparisons and beyond checks
    lines = capsys.readouterr().out.splitlines()
    kept = sum(rule.step in ("5.1", "5.2") for rule in RULES)
    # No beyond check needs only 5.1 and 5.2: none is shown, none said not run.
    assert lines == [tested, COURSE_LINES[1], f"实践 5.1–5.2 的规则：{kept}/{kept}", "实践 5.2：完成"]
    assert check("5.2", beyond=False)
    assert capsys.readouterr().out.splitlines() == [tested, COURSE_LINES[1], "实践 5.2 聚焦测试：完成"]


@pytest.mark.slow
def test_half_way_the_beyond_checks_wait_for_their_steps(new_practice: Path) -> None:
    """5.1 and 5.2 written, 5.3 and 5.4 still stubs: no beyond check is ✓, and the verdict names 5.3."""
    learner_steps(new_practice, ("__init__.py", "protocol.py", "outbound.py", "adapter.py"))
    result = cli("check", "05", cwd=new_practice)
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert lines[:2] == COURSE_LINES[:2] and lines[4] == "第 05 章聚焦测试：4/11"
    # the rules of 5.3 (still stubs) and 5.4 (after an unfinished 5.3) wait: none is counted broken
    assert re.fullmatch(r"本章规则：(\d+)/\d+（(\d+) 项待完成）", lines[5]), lines[5]
    total = int(re.fullmatch(r"本章之外的检查：0/(\d+)（\1 项待完成）", lines[6])[1])  # type: ignore[index]
    assert total >= 5
    assert "✓" not in result.stdout
    assert lines[7] == f"  待完成 {total} 项：实践 5.3 的聚焦测试全部通过之后才算"
    assert lines[-1].startswith("第 05 章：未完成——实践 5.3 SSE 与 unknown 边界（0/5 通过）：test_sse_")
    assert lines[-1].endswith(" 尚未实现")
    record = json_record(cli("check", "05", "--json", cwd=new_practice))
    assert record["status"] == "incomplete" and record["first_failure"] == lines[-1].split("——", 1)[1]
    assert (record["beyond_passed"], record["beyond_total"]) == (0, total)


def test_a_beyond_check_counts_once_its_steps_pass() -> None:
    done = {"5.1": 1, "5.2": 3, "5.3": 5, "5.4": 2}
    checks = (BeyondCheck("test_a", True, "5.3", "A"), BeyondCheck("test_b", False, "5.4", "B"),
              BeyondCheck("test_old", True))  # fmt: skip
    half = Report({**done, "5.4": 1}, failures=(("test_fetch_transport_x", ""),), beyond=checks)
    assert [half.beyond_state(c) for c in checks] == ["passed", "pending", "pending"]
    verdict = judge(half)
    assert not verdict.done and verdict.line.startswith(
        "第 05 章：未完成——实践 5.4 fetch transport 与密钥脱敏（1/2 通过）"
    )
    full = Report(done, beyond=checks)
    assert [full.beyond_state(c) for c in checks] == ["passed", "failed", "passed"]
    assert judge(full).line == "第 05 章：未完成——本章之外的检查：B（test_b）"
    assert judge(Report(done, beyond=checks[:1])).line == "第 05 章：完成"
    assert judge(Report(done), beyond=False).line == "第 05 章聚焦测试：完成"
    # The focused tests alone never claim a step: their verdict says what they were.
    assert judge(Report(done), STEPS[0], beyond=False).line == "实践 5.1 聚焦测试：完成"
    assert judge(Report(done, beyond=checks[:1]), STEPS[2]).line == "实践 5.3：完成"
    # A step whose beyond checks could not run is no more done than the chapter would be.
    missing = Report(done, beyond_note="本章之外的检查：没有找到 tests/test_05_beyond.py，跳过")
    assert judge(missing, STEPS[0]).line.startswith("实践 5.1：未完成——没有找到 tests/test_05_beyond.py")


def test_every_beyond_check_names_its_step_once() -> None:
    source = (ROOT / "tests" / "test_05_beyond.py").read_text(encoding="utf-8")
    step_numbers = {step.number for step in STEPS}
    for node in ast.parse(source).body:
        if isinstance(node, ast.AsyncFunctionDef | ast.FunctionDef) and node.name.startswith("test_"):
            marks = [
                d for d in node.decorator_list
                if isinstance(d, ast.Call) and ast.unparse(d.func) == "pytest.mark.step"
            ]  # fmt: skip
            assert len(marks) == 1, f"{node.name}: one @pytest.mark.step(...)"
            assert ast.literal_eval(marks[0].args[0]) in step_numbers, node.name


def test_the_key_hint_says_raise_from_none_is_no_fix() -> None:
    source = (ROOT / "tests" / "test_05_beyond.py").read_text(encoding="utf-8")
    tree = ast.parse(source)
    [doc] = [
        ast.get_docstring(n)
        for n in tree.body
        if getattr(n, "name", "") == "test_key_stays_out_of_every_error_chain"
    ]
    [hint] = [line for line in (doc or "").splitlines() if line.startswith("下一步：")]
    assert "raise … from None 不能解决问题" in hint and "仍留在新错误的 __context__ 里" in hint


# --- which tree -----------------------------------------------------------------------------------


@pytest.mark.slow
def test_check_inside_a_copys_subfolders_checks_the_copy(completed: Path, tmp_path: Path) -> None:
    edit(completed, "outbound.py", "def to_provider_messages(context: AgentContext) -> list[WireMessage]:\n",
         "def to_provider_messages(context: AgentContext) -> list[WireMessage]:\n    return []\n")  # fmt: skip
    # From notebooks/ and from pi_course/ (where learners edit), `python -m pi_course` is the
    # installed one: check must still find the copy around the current folder, or around --path.
    for result in (
        cli("check", "05", "--step", "5.1", cwd=completed / "notebooks"),
        cli("check", "05", "--step", "5.1", cwd=completed / "pi_course"),
        cli("check", "05", "--step", "5.1", "--path", str(completed / "notebooks"), cwd=tmp_path),
    ):
        assert result.returncode == 1
        assert result.stdout.splitlines()[0] == "出站转换：0/1 未通过"
        assert result.stdout.splitlines()[-1].startswith(
            "实践 5.1：未完成——实践 5.1 出站转换（0/1 通过）：test_outbound"
        )
        assert result.stderr == ""


# --- the --json record ----------------------------------------------------------------------------


@pytest.mark.slow
def test_json_record_of_a_fresh_copy(new_practice: Path, tmp_path: Path) -> None:
    result = cli("check", "05", "--json", "--path", str(new_practice), cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr.splitlines() == [f"第 05 章：未完成——{RED_LIGHT}"]  # the text, on stderr
    record = json_record(result)
    # Checked from outside with the installed course's tests, in the sandbox: no flag for a fresh copy.
    assert record.pop("flags") == [] and record.pop("tests") == {}
    assert record == {
        "name": "lab", "path": str(new_practice), "status": "incomplete", "focused": FOCUSED_NONE,
        "focused_passed": 0, "focused_total": 11, "beyond_passed": 0, "beyond_total": 0,
        "first_failure": RED_LIGHT, "rules_kept": 0, "rules_total": len(RULES), "compared": {},
    }  # fmt: skip


@pytest.mark.slow
def test_json_record_of_a_done_copy(completed: Path, tmp_path: Path) -> None:
    result = cli("check", "05", "--json", "--path", str(completed), cwd=tmp_path)
    assert result.returncode == 0
    assert result.stderr.splitlines()[0] == "出站转换：1/1 通过"
    assert result.stderr.splitlines()[-1] == "第 05 章：完成"
    record = json_record(result)
    assert record.pop("flags") == []
    tests = record.pop("tests")
    assert len(tests) == 11 + record["beyond_total"] and all(tests.values())
    assert record.pop("beyond_passed") == record.pop("beyond_total")
    assert record.pop("rules_kept") == record.pop("rules_total") == len(RULES)
    compared = record.pop("compared")  # every step compared with the reference, on many inputs
    assert sorted(compared) == ["5.1", "5.2", "5.3", "5.4"] and min(compared.values()) >= 100, compared
    assert record == {
        "name": "lab", "path": str(completed), "status": "done",
        "focused": {"5.1": [1, 1], "5.2": [3, 3], "5.3": [5, 5], "5.4": [2, 2]},
        "focused_passed": 11, "focused_total": 11, "first_failure": None,
    }  # fmt: skip


@pytest.mark.slow
def test_json_record_of_a_copy_that_does_not_import(completed: Path, tmp_path: Path) -> None:
    edit(completed, "sse.py", "    def feed(self, chunk: bytes, *, final: bool = False) -> list[SSEEvent]:\n",
         "    def feed(self, chunk: bytes, *, final: bool = False) -> list[SSEEvent]\n")  # fmt: skip
    # From outside (as grade runs it), and from inside the copy, where its own package fails first.
    for result in (
        cli("check", "05", "--json", "--path", str(completed), cwd=tmp_path),
        cli("check", "05", "--json", cwd=completed),
    ):
        assert result.returncode == 1
        record = json_record(result)
        assert result.stderr.splitlines() == [f"第 05 章：未完成——{record['first_failure']}"]
        first = record.pop("first_failure")
        assert record.pop("flags", []) == [] and record.pop("tests") == {}
        assert isinstance(first, str) and first.startswith("pi_course/sse.py 第 ")
        assert "SyntaxError: expected ':'（pi_course 无法导入）" in first
        assert record == {
            "name": "lab", "path": str(completed), "status": "import-error", "focused": FOCUSED_NONE,
            "focused_passed": 0, "focused_total": 11, "beyond_passed": 0, "beyond_total": 0,
            "rules_kept": 0, "rules_total": len(RULES), "compared": {},
        }  # fmt: skip


@pytest.mark.slow
def test_json_record_of_a_folder_that_is_not_a_copy(tmp_path: Path) -> None:
    result = cli("check", "05", "--json", "--path", str(tmp_path), cwd=tmp_path)
    assert result.returncode == 2
    record = json_record(result)
    assert result.stderr.splitlines() == [record["first_failure"]]
    assert record["status"] == "not-a-copy" and record["path"] == str(tmp_path)
    assert "不是练习副本" in str(record["first_failure"])


def test_check_record_from_python_for_a_folder_that_is_not_a_copy(tmp_path: Path) -> None:
    record = check_record(tmp_path)
    assert record["status"] == "not-a-copy" and record["focused"] == FOCUSED_NONE
    assert "不是练习副本" in str(record["first_failure"])


# --- a package that does not import -------------------------------------------------------------


@pytest.mark.slow
def test_a_module_that_does_not_import_is_one_line_wherever_it_is_found(
    completed: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy = completed
    edit(copy, "sse.py", "    def feed(self, chunk: bytes, *, final: bool = False) -> list[SSEEvent]:\n",
         "    def feed(self, chunk: bytes, *, final: bool = False) -> list[SSEEvent]\n")  # fmt: skip
    number = 1 + (copy / "pi_course" / "sse.py").read_text(encoding="utf-8").split("\n").index(
        "    def feed(self, chunk: bytes, *, final: bool = False) -> list[SSEEvent]"
    )
    line = (
        f"pi_course/sse.py 第 {number} 行：SyntaxError: expected ':'（pi_course 无法导入）。"
        "下一步：改好这一行，再运行 python -m pi_course check 05。"
    )
    # The copy's own `python -m pi_course`: check's red light finds it and ends on its verdict; chat,
    # which imports the lesson itself, says the line alone.
    result = cli("check", "05", cwd=copy)
    assert (result.returncode, result.stdout, result.stderr) == (1, f"第 05 章：未完成——{line}\n", "")
    result = cli("check", "05", "--step", "5.3", cwd=copy)
    assert (result.returncode, result.stdout, result.stderr) == (1, f"实践 5.3：未完成——{line}\n", "")
    result = cli("chat", "hi", cwd=copy)
    assert (result.returncode, result.stdout, result.stderr) == (1, "", line + "\n")
    # The installed command line from notebooks/: check's red light finds it.
    result = cli("check", "05", cwd=copy / "notebooks")
    assert (result.returncode, result.stdout, result.stderr) == (1, f"第 05 章：未完成——{line}\n", "")
    # The pytest process finds it (here the red light is skipped, as when a test imports more than it).
    monkeypatch.setattr(redlight, "SCRIPT", RED_LIGHT_SKIPPED)
    report = run_tests(STEPS, copy)
    assert (report.red_light, report.import_error) == (line, True)
    # Anywhere else Python's own traceback is kept, where the broken module is first used.
    plain = subprocess.run(
        [sys.executable, "-c", "import pi_course; pi_course.SSEDecoder"],
        cwd=copy, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert plain.returncode == 1 and "Traceback" in plain.stderr
    assert plain.stderr.rstrip().endswith("SyntaxError: expected ':'")


@pytest.mark.slow
def test_an_import_error_names_the_importing_line(
    new_practice: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy = new_practice
    edit(copy, "transport.py", "from .sse import iter_provider_chunks, iter_sse_events\n",
         "from .sse import iter_provider_chunks, iter_sse_event\n")  # fmt: skip
    number = 1 + (copy / "pi_course" / "transport.py").read_text(encoding="utf-8").split("\n").index(
        "from .sse import iter_provider_chunks, iter_sse_event"
    )
    result = cli("chat", "hi", cwd=copy)
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.startswith(
        f"pi_course/transport.py 第 {number} 行：ImportError: cannot import name 'iter_sse_event' from 'pi_course.sse'"
    )
    assert result.stderr.endswith("下一步：改好这一行，再运行 python -m pi_course check 05。\n")
    assert len(result.stderr.splitlines()) == 1
    # pytest reports it in its own traceback format; check gives the same line.
    monkeypatch.setattr(redlight, "SCRIPT", RED_LIGHT_SKIPPED)
    assert run_tests(STEPS, copy).red_light == result.stderr.rstrip("\n")


@pytest.mark.slow
def test_an_import_that_never_ends_is_a_timeout(new_practice: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = new_practice / "pi_course" / "stream_rules.py"
    path.write_text(path.read_text(encoding="utf-8") + "\nwhile True:\n    pass\n", encoding="utf-8")
    monkeypatch.setattr(redlight, "IMPORT_BOUND", 2.0)
    report = run_tests(STEPS, new_practice, beyond=True)
    assert report.timed_out and report.red_light is not None
    assert report.red_light.startswith("import pi_course 超过 2 秒没有结束，已被停止")


@pytest.mark.slow
def test_the_command_line_stops_an_import_that_never_ends_at_the_stuck_line(new_practice: Path) -> None:
    """``chat`` in the copy imports the copy's lesson in its own process: that import is bounded too."""
    path = new_practice / "pi_course" / "stream_rules.py"
    source = path.read_text(encoding="utf-8")
    path.write_text(source + "\nwhile True:\n    pass\n", encoding="utf-8")
    loop_lines = {len(source.splitlines()) + 2, len(source.splitlines()) + 3}  # `while True:`, `pass`
    tooling = new_practice / "pi_course" / "course" / "checker" / "import_failure.py"
    text = tooling.read_text(encoding="utf-8")
    assert text.count("IMPORT_BOUND = 20.0") == 1
    tooling.write_text(text.replace("IMPORT_BOUND = 20.0", "IMPORT_BOUND = 2.0"), encoding="utf-8")
    result = cli("chat", "hi", cwd=new_practice)
    assert result.returncode == 1 and result.stdout == ""
    [line] = result.stderr.splitlines()
    stuck = re.fullmatch(
        r"pi_course/stream_rules\.py 第 (\d+) 行：TimeoutError: import pi_course 超过 2 秒没有结束"
        r"——模块顶层（函数之外）的代码进入了不会结束的循环（或在等待）（pi_course 无法导入）。"
        r"下一步：改好这一行，再运行 python -m pi_course check 05。",
        line,
    )
    assert stuck is not None, line
    assert int(stuck[1]) in loop_lines


def test_a_missing_dependency_says_which_python_to_use_not_which_line_to_fix() -> None:
    line = import_failure.import_failure_line(
        "ModuleNotFoundError: No module named 'httpx'", ("pi_course/transport.py", 14)
    )
    assert re.match(
        r"pi_course 无法导入：这个 Python（/\S+）没有安装 httpx（pi_course/transport\.py 第 14 行要用它）。",
        line,
    )
    assert "pi-course[lab]" in line and "改好这一行" not in line and "/path/to" not in line
    own = import_failure.import_failure_line(
        "ModuleNotFoundError: No module named 'pi_course.typs'", ("pi_course/adapter.py", 3)
    )
    assert own.startswith("pi_course/adapter.py 第 3 行：ModuleNotFoundError") and "改好这一行" in own


@pytest.mark.slow
def test_the_command_line_imports_no_lesson_module_until_a_command_needs_it() -> None:
    """``python -m pi_course check|practice|checkpoint`` work on a copy whose lesson does not import."""
    code = (
        "import sys, pi_course.course.cli; print(sorted(m for m in sys.modules if m.startswith('pi_course')))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = {name.strip("' ") for name in result.stdout.strip("[]\n").split(",")}
    lesson = {f"pi_course.{name}" for name in ("protocol", "outbound", "adapter", "sse", "transport")}
    assert "pi_course.course.cli" in loaded and not loaded & lesson


# --- time bounds ----------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_blocked_read_is_named_with_its_meaning_by_the_per_test_bound(completed: Path) -> None:
    # Reads handed out directly, not raced against the abort signal.
    edit(
        completed,
        "transport.py",
        "yield race.iterate(response.aiter_bytes())",
        "yield response.aiter_bytes()",
    )
    # 3 s: the ten other tests finish inside it on a busy machine too (they take milliseconds).
    env = {**os.environ, TIMEOUT_VARIABLE: "3"}
    result = cli("check", "05", "--course-only", cwd=completed, env=env)
    assert result.returncode == 1
    assert "SSE 与 unknown 边界：4/5 未通过" in result.stdout
    failing = [line for line in result.stdout.splitlines() if line.startswith("  ✗ ")]
    assert failing == [
        "  ✗ test_sse_abort_during_a_blocked_read_ends_aborted_and_closes_the_response — 下一步："
        f"看 {advice.HINTS['test_sse_abort']}"
    ]
    # The test's own 3-second bound fired; the bound on the whole process did not.
    assert "超过 3 秒没有结束：被阻塞的读取没有被 abort 信号打断" in result.stdout
    assert "测试进程超过" not in result.stdout
    assert "stream_rules.AbortRace" in result.stdout


@pytest.mark.slow
def test_a_loop_that_never_awaits_is_stopped_and_named(completed: Path) -> None:
    edit(completed, "outbound.py", "def to_provider_messages(context: AgentContext) -> list[WireMessage]:\n",
         "def to_provider_messages(context: AgentContext) -> list[WireMessage]:\n    while True:\n        pass\n")  # fmt: skip
    env = {**os.environ, TIMEOUT_VARIABLE: "1"}
    result = cli("check", "05", "--step", "5.1", cwd=completed, env=env)
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert lines[0] == "出站转换：0/1 未通过"
    assert lines[1].startswith("实践 5.1 的规则：0/")  # a step runs with its rules: none kept here
    stop = lines.index("测试提前停止：一项测试停在一个从不 await 的循环里，其余测试不再运行")
    assert lines[2:stop] == []  # no beyond check needs only 5.1: none is said not run
    assert lines[stop + 1].startswith(
        "  ✗ test_outbound_conversion_maps_four_roles_and_tools_without_touching_input — 下一步："
        "看 pi_course/outbound.py 的 to_provider_messages()：第 "
    )
    assert lines[stop + 2] == "      输入：" + advice.INPUTS["test_outbound"]
    assert lines[stop + 3] == "      超过 1 秒没有结束：" + advice.NEVER_AWAITS + "。"
    assert lines[stop + 4].startswith("      停在 pi_course/outbound.py:") and lines[stop + 4].endswith(
        "(to_provider_messages)"
    )
    assert lines[-1].startswith("实践 5.1：未完成——实践 5.1 出站转换（0/1 通过）：test_outbound") and lines[
        -1
    ].endswith(" 超过 1 秒没有结束")


@pytest.mark.slow
def test_a_loop_in_feed_is_not_blamed_on_the_abort_race(completed: Path, tmp_path: Path) -> None:
    # Waits for the rest of a line inside feed() itself: a loop that never awaits (nor allocates).
    edit(completed, "sse.py", "        check_event_size(self._buffer, self._data, self.max_event_size)\n",
         "        while self._buffer:\n            pass\n        check_event_size(self._buffer, self._data, self.max_event_size)\n")  # fmt: skip
    junit = tmp_path / "junit.xml"
    subprocess.run(
        [sys.executable, "-m", "pytest", "tests/test_05_provider_adapter.py", "-q", "-p", "no:cacheprovider",
         "-p", PLUGIN, "-p", "no:nbval", "-o", "addopts=", "-k", "sse", f"--junitxml={junit}"],
        cwd=completed,
        env={**os.environ, "PYTHONPATH": f"{testrun.PLUGIN_PATH}{os.pathsep}{completed}", TIMEOUT_VARIABLE: "1"},
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    # The first test stuck in a loop that never awaits stops the session: the other four never ran.
    assert len(list(ET.parse(junit).getroot().iter("testcase"))) == 1
    report = report_of(read_cases(junit), (step("5.3"),))
    [(name, _)] = report.failures
    detail = report.details[name]
    assert detail.never_awaits and detail.where and detail.where.startswith("pi_course/sse.py:")
    assert detail.where.endswith("(SSEDecoder.feed)")
    # The abort test stuck at the same place gets the same words, not the abort race's meaning.
    abort = "test_sse_abort_during_a_blocked_read_ends_aborted_and_closes_the_response"
    lines = failure_lines(Report({}, details={abort: detail}), abort)
    assert lines[0].startswith(f"  ✗ {abort} — 下一步：看 pi_course/sse.py 的 SSEDecoder.feed()：第 ")
    assert lines[1] == "      输入：" + advice.INPUTS["test_sse_abort"]
    assert lines[2] == "      超过 1 秒没有结束：" + advice.NEVER_AWAITS + "。"
    assert lines[3] == f"      停在 {detail.where}"
    assert "AbortRace" not in "\n".join(lines) and "abort" not in "\n".join(lines[1:])


@pytest.mark.slow
def test_a_process_past_the_whole_run_bound_is_stopped_and_the_test_named(
    completed: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    edit(completed, "outbound.py", "def to_provider_messages(context: AgentContext) -> list[WireMessage]:\n",
         "def to_provider_messages(context: AgentContext) -> list[WireMessage]:\n"
         "    import time\n    time.sleep(60)\n")  # fmt: skip
    # A bound far below the test's 60 s sleep, yet roomy enough for pytest to start on a busy
    # machine; the red light's import (bounded the same way) is skipped.
    monkeypatch.setattr(testrun, "RUN_TIMEOUT", 20.0)
    monkeypatch.setattr(redlight, "SCRIPT", RED_LIGHT_SKIPPED)
    monkeypatch.setenv(TIMEOUT_VARIABLE, "60")
    report = run_tests(STEPS, completed)
    assert (
        report.failures[0][0] == "test_outbound_conversion_maps_four_roles_and_tools_without_touching_input"
    )
    assert report.stopped == "测试进程超过 20 秒，已被停止；后面的测试没有运行"
    assert report.timed_out and not report.ok()


@pytest.mark.slow
def test_failures_show_both_strings_in_full_and_the_error_message_of_an_error_event(completed: Path) -> None:
    edit(completed, "transport.py", 'endpoint = base_url.rstrip("/") + "/chat/completions"',
         'endpoint = base_url + "/chat/completions"')  # fmt: skip
    edit(completed, "adapter.py", 'self.content[buffer["slot"]] = ToolCall(',
         'self.content[buffer["slot"] + 1] = ToolCall(')  # fmt: skip
    report = run_tests(STEPS, completed)
    assert report.passed["5.2"] < 3 and report.passed["5.4"] == 1
    url = "\n".join(failure_lines(report, "test_fetch_transport_sends_the_exact_request"))
    assert "      实际：'https://provider.invalid/v1//chat/completions'" in url
    assert "      期望：'https://provider.invalid/v1/chat/completions'" in url
    [name] = [name for name, _ in report.failures if name.startswith("test_normalized_transport_orders")]
    lines = failure_lines(report, name)
    assert "      你的代码发出了 error 事件，error_message：'list assignment index out of range'" in lines


@pytest.mark.slow
def test_ctrl_c_ends_check_with_one_line_and_130(completed: Path) -> None:
    # The first body read leaves a mark, and a read the abort no longer races blocks its test for
    # the minute the per-test bound allows: Ctrl-C comes while a test runs, however busy the machine.
    reading = completed.parent / "reading"
    edit(
        completed,
        "transport.py",
        "yield race.iterate(response.aiter_bytes())",
        f"yield (open({str(reading)!r}, 'w').close(), response.aiter_bytes())[1]",
    )
    process = subprocess.Popen(
        [sys.executable, "-m", "pi_course", "check", "05"],
        cwd=completed, env={**os.environ, TIMEOUT_VARIABLE: "60"},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
        preexec_fn=sigint_default,
    )  # fmt: skip
    deadline = time.monotonic() + 120  # a hang bound: the tests start reading within seconds
    while not reading.exists() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert reading.exists(), process.communicate(timeout=30)
    os.killpg(process.pid, signal.SIGINT)
    out, err = process.communicate(timeout=30)
    assert process.returncode == 130
    assert (out, err) == ("", "check 已中断（Ctrl-C）。\n")


def test_failure_lines_window_long_values_at_the_first_difference() -> None:
    long_actual = "x" * 300 + "A" + "y" * 300
    long_expected = "x" * 300 + "B" + "y" * 300
    report = Report(
        {},
        details={
            "test_sse_x": Detail(
                message="AssertionError: assert ...",
                difference={"path": "[2].text", "actual": repr(long_actual), "expected": repr(long_expected)},
                assertion="assert result == expected",
            )
        },
    )
    head, statement, actual, expected = failure_lines(report, "test_sse_x")
    assert head.startswith("  ✗ test_sse_x — 下一步：看 ")
    assert statement == "      断言：assert result == expected"
    assert actual.startswith("      实际 [2].text：…x") and "A" in actual and len(actual) < 140
    assert expected.startswith("      期望 [2].text：…x") and "B" in expected


# --- next steps from the evidence ---------------------------------------------------------------

SSE_TESTS = (
    "test_sse_interleaved_tool_arguments_are_recovered_by_index_with_trailing_usage",
    "test_sse_missing_finish_keeps_partial_and_ends_in_error",
    "test_sse_abort_during_a_blocked_read_ends_aborted_and_closes_the_response",
    "test_sse_invalid_chunk_ends_in_error_naming_the_problem",
    "test_sse_unknown_finish_reason_is_an_error_that_names_finish_reason",
)


def test_one_cause_behind_several_failures_is_named_once() -> None:
    cut = Detail(
        message="AssertionError: assert ...",
        error_messages=("Invalid provider chunk: data is not valid JSON",),
        assertion="assert deltas == [(0, '{\"path\":')]",
    )
    report = Report({"5.3": 0}, failures=tuple((name, "") for name in SSE_TESTS),
                    details=dict.fromkeys(SSE_TESTS, cut))  # fmt: skip
    heads = [
        line
        for line in next_step_lines(report, (step("5.3"),), rule_results(report))
        if line.startswith("  ✗ ")
    ]
    assert heads[0] == f"  ✗ {SSE_TESTS[0]} — 下一步：看 {advice.FRAMING_HINT}"
    assert advice.FRAMING_HINT.startswith("pi_course/sse.py 的 SSEDecoder.feed()：行缓冲")
    assert heads[1:] == [f"  ✗ {name} — 下一步：同上" for name in SSE_TESTS[1:]]


def test_a_json_error_after_every_delta_arrived_points_at_done_not_at_the_line_buffer() -> None:
    done = Detail(
        message="AssertionError: assert ...",
        error_messages=("Invalid provider chunk: data is not valid JSON",),
        assertion='assert result.stop_reason == "toolUse"',
    )
    report = Report({}, details={SSE_TESTS[0]: done})
    assert failure_lines(report, SSE_TESTS[0])[0] == f"  ✗ {SSE_TESTS[0]} — 下一步：看 {advice.DONE_HINT}"
    # Without evidence, each test keeps its own hint.
    other = Report({}, details={SSE_TESTS[3]: Detail(message="AssertionError: assert 'choices' in 'x'")})
    assert failure_lines(other, SSE_TESTS[3])[0] == (
        f"  ✗ {SSE_TESTS[3]} — 下一步：看 {advice.HINTS['test_sse_invalid_chunk']}"
    )


@pytest.mark.parametrize(
    ("where", "abort_meaning"),
    [
        ("pi_course/sse.py:116 (iter_sse_events)", True),  # awaiting the next read
        ("pi_course/transport.py:160 (OpenAICompatibleTransport._reads)", True),
        ("pi_course/stream_rules.py:40 (AbortRace.iterate)", True),
        (None, True),
        ("pi_course/sse.py:85 (SSEDecoder.feed)", False),  # stuck in a loop of its own
        ("pi_course/adapter.py:170 (OpenAICompatibleModel._events)", False),
    ],
)
def test_the_abort_tests_timeout_meaning_only_where_a_read_waits(
    where: str | None, abort_meaning: bool
) -> None:
    abort = SSE_TESTS[2]
    report = Report({}, details={abort: Detail(timeout=5.0, where=where)})
    text = "\n".join(failure_lines(report, abort))
    assert ("被阻塞的读取没有被 abort 信号打断" in text) is abort_meaning
    if not abort_meaning:
        file, function = where.split(":")[0], where.split("(")[1].rstrip(")")  # type: ignore[union-attr]
        assert text.startswith(f"  ✗ {abort} — 下一步：看 {file} 的 {function}()：第 ")
        assert f"      停在 {where}" in text and "AbortRace" not in text


def test_hints_name_the_tool_and_the_idea_never_a_solution_line() -> None:
    texts = [*advice.HINTS.values(), *advice.TIMEOUT_MEANINGS.values(), advice.TIMEOUT_MEANING,
             advice.NEVER_AWAITS, advice.FRAMING_HINT, advice.DONE_HINT,
             advice.SNAPSHOT_HINT, advice.TOTAL_HINT]  # fmt: skip
    for text in texts:  # a statement, or a method called with arguments, is a line to copy
        assert not re.search(r"\b(?:yield|return) \w| = ", text), text
        assert not re.search(r"\w\.\w+\([^)]", text), text
    assert "stream_rules.AbortRace" in advice.TIMEOUT_MEANINGS["test_sse_abort"]


# --- what the source says the test could not: a stub left, the stub's yield left ------------------

STUB_5_3 = "Lab 5.3 SSE 与 unknown 边界 尚未实现"


def test_a_fresh_copy_lists_every_stub_with_its_step(tmp_path: Path) -> None:
    found = stubs.starter_forms(
        create_practice(tmp_path / "lab")
    )  # what `practice 05` makes, in this process
    assert {item.kind for item in found} == {"stub"}
    names = {(item.file, item.function) for item in found}
    assert ("pi_course/sse.py", "_finish_reason") in names
    assert ("pi_course/transport.py", "OpenAICompatibleTransport._reads") in names
    assert all(item.message.startswith("Lab 5.") and item.message.endswith("尚未实现") for item in found)
    # 5.4's starter versions run: they are not stubs.
    assert ("pi_course/transport.py", "chat_completions_url") not in names


def test_written_code_that_kept_the_stubs_yield_is_found(tmp_path: Path) -> None:
    (tmp_path / "pi_course").mkdir()
    (tmp_path / "pi_course" / "transport.py").write_text(
        "class T:\n"
        "    async def _reads(self):\n"
        "        reads = await self.open()\n"
        "        yield reads\n"
        "        yield  # unreachable; keeps this function a generator\n"
        "    async def stream(self):\n"
        '        raise NotImplementedError("Lab 5.3 x 尚未实现")\n'
        "        yield  # unreachable; keeps this function a generator\n"
        "    async def chunks(self):\n"
        "        yield 1\n",
        encoding="utf-8",
    )
    (tmp_path / "pi_course" / "sse.py").write_text("def broken(:\n", encoding="utf-8")  # skipped
    found = stubs.starter_forms(tmp_path)
    assert [(item.kind, item.function) for item in found] == [
        ("left-over yield", "T._reads"),
        ("stub", "T.stream"),
    ]


def _report_with(name: str, detail: Detail, *forms: stubs.StarterForm) -> Report:
    return Report({"5.1": 1, "5.2": 3}, failures=((name, ""),), details={name: detail}, starter_forms=forms)


def test_a_stub_reached_through_the_adapter_is_named_from_the_source() -> None:
    name = SSE_TESTS[4]
    stub = stubs.StarterForm("stub", "pi_course/sse.py", "_finish_reason", STUB_5_3)
    other_step = stubs.StarterForm("stub", "pi_course/transport.py", "_headers", "Lab 5.4 y 尚未实现")
    seen = Detail(message="AssertionError: assert 'finish_reason' in '...'", error_messages=(STUB_5_3,))
    head = failure_lines(_report_with(name, seen, stub, other_step), name)[0]
    assert (
        head
        == f"  ✗ {name} — 下一步：看 pi_course/sse.py 的 _finish_reason() 还是桩（raise NotImplementedError）：先写它"
    )
    # The traceback already points at the stub: the test's own hint stays.
    raised = Detail(message="NotImplementedError: " + STUB_5_3, where="pi_course/sse.py:9 (_finish_reason)")
    assert "还是桩" not in failure_lines(_report_with(name, raised, stub), name)[0]
    # A step barely begun (many stubs): the test's own hint says more than a list.
    many = [stubs.StarterForm("stub", "pi_course/sse.py", f"_f{i}", STUB_5_3) for i in range(4)]
    assert failure_lines(_report_with(name, seen, *many), name)[0].endswith(
        advice.HINTS["test_sse_unknown_finish_reason"]
    )


def test_the_stubs_left_over_yield_is_named_before_any_other_evidence() -> None:
    name = SSE_TESTS[0]
    left = stubs.StarterForm(
        "left-over yield", "pi_course/transport.py", "OpenAICompatibleTransport._reads", ""
    )
    seen = Detail(
        message="AssertionError: assert 'error' == 'toolUse'", error_messages=("generator didn't stop",)
    )
    head = failure_lines(_report_with(name, seen, left), name)[0]
    assert head.startswith(
        f"  ✗ {name} — 下一步：看 pi_course/transport.py 的 OpenAICompatibleTransport._reads()："
    )
    assert "yield" in head and "删掉它" in head
    # A left-over yield in a later step's file is not what a 5.2 test ran into.
    later = stubs.StarterForm("left-over yield", "pi_course/sse.py", "read_provider_chunks", "")
    normalized = "test_normalized_transport_exception_ends_in_error"
    assert "yield" not in failure_lines(_report_with(normalized, Detail(message="x"), later), normalized)[0]


@pytest.mark.parametrize(
    ("difference", "hint"),
    [
        ({"path": "[0]", "actual": "[]", "expected": "()", "types": ["list", "tuple"]}, "SNAPSHOT_HINT"),
        ({"path": ".total_tokens", "actual": "0", "expected": "16"}, "TOTAL_HINT"),
        ({"path": "[0][1]", "actual": "4", "expected": "0"}, "SLOT_HINT"),
        ({"path": "[3][1]", "actual": "2", "expected": "0"}, "BUFFER_HINT"),
        ({"path": "[0][2]", "actual": "''", "expected": "'{\"path\":'"}, None),
    ],
)
def test_the_usual_python_slips_of_5_2_are_told_by_the_first_difference(
    difference: dict[str, object], hint: str | None
) -> None:
    name = "test_normalized_transport_orders_content_by_first_appearance_with_tool_index_4_2"
    detail = Detail(message="AssertionError: assert ...", difference=difference, assertion="assert x == […")
    expected = getattr(advice, hint) if hint else advice.HINTS["test_normalized_transport_orders"]
    assert failure_lines(Report({}, details={name: detail}), name)[0] == f"  ✗ {name} — 下一步：看 {expected}"


def _function(copy: Path, module: str, qualname: str) -> tuple[Path, list[str], ast.AST]:
    path = copy / "pi_course" / module
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    scope: list[ast.stmt] = ast.parse("".join(lines)).body
    node: ast.AST | None = None
    for part in qualname.split("."):
        node = next(n for n in scope if isinstance(n, ast.ClassDef | ast.AsyncFunctionDef | ast.FunctionDef)
                    and n.name == part)  # fmt: skip
        scope = node.body  # type: ignore[attr-defined]
    assert node is not None
    return path, lines, node


def restub(copy: Path, module: str, qualname: str, message: str) -> None:
    """Put the starter's stub back into one function of the learner's code (found by name)."""
    path, lines, node = _function(copy, module, qualname)
    body = node.body  # type: ignore[attr-defined]
    first = body[1] if isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) else body[0]
    indent = " " * first.col_offset
    lines[first.lineno - 1 : body[-1].end_lineno] = [f'{indent}raise NotImplementedError("{message}")\n']
    path.write_text("".join(lines), encoding="utf-8")


def keep_stub_yield(copy: Path, module: str, qualname: str) -> None:
    """The learner's function, with the stub's last line still after it."""
    path, lines, node = _function(copy, module, qualname)
    body = node.body  # type: ignore[attr-defined]
    indent = " " * body[0].col_offset
    lines.insert(body[-1].end_lineno, f"{indent}yield  # unreachable; keeps this function a generator\n")
    path.write_text("".join(lines), encoding="utf-8")


@pytest.mark.slow
def test_check_names_the_one_stub_left_and_the_stubs_yield_left(completed: Path) -> None:
    restub(completed, "sse.py", "_finish_reason", STUB_5_3)
    result = cli("check", "05", cwd=completed)
    assert result.returncode == 1
    assert (
        "下一步：看 pi_course/sse.py 的 _finish_reason() 还是桩（raise NotImplementedError）：先写它"
        in result.stdout
    )
    assert result.stdout.splitlines()[-1].startswith("第 05 章：未完成——实践 5.3 SSE 与 unknown 边界（")

    apply(completed, LEARNER)
    keep_stub_yield(completed, "transport.py", "OpenAICompatibleTransport._reads")
    result = cli("check", "05", "--step", "5.3", cwd=completed)
    assert result.returncode == 1
    assert (
        "下一步：看 pi_course/transport.py 的 OpenAICompatibleTransport._reads()：函数最后还留着桩里那行 yield"
        in (result.stdout)
    )
    assert result.stdout.splitlines()[-1].startswith("实践 5.3：未完成——实践 5.3 SSE 与 unknown 边界（")
