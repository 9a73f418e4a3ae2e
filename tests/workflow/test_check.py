"""The ``check`` runner itself: first red light, time bounds, readable failures, flags, Ctrl-C."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pi_course.course import checkpoint
from pi_course.course.checkpoint import Detail, Report, failure_lines, run_focused, steps_for
from pi_course.course.practice import TEACHING_FILES

ROOT = Path(__file__).parents[2]
PACKAGE = ROOT / "pi_course"
COURSE_LINES = [
    "出站转换：1/1 通过",
    "normalized transport 状态机：3/3 通过",
    "SSE 与 unknown 边界：5/5 通过",
    "fetch transport 与密钥脱敏：2/2 通过",
    "第 05 章聚焦测试：11/11",
]


def cli(*args: str, cwd: Path = ROOT, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pi_course", *args],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=180, check=False,
    )  # fmt: skip


def new_practice(directory: Path) -> Path:
    result = cli("practice", "05", str(directory))
    assert result.returncode == 0, result.stderr
    return directory


def completed(directory: Path) -> Path:
    """A practice copy with the reference's teaching files: every test passes."""
    copy = new_practice(directory)
    for name in (*TEACHING_FILES, "__init__.py"):
        (copy / "pi_course" / name).write_text((PACKAGE / name).read_text(encoding="utf-8"), encoding="utf-8")
    return copy


def edit(copy: Path, module: str, old: str, new: str) -> None:
    path = copy / "pi_course" / module
    source = path.read_text(encoding="utf-8")
    assert source.count(old) == 1, f"{old!r} is no longer in {module} exactly once"
    path.write_text(source.replace(old, new), encoding="utf-8")


@pytest.mark.slow
def test_fresh_copy_gives_the_first_red_light_in_one_line(tmp_path: Path) -> None:
    copy = new_practice(tmp_path / "lab")
    result = cli("check", "05", cwd=copy)
    assert result.returncode == 1
    assert result.stdout.splitlines() == [
        "第一次红灯：pi_course 没有导出 ToolDefinition；AgentContext 没有 tools 字段。先完成实践 5.1 的两个类型。"
    ]
    assert result.stderr == ""


