"""The ``check`` runner itself: first red light, time bounds, readable failures, flags, Ctrl-C."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pi_course.course import checkpoint
from pi_course.course.checkpoint import Detail, Report, failure_lines, run_focused, steps_for
from pi_course.course.practice import TEACHING_FILES

ROOT = Path(__file__).parent.parent
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


def test_fresh_copy_gives_the_first_red_light_in_one_line(tmp_path: Path) -> None:
    copy = new_practice(tmp_path / "lab")
    result = cli("check", "05", cwd=copy)
    assert result.returncode == 1
    assert result.stdout.splitlines() == [
        "第一次红灯：pi_course 没有导出 ToolDefinition；AgentContext 没有 tools 字段。先完成实践 5.1 的两个类型。"
    ]
    assert result.stderr == ""


def test_reference_passes_the_course_then_the_beyond_checks(tmp_path: Path) -> None:
    result = cli("check", "05", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[:5] == COURSE_LINES
    assert (
        lines[5].startswith("本章之外的检查：")
        and lines[5].split("：")[1].split("/")[0] == lines[5].split("/")[1]
    )
    assert len(lines[6:]) >= 5 and all(line.startswith("  ✓ ") for line in lines[6:])


def test_course_only_runs_the_eleven_alone_and_verbose_prints_pytests_report_first(tmp_path: Path) -> None:
    result = cli("check", "05", "-v", "--course-only", cwd=tmp_path)
    assert result.returncode == 0
    assert "test_sse_abort_during_a_blocked_read_ends_aborted_and_closes_the_response PASSED" in result.stdout
    assert "test_05_beyond" not in result.stdout
    assert result.stdout.splitlines()[-5:] == COURSE_LINES


def test_python_check_runs_the_course_alone(capsys: pytest.CaptureFixture[str]) -> None:
    assert checkpoint.check()  # what a notebook's checkpoint cell calls
    assert capsys.readouterr().out.splitlines() == COURSE_LINES


def test_a_blocked_read_is_named_with_its_meaning_within_the_bound(tmp_path: Path) -> None:
    copy = completed(tmp_path / "lab")
    # Reads handed out directly, not raced against the abort signal.
    edit(copy, "http.py", "yield abort.iterate(response.aiter_bytes())", "yield response.aiter_bytes()")
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


def test_a_loop_that_never_awaits_is_stopped_and_named(tmp_path: Path) -> None:
    copy = completed(tmp_path / "lab")
    edit(copy, "outbound.py", "def to_provider_messages(context: AgentContext) -> list[WireMessage]:\n",
         "def to_provider_messages(context: AgentContext) -> list[WireMessage]:\n    while True:\n        pass\n")  # fmt: skip
    env = {**os.environ, "PI_COURSE_TEST_TIMEOUT": "1"}
    result = cli("check", "05", "--step", "5.1", cwd=copy, env=env)
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert lines[0] == "出站转换：0/1 未通过"
    assert lines[1].startswith(
        "  ✗ test_outbound_conversion_maps_four_roles_and_tools_without_touching_input — 下一步"
    )
    assert "超过 1 秒没有结束" in lines[2]
    assert lines[3].startswith("      停在 pi_course/outbound.py:")


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


def test_failures_show_both_strings_in_full_and_the_error_message_of_an_error_event(tmp_path: Path) -> None:
    copy = completed(tmp_path / "lab")
    edit(
        copy,
        "http.py",
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


def test_ctrl_c_ends_check_with_one_line_and_130(tmp_path: Path) -> None:
    copy = completed(tmp_path / "lab")
    edit(copy, "http.py", "yield abort.iterate(response.aiter_bytes())", "yield response.aiter_bytes()")
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