@pytest.mark.slow
def test_reference_passes_the_course_then_the_beyond_checks(tmp_path: Path) -> None:
    result = cli("check", "05", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    # Outside every practice copy: the reference is checked, and said so in one line.
    assert result.stderr.splitlines() == [
        f"check 05：检查的是参考实现（reference，{PACKAGE}），不是练习副本。"
        "要检查你的练习副本：在副本目录里运行，或加 --path 副本目录。"
    ]
    lines = result.stdout.splitlines()
    assert lines[:5] == COURSE_LINES
    assert (
        lines[5].startswith("本章之外的检查：")
        and lines[5].split("：")[1].split("/")[0] == lines[5].split("/")[1]
    )
    assert len(lines[6:]) >= 5 and all(line.startswith("  ✓ ") for line in lines[6:])


@pytest.mark.slow
def test_course_only_runs_the_eleven_alone_and_verbose_prints_pytests_report_first(tmp_path: Path) -> None:
    result = cli("check", "05", "-v", "--course-only", cwd=tmp_path)
    assert result.returncode == 0
    assert "test_sse_abort_during_a_blocked_read_ends_aborted_and_closes_the_response PASSED" in result.stdout
    assert "test_05_beyond" not in result.stdout
    assert result.stdout.splitlines()[-5:] == COURSE_LINES


@pytest.mark.slow
def test_python_check_runs_the_course_alone(capsys: pytest.CaptureFixture[str]) -> None:
    assert checkpoint.check()  # what a notebook's checkpoint cell calls
    assert capsys.readouterr().out.splitlines() == COURSE_LINES


@pytest.mark.slow
def test_check_inside_a_copys_subfolder_checks_the_copy_not_the_reference(tmp_path: Path) -> None:
    copy = completed(tmp_path / "lab")
    edit(copy, "outbound.py", "def to_provider_messages(context: AgentContext) -> list[WireMessage]:\n",
         "def to_provider_messages(context: AgentContext) -> list[WireMessage]:\n    return []\n")  # fmt: skip
    # From notebooks/, `python -m pi_course` is the reference (the editable install): check must
    # still find the copy around the current folder, or around --path.
    for result in (
        cli("check", "05", "--step", "5.1", cwd=copy / "notebooks"),
        cli("check", "05", "--step", "5.1", "--path", str(copy / "notebooks"), cwd=tmp_path),
    ):
        assert result.returncode == 1
        assert result.stdout.splitlines()[0] == "出站转换：0/1 未通过"
        assert result.stderr == ""


@pytest.mark.slow
def test_a_module_that_does_not_import_is_one_line_wherever_it_is_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy = completed(tmp_path / "lab")
    edit(copy, "sse.py", "    def feed(self, chunk: bytes, *, final: bool = False) -> list[SSEEvent]:\n",
         "    def feed(self, chunk: bytes, *, final: bool = False) -> list[SSEEvent]\n")  # fmt: skip
    number = 1 + (copy / "pi_course" / "sse.py").read_text(encoding="utf-8").split("\n").index(
        "    def feed(self, chunk: bytes, *, final: bool = False) -> list[SSEEvent]"
    )
    line = (
        f"pi_course/sse.py 第 {number} 行：SyntaxError: expected ':'（pi_course 无法导入）。"
        "下一步：改好这一行，再运行 python -m pi_course check 05。"
    )
    # The copy's own `python -m pi_course`: the package fails before the command line runs.
    for args in (("check", "05"), ("chat", "hi")):
        result = cli(*args, cwd=copy)
        assert (result.returncode, result.stdout, result.stderr) == (1, "", line + "\n"), result.stderr
    # The reference's command line from notebooks/: check's probe finds it.
    result = cli("check", "05", cwd=copy / "notebooks")
    assert (result.returncode, result.stdout, result.stderr) == (1, line + "\n", "")
    # The pytest process finds it (here the probe is skipped, as when a test imports more than it).
    monkeypatch.setattr(checkpoint, "_PROBE", "")
    assert run_focused(steps_for(None), copy).red_light == line
    # Anywhere else Python's own traceback is kept.
    plain = subprocess.run(
        [sys.executable, "-c", "import pi_course"], cwd=copy, capture_output=True, text=True, check=False
    )
    assert plain.returncode == 1 and "Traceback" in plain.stderr
    assert plain.stderr.rstrip().endswith("SyntaxError: expected ':'")


@pytest.mark.slow
def test_an_import_error_names_the_importing_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    copy = completed(tmp_path / "lab")
    edit(copy, "transport.py", "from .sse import iter_provider_chunks, iter_sse_events\n",
         "from .sse import iter_provider_chunks, iter_sse_event\n")  # fmt: skip
    number = 1 + (copy / "pi_course" / "transport.py").read_text(encoding="utf-8").split("\n").index(
        "from .sse import iter_provider_chunks, iter_sse_event"
    )
    result = cli("checkpoint", "05", cwd=copy)
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.startswith(
        f"pi_course/transport.py 第 {number} 行：ImportError: cannot import name 'iter_sse_event' from 'pi_course.sse'"
    )
    assert result.stderr.endswith("下一步：改好这一行，再运行 python -m pi_course check 05。\n")
    assert len(result.stderr.splitlines()) == 1
    # pytest reports it in its own traceback format; check gives the same line.
    monkeypatch.setattr(checkpoint, "_PROBE", "")
    assert run_focused(steps_for(None), copy).red_light == result.stderr.rstrip("\n")


def test_a_missing_dependency_says_which_python_to_use_not_which_line_to_fix() -> None:
    line = checkpoint.import_failure_line(
        "ModuleNotFoundError: No module named 'httpx'", ("pi_course/transport.py", 14)
    )
    assert line.startswith("pi_course 无法导入：没有安装 httpx（pi_course/transport.py 第 14 行要用它）。")
    assert "pi-course[lab]" in line and "改好这一行" not in line
    own = checkpoint.import_failure_line(
        "ModuleNotFoundError: No module named 'pi_course.typs'", ("pi_course/adapter.py", 3)
    )
    assert own.startswith("pi_course/adapter.py 第 3 行：ModuleNotFoundError") and "改好这一行" in own


@pytest.mark.parametrize(
    ("orig_argv", "argv", "expected"),
    [
        (["python", "-m", "pi_course", "check", "05"], ["-m", "check", "05"], True),
        (["python", "-X", "importtime", "-m", "pi_course.course.cli"], ["-m"], True),
        (["python", "-mpi_course"], ["-m"], True),
        (["/venv/bin/python", "/venv/bin/pi-course", "check", "05"], ["/venv/bin/pi-course", "check"], True),
        (["python", "-m", "pytest", "-m", "pi_course"], ["/venv/pytest"], False),
        (["python", "-c", "import pi_course"], ["-c"], False),
        (["python", "-m", "ipykernel_launcher", "-f", "k.json"], ["/x/ipykernel_launcher.py"], False),
    ],
)
def test_only_the_course_command_line_turns_an_import_error_into_one_line(
    orig_argv: list[str], argv: list[str], expected: bool
) -> None:
    assert checkpoint.is_course_cli(orig_argv, argv) is expected


@pytest.mark.slow
def test_a_blocked_read_is_named_with_its_meaning_within_the_bound(tmp_path: Path) -> None:
    copy = completed(tmp_path / "lab")
    # Reads handed out directly, not raced against the abort signal.
    edit(copy, "transport.py", "yield abort.iterate(response.aiter_bytes())", "yield response.aiter_bytes()")
    env = {**os.environ, "PI_COURSE_TEST_TIMEOUT": "1"}
    started = time.monotonic()
    result = cli("check", "05", "--course-only", cwd=copy, env=env)
    assert time.monotonic() - started < checkpoint.RUN_TIMEOUT
    assert result.returncode == 1
    assert "SSE 与 unknown 边界：4/5 未通过" in result.stdout
    failing = [line for line in result.stdout.splitlines() if line.startswith("  ✗ ")]
    assert failing == [
        "  ✗ test_sse_abort_during_a_blocked_read_ends_aborted_and_closes_the_response — 下一步："
        f"看 {checkpoint.HINTS['test_sse_abort']}"
    ]
    assert "超过 1 秒没有结束：被阻塞的读取没有被 abort 信号打断" in result.stdout
    assert "given.AbortRace" in result.stdout


@pytest.mark.slow
def test_a_loop_that_never_awaits_is_stopped_and_named(tmp_path: Path) -> None:
    copy = completed(tmp_path / "lab")
    edit(copy, "outbound.py", "def to_provider_messages(context: AgentContext) -> list[WireMessage]:\n",
         "def to_provider_messages(context: AgentContext) -> list[WireMessage]:\n    while True:\n        pass\n")  # fmt: skip
    env = {**os.environ, "PI_COURSE_TEST_TIMEOUT": "1"}
    result = cli("check", "05", "--step", "5.1", cwd=copy, env=env)
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert lines[0] == "出站转换：0/1 未通过"
    assert lines[1] == "测试提前停止：一项测试停在一个从不 await 的循环里，其余测试不再运行"
    assert lines[2].startswith(
        "  ✗ test_outbound_conversion_maps_four_roles_and_tools_without_touching_input — 下一步："
        "看 pi_course/outbound.py 的 to_provider_messages()：第 "
    )
    assert lines[3] == "      超过 1 秒没有结束：" + checkpoint.NEVER_AWAITS + "。"
    assert lines[4].startswith("      停在 pi_course/outbound.py:") and lines[4].endswith(
        "(to_provider_messages)"
    )


@pytest.mark.slow
def test_a_loop_in_feed_is_not_blamed_on_the_abort_race(tmp_path: Path) -> None:
    copy = completed(tmp_path / "lab")
    # Waits for the rest of a line inside feed() itself: a loop that never awaits (nor allocates).
    edit(copy, "sse.py", "        check_event_size(self._buffer, data, self.max_event_size)\n",
         "        while self._buffer:\n            pass\n        check_event_size(self._buffer, data, self.max_event_size)\n")  # fmt: skip
    junit = tmp_path / "junit.xml"
    started = time.monotonic()
    subprocess.run(
        [sys.executable, "-m", "pytest", "tests/test_05_provider_adapter.py", "-q", "-p", "no:cacheprovider",
         "-o", "addopts=", "-k", "sse", f"--junitxml={junit}"],
        cwd=copy, env={**os.environ, "PYTHONPATH": str(copy), "PI_COURSE_TEST_TIMEOUT": "1"},
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    # The first test stuck in a loop that never awaits stops the session: one bound (1 s + 2 s for
    # SIGALRM), not three (at least 9 s).
    assert time.monotonic() - started < 3 * (1 + 2)
    report = checkpoint._from_junit(junit, steps_for("5.3"), False)
    [(name, _)] = report.failures
    detail = report.details[name]
    assert detail.never_awaits and detail.where and detail.where.startswith("pi_course/sse.py:")
    assert detail.where.endswith("(SSEDecoder.feed)")
    # The abort test stuck at the same place gets the same words, not the abort race's meaning.
    abort = "test_sse_abort_during_a_blocked_read_ends_aborted_and_closes_the_response"
    lines = failure_lines(Report({}, details={abort: detail}), abort)
    assert lines[0].startswith(f"  ✗ {abort} — 下一步：看 pi_course/sse.py 的 SSEDecoder.feed()：第 ")
    assert lines[1] == "      超过 1 秒没有结束：" + checkpoint.NEVER_AWAITS + "。"
    assert lines[2] == f"      停在 {detail.where}"
    assert "AbortRace" not in "\n".join(lines) and "abort" not in "\n".join(lines[1:])


@pytest.mark.slow
def test_a_process_past_the_whole_run_bound_is_stopped_and_the_test_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy = completed(tmp_path / "lab")
    edit(copy, "outbound.py", "def to_provider_messages(context: AgentContext) -> list[WireMessage]:\n",
         "def to_provider_messages(context: AgentContext) -> list[WireMessage]:\n"
         "    import time\n    time.sleep(60)\n")  # fmt: skip
    monkeypatch.setattr(checkpoint, "RUN_TIMEOUT", 3.0)
    monkeypatch.setenv("PI_COURSE_TEST_TIMEOUT", "60")
    report = run_focused(steps_for(None), copy)
    assert (
        report.failures[0][0] == "test_outbound_conversion_maps_four_roles_and_tools_without_touching_input"
    )
    assert report.stopped == "测试进程超过 3 秒，已被停止；后面的测试没有运行"
    assert not report.ok()


@pytest.mark.slow
def test_failures_show_both_strings_in_full_and_the_error_message_of_an_error_event(tmp_path: Path) -> None:
    copy = completed(tmp_path / "lab")
    edit(
        copy,
        "transport.py",
        'url = base_url.rstrip("/") + "/chat/completions"',
        'url = base_url + "/chat/completions"',
    )
    edit(copy, "adapter.py", "content[buffer.content_index] = buffer.streaming_call()",
         "content[buffer.content_index + 1] = buffer.streaming_call()")  # fmt: skip
    report = run_focused(steps_for(None), copy)
    assert report.passed["5.2"] < 3 and report.passed["5.4"] == 1
    url = "\n".join(failure_lines(report, "test_fetch_transport_sends_the_exact_request"))
    assert "      实际：'https://provider.invalid/v1//chat/completions'" in url
    assert "      期望：'https://provider.invalid/v1/chat/completions'" in url
    [name] = [name for name, _ in report.failures if name.startswith("test_normalized_transport_orders")]
    lines = failure_lines(report, name)
    assert "      你的代码发出了 error 事件，error_message：'list assignment index out of range'" in lines


@pytest.mark.slow
def test_ctrl_c_ends_check_with_one_line_and_130(tmp_path: Path) -> None:
    copy = completed(tmp_path / "lab")
    edit(copy, "transport.py", "yield abort.iterate(response.aiter_bytes())", "yield response.aiter_bytes()")
    process = subprocess.Popen(
        [sys.executable, "-m", "pi_course", "check", "05"],
        cwd=copy, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # fmt: skip
    time.sleep(2.5)  # inside the blocked test
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
    heads = [line for line in checkpoint.next_step_lines(report, steps_for("5.3")) if line.startswith("  ✗ ")]
    assert heads[0] == f"  ✗ {SSE_TESTS[0]} — 下一步：看 {checkpoint.FRAMING_HINT}"
    assert checkpoint.FRAMING_HINT.startswith("pi_course/sse.py 的 SSEDecoder.feed()：行缓冲")
    assert heads[1:] == [f"  ✗ {name} — 下一步：同上" for name in SSE_TESTS[1:]]


def test_a_json_error_after_every_delta_arrived_points_at_done_not_at_the_line_buffer() -> None:
    done = Detail(
        message="AssertionError: assert ...",
        error_messages=("Invalid provider chunk: data is not valid JSON",),
        assertion='assert result.stop_reason == "toolUse"',
    )
    report = Report({}, details={SSE_TESTS[0]: done})
    assert failure_lines(report, SSE_TESTS[0])[0] == f"  ✗ {SSE_TESTS[0]} — 下一步：看 {checkpoint.DONE_HINT}"
    # Without evidence, each test keeps its own hint.
    other = Report({}, details={SSE_TESTS[3]: Detail(message="AssertionError: assert 'choices' in 'x'")})
    assert failure_lines(other, SSE_TESTS[3])[0] == (
        f"  ✗ {SSE_TESTS[3]} — 下一步：看 {checkpoint.HINTS['test_sse_invalid_chunk']}"
    )


@pytest.mark.parametrize(
    ("where", "abort_meaning"),
    [
        ("pi_course/sse.py:116 (iter_sse_events)", True),  # awaiting the next read
        ("pi_course/transport.py:160 (OpenAICompatibleTransport._reads)", True),
        ("pi_course/given.py:40 (AbortRace.iterate)", True),
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
    texts = [*checkpoint.HINTS.values(), *checkpoint.TIMEOUT_MEANINGS.values(), checkpoint.TIMEOUT_MEANING,
             checkpoint.NEVER_AWAITS, checkpoint.FRAMING_HINT, checkpoint.DONE_HINT]  # fmt: skip
    for text in texts:  # a statement, or a method called with arguments, is a line to copy
        assert not re.search(r"\b(?:yield|return) \w| = ", text), text
        assert not re.search(r"\w\.\w+\([^)]", text), text
    assert "given.AbortRace" in checkpoint.TIMEOUT_MEANINGS["test_sse_abort"]
