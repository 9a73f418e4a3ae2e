"""``python -m pi_course``: every bad input is one line and a non-zero exit, never a traceback.

Most tests call ``main([...])`` in-process; the few that must run a practice copy's own
``pi_course`` start ``python -m pi_course`` inside the copy.
"""

from __future__ import annotations

import ast
import os
import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from pi_course.course import cli as cli_module
from pi_course.course.chat import unknown_model_line
from pi_course.course.cli import main
from pi_course.course.copies import practice as practice_module
from pi_course.course.copies.diffs import target_diff
from pi_course.course.copies.locate import check_target
from pi_course.course.copies.practice import create_practice
from pi_course.course.copies.starters import TARGET_FOLDER
from pi_course.provider.connect import (
    LOCAL_DEFAULT_MODEL,
    ConfigurationError,
    connect,
    default_model,
    local_model,
    local_provider_url,
    not_found_hint,
)
from pi_course_here import edition_of

VARIABLES = ("PI_COURSE_BASE_URL", "PI_COURSE_MODEL", "PI_COURSE_API_KEY")


@pytest.fixture(autouse=True)
def no_provider_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)


def one_line(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, str]:
    """Run the CLI; assert it printed exactly one line and no traceback; return (exit code, line)."""
    code = main(argv)
    captured = capsys.readouterr()
    output = (captured.out + captured.err).strip()
    assert "Traceback" not in output
    assert len(output.splitlines()) == 1, output
    return code, output


def run_in(folder: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``python -m pi_course ARGS`` in ``folder``: a practice copy runs its own package."""
    environment = {k: v for k, v in os.environ.items() if k not in VARIABLES and k != "PYTHONPATH"}
    return subprocess.run(
        [sys.executable, "-m", "pi_course", *args],
        cwd=folder, env={**environment, **env}, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip


@pytest.fixture(scope="module")
def copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh practice copy, shared by the tests that only read it."""
    return create_practice(tmp_path_factory.mktemp("copy") / "lab")


# --- check --path -------------------------------------------------------------------------------


def test_check_path_to_a_missing_folder(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, line = one_line(capsys, ["check", "05", "--path", str(tmp_path / "nowhere")])
    assert code == 2 and "不存在" in line and "nowhere" in line


def test_check_path_to_a_folder_that_is_not_a_practice_copy(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "notes.txt").write_text("hello", encoding="utf-8")
    code, line = one_line(capsys, ["check", "05", "--path", str(tmp_path)])
    assert code == 2 and "不是练习副本" in line and "practice 05" in line
    code, line = one_line(capsys, ["check", "05", "--path", str(tmp_path / "notes.txt")])
    assert code == 2 and "不是一个文件夹" in line


def test_check_target_walks_up_to_the_copy_and_refuses_anything_else(copy: Path, tmp_path: Path) -> None:
    reference = Path(__file__).parents[2]
    assert check_target(None, copy / "notebooks", reference) == (copy, None)
    assert check_target(None, copy / "pi_course", reference) == (copy, None)  # where learners edit
    assert check_target(str(copy / "pi_course" / "course"), tmp_path, reference) == (copy, None)
    # Outside every copy, and in the reference clone: refused, naming both ways on.
    for cwd in (tmp_path, reference, reference / "notebooks"):
        root, line = check_target(None, cwd, reference)
        assert root is None and line is not None and "不在练习副本里" in line
        assert "--path" in line and "--reference" in line
    root, line = check_target(None, tmp_path, copy)  # even when the running pi_course is a copy
    assert root is None and line is not None and "--path" in line
    # --reference: the running pi_course, when it is the reference; --path to it is named.
    assert check_target(None, tmp_path, reference, reference=True) == (reference, None)
    root, line = check_target(None, tmp_path, copy, reference=True)
    assert root is None and line is not None and "不是参考实现" in line
    root, line = check_target(str(reference), tmp_path, reference)
    assert root == reference and line is not None and "不是练习副本" in line


def test_check_path_twice_is_an_error_naming_grade(capsys: pytest.CaptureFixture[str], copy: Path) -> None:
    code, line = one_line(capsys, ["check", "05", "--path", str(copy), "--path", str(copy)])
    assert code == 2 and "--path 只能给一次" in line and "grade 05" in line


@pytest.mark.parametrize(
    "extra", [["--json", "--step", "5.1"], ["--json", "--course-only"], ["--path", ".", "--reference"]]
)
def test_check_flags_that_do_not_go_together(capsys: pytest.CaptureFixture[str], extra: list[str]) -> None:
    code, line = one_line(capsys, ["check", "05", *extra])
    assert code == 2 and "python -m pi_course check --help" in line


# --- practice -----------------------------------------------------------------------------------


def test_practice_to_a_path_that_cannot_be_created(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("x", encoding="utf-8")
    code, line = one_line(capsys, ["practice", "05", str(blocker / "deeper" / "lab")])
    assert code == 2 and "无法" in line and str(blocker) in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="needs a folder this user cannot write")
def test_practice_into_a_read_only_folder(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o555)
    try:
        code, line = one_line(capsys, ["practice", "05", str(locked / "lab")])
    finally:
        locked.chmod(0o755)
    assert code == 2 and "无法创建练习目录" in line
    assert list(locked.iterdir()) == []


def test_a_failure_half_way_leaves_no_half_built_folder(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = 0

    def copyfile_until_the_disk_fills(source: Path, destination: Path) -> None:
        nonlocal calls
        calls += 1
        if calls > 3:
            raise OSError(28, "No space left on device")
        Path(destination).write_bytes(Path(source).read_bytes())

    monkeypatch.setattr(practice_module.shutil, "copyfile", copyfile_until_the_disk_fills)
    code, line = one_line(capsys, ["practice", "05", str(tmp_path / "new" / "lab")])
    assert code == 2 and "磁盘满了" in line
    assert list(tmp_path.iterdir()) == []  # neither the copy, nor its scratch folder, nor new/


def test_an_existing_empty_folder_is_used(tmp_path: Path) -> None:
    (tmp_path / "lab").mkdir()
    assert main(["practice", "05", str(tmp_path / "lab")]) == 0
    assert (tmp_path / "lab" / "LEARNING.md").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["lab"]  # no scratch folder left


def test_the_copy_carries_its_target_and_the_package_data(copy: Path) -> None:
    target = copy / "pi_course" / TARGET_FOLDER
    assert {p.name for p in target.iterdir()} >= {"README.md", "__init__.py", "protocol.py", "transport.py"}
    assert "# BEGIN LAB 5.2" in (target / "adapter.py").read_text(encoding="utf-8")
    assert "# BEGIN LAB" not in (copy / "pi_course" / "adapter.py").read_text(encoding="utf-8")
    # pasted over the learner's own (5.1 edits __init__.py), it keeps the copy's edition: the prediction gates
    assert edition_of(copy / "pi_course") == "practice"  # read from the copy, whatever its files say
    assert (copy / "pi_course" / "course" / "copies" / "templates" / "LEARNING.md").is_file()
    assert (copy / "tests" / "test_05_beyond.py").is_file()
    assert (copy / "tests" / "test_05_rules.py").is_file()


@pytest.mark.slow
def test_practice_run_inside_a_copy_makes_the_same_copy(copy: Path, tmp_path: Path) -> None:
    result = run_in(copy, "practice", "05", str(tmp_path / "again"))
    assert result.returncode == 0, result.stdout + result.stderr

    def tree(root: Path) -> dict[str, bytes]:
        return {
            p.relative_to(root).as_posix(): p.read_bytes()
            for p in root.rglob("*")
            if p.is_file() and "__pycache__" not in p.parts
        }

    assert tree(tmp_path / "again") == tree(copy)


def test_learning_md_says_which_stubs_belong_to_which_step(copy: Path) -> None:
    """Every stub of the copy (a ``Lab 5.x`` body) is named in LEARNING.md's row for its step and file."""
    rows = [
        line
        for line in (copy / "LEARNING.md").read_text(encoding="utf-8").splitlines()
        if line.startswith("| 5.")
    ]
    stubs: list[tuple[str, str, str]] = []
    for module in ("outbound.py", "adapter.py", "sse.py", "transport.py"):
        source = (copy / "pi_course" / module).read_text(encoding="utf-8")
        lines = source.splitlines()

        def visit(node: ast.AST, prefix: str, module: str = module, lines: list[str] = lines) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.ClassDef):
                    visit(child, f"{prefix}{child.name}.")
                elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                    body = "\n".join(lines[child.lineno - 1 : child.end_lineno])
                    found = re.search(r'NotImplementedError\("Lab (5\.\d)|# starter: Lab (5\.\d)', body)
                    if found:
                        stubs.append((found[1] or found[2], module, f"{prefix}{child.name}"))

        visit(ast.parse(source), "")
    assert len(stubs) >= 20
    for step, module, name in stubs:
        short = name.removeprefix("OpenAICompatibleTransport.")
        row = [r for r in rows if r.startswith(f"| {step} | `pi_course/{module}` |")]
        assert row and (f"`{name}()`" in row[0] or f"`{short}()`" in row[0]), (step, module, name)
    http_53 = next(r for r in rows if r.startswith("| 5.3 | `pi_course/transport.py` |"))
    assert (
        "`OpenAICompatibleTransport.stream()`" in http_53
        and "`OpenAICompatibleTransport._reads()`" in http_53
    )


# --- checkpoint ---------------------------------------------------------------------------------


@pytest.mark.slow
def test_checkpoint_diff_inside_a_copy_prints_the_target_diff(copy: Path) -> None:
    result = run_in(copy, "checkpoint", "05", "--diff")
    assert result.returncode == 0, result.stderr
    assert "--- starter/pi_course/protocol.py" in result.stdout
    assert "+++ target/pi_course/protocol.py" in result.stdout
    assert "+class ToolDefinition:" in result.stdout
    assert "+        ToolDefinition," in result.stdout  # 5.1's export in __init__.py
    assert "BEGIN LAB" not in result.stdout
    # The same diff as the reference prints.
    assert result.stdout == target_diff()


def test_checkpoint_diff_mine_and_its_misuse(capsys: pytest.CaptureFixture[str]) -> None:
    code, line = one_line(capsys, ["checkpoint", "05", "--diff", "--mine"])
    assert code == 0 and "相同" in line  # the reference is the target
    code, line = one_line(capsys, ["checkpoint", "05", "--mine"])
    assert code == 2 and "--diff" in line


@pytest.mark.slow
def test_checkpoint_diff_mine_from_a_copys_subfolder_diffs_the_copy(copy: Path) -> None:
    # In notebooks/ the running pi_course is the reference (nothing to import there), as in check.
    result = run_in(copy / "notebooks", "checkpoint", "05", "--diff", "--mine")
    assert result.returncode == 0, result.stderr
    assert "--- mine/pi_course/outbound.py" in result.stdout  # the copy's starter, not the target
    assert result.stdout == run_in(copy, "checkpoint", "05", "--diff", "--mine").stdout


@pytest.mark.slow
def test_a_copy_without_its_target_says_so(tmp_path: Path) -> None:
    old = create_practice(tmp_path / "old")
    for path in sorted((old / "pi_course" / TARGET_FOLDER).iterdir()):
        path.unlink()
    (old / "pi_course" / TARGET_FOLDER).rmdir()
    result = run_in(old, "checkpoint", "05", "--diff")
    output = (result.stdout + result.stderr).strip()
    assert result.returncode == 1 and len(output.splitlines()) == 1 and "target" in output, output


# --- chat ---------------------------------------------------------------------------------------


@pytest.mark.slow
def test_chat_before_5_1_in_a_copy(copy: Path) -> None:
    result = run_in(copy, "chat", "读取 README.md")
    output = (result.stdout + result.stderr).strip()
    assert result.returncode == 1 and "Traceback" not in output
    assert len(output.splitlines()) == 1 and "5.1" in output, output


def test_a_prompt_of_several_words_is_one_prompt(monkeypatch: pytest.MonkeyPatch) -> None:
    prompts: list[tuple[str, str | None]] = []

    async def fake_chat(prompt: str, model: str | None) -> int:
        prompts.append((prompt, model))
        return 0

    monkeypatch.setattr(cli_module, "chat", fake_chat)
    assert main(["chat", "读取", "README.md"]) == 0
    assert main(["chat", "--model", "slow", "数到", "五"]) == 0
    assert prompts == [("读取 README.md", None), ("数到 五", "slow")]


@pytest.mark.parametrize(
    ("argv", "prog"),
    [(["chat", "hi", "--bogus"], "chat"), (["check", "05", "extra"], "check"), (["serve", "now"], "serve")],
)
def test_a_subcommands_unknown_argument_names_the_subcommand(
    capsys: pytest.CaptureFixture[str], argv: list[str], prog: str
) -> None:
    code, line = one_line(capsys, argv)
    assert code == 2
    assert line.startswith(f"python -m pi_course {prog}：错误：不认识的参数：{argv[-1]}")
    assert f"python -m pi_course {prog} --help" in line


def test_chat_with_an_unknown_local_model_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    code, line = one_line(capsys, ["chat", "--model", "nope", "hi"])
    assert code == 2
    assert line.startswith(
        "chat：模型 'nope' 不存在（HTTP 404：The model `nope` does not exist. Available models: mainline,"
    )
    assert line.endswith("用 --model 选一个存在的名字，或者省略 --model（默认 mainline）。")


def test_unknown_model_line_only_for_a_404_about_the_model() -> None:
    openai = "Provider returned HTTP 404: The model `gpt-9` does not exist or you do not have access to it."
    line = unknown_model_line(openai, "gpt-9", "https://api.openai.com/v1")
    assert line is not None and "PI_COURSE_MODEL" in line and "'gpt-9'" in line
    ollama = 'Provider returned HTTP 404: model "llama9" not found, try pulling it first'
    assert unknown_model_line(ollama, "llama9", "http://127.0.0.1:11434/v1") is not None
    assert unknown_model_line("Provider returned HTTP 404: Not Found", "m", "https://x/v1") is None
    assert unknown_model_line("Provider returned HTTP 401: model access denied", "m", None) is None


def test_base_url_without_a_model(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PI_COURSE_BASE_URL", "https://api.example.invalid/v1")
    code, line = one_line(capsys, ["chat", "hi"])
    assert code == 2 and "PI_COURSE_MODEL" in line and "PI_COURSE_BASE_URL" in line


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("garbage", "不是以 http:// 或 https:// 开头"),
        ("api.openai.com/v1", "不是以 http:// 或 https:// 开头"),
        ("localhost:8000/v1", "不是以 http:// 或 https:// 开头"),
        ("ftp://example.com/v1", "ftp://"),
        ("http://[::1", "不是有效的 URL"),
        ("http://localhost:99999/v1", "不是有效的 URL"),
        ("http:///v1", "里没有主机名"),
    ],
)
def test_a_malformed_base_url(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, value: str, says: str
) -> None:
    monkeypatch.setenv("PI_COURSE_BASE_URL", value)
    monkeypatch.setenv("PI_COURSE_MODEL", "some-model")
    code, line = one_line(capsys, ["chat", "hi"])
    assert code == 2 and line.startswith(f"PI_COURSE_BASE_URL={value!r}") and says in line


def help_text(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    assert main(argv) == 0
    return " ".join(capsys.readouterr().out.split())


def test_chat_help_names_the_default_model_in_each_case(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert "默认 mainline" in help_text(capsys, ["chat", "--help"])
    monkeypatch.setenv("PI_COURSE_BASE_URL", "https://api.example.invalid/v1")
    assert "这里必须给出：设置了 PI_COURSE_BASE_URL，却没有设置 PI_COURSE_MODEL" in help_text(
        capsys, ["chat", "--help"]
    )
    monkeypatch.setenv("PI_COURSE_MODEL", "gpt-x")
    assert "默认 PI_COURSE_MODEL='gpt-x'" in help_text(capsys, ["chat", "--help"])


def test_a_404_from_a_base_url_without_v1_gets_a_hint(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    base = local_provider_url().removesuffix("/v1")
    monkeypatch.setenv("PI_COURSE_BASE_URL", base)
    monkeypatch.setenv("PI_COURSE_MODEL", "mainline")
    assert main(["chat", "hi"]) == 1
    captured = capsys.readouterr()
    assert "HTTP 404" in captured.out and "Traceback" not in captured.out + captured.err
    assert captured.err.strip() == not_found_hint("Provider returned HTTP 404: Not Found", base)
    assert f"{base}/v1" in captured.err and "/v1" in captured.err


def test_not_found_hint_only_for_a_404_without_v1() -> None:
    assert not_found_hint("Provider returned HTTP 404: x", "https://api.deepseek.com") is not None
    assert not_found_hint("Provider returned HTTP 404: x", "https://api.deepseek.com/") is not None
    assert not_found_hint("Provider returned HTTP 404: x", "https://api.deepseek.com/v1") is None
    assert (
        not_found_hint("Provider returned HTTP 404: x", "https://x.aliyuncs.com/compatible-mode/v1") is None
    )
    assert not_found_hint("Provider returned HTTP 500: x", "https://api.deepseek.com") is None
    assert not_found_hint("Provider returned HTTP 404: x", None) is None


# --- serve and usage errors ---------------------------------------------------------------------


@pytest.mark.parametrize("port", ["99999", "0", "-1", "http"])
def test_serve_with_a_bad_port(capsys: pytest.CaptureFixture[str], port: str) -> None:
    code, line = one_line(capsys, ["serve", "--port", port])
    assert code == 2 and "--port" in line and "65535" in line


@pytest.fixture
def busy_port() -> Iterator[int]:
    with socket.create_server(("127.0.0.1", 0)) as server:
        yield server.getsockname()[1]


def test_serve_on_a_busy_port(capsys: pytest.CaptureFixture[str], busy_port: int) -> None:
    code, line = one_line(capsys, ["serve", "--port", str(busy_port)])
    assert code == 1 and str(busy_port) in line and "--port" in line


# What argparse says in English, in any of its messages; none of it reaches the learner.
ARGPARSE_ENGLISH = re.compile(
    r"usage:|error:|required|unrecognized|invalid choice|invalid \w+ value|choose from|expected|not allowed"
    r"|ignored explicit|ambiguous option"
    r"|positional arguments|options:|show this help"
)


@pytest.mark.parametrize(
    "argv",
    [
        ["check", "06"],
        ["check", "05", "--step", "5.9"],
        ["frobnicate"],
        ["practice", "05"],
        ["practice"],
        [],
        ["check", "05", "--path"],
        ["check", "05", "--path", ".", "--reference"],
        ["check", "05", "--json", "--step", "5.1"],
        ["grade", "05"],
        ["grade", "05", "x", "--jobs", "0"],
        ["serve", "--port", "http"],
        ["chat"],
        ["checkpoint", "05", "--bogus"],
    ],
)
def test_usage_errors_are_one_chinese_line(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    code, line = one_line(capsys, argv)
    assert code == 2 and "--help" in line and "：错误：" in line, line
    assert ARGPARSE_ENGLISH.search(line) is None, line


def test_an_argument_is_named_in_words(capsys: pytest.CaptureFixture[str]) -> None:
    """The chapter, shown as ``05`` in the usage, is 章节 05 in an error; the missing command is 命令."""
    assert one_line(capsys, ["check", "06"])[1].startswith(
        "python -m pi_course check：错误：参数 章节 05：'06' 不是可选的值"
    )
    assert one_line(capsys, ["practice"])[1].startswith(
        "python -m pi_course practice：错误：缺少参数 章节 05、DIR，"
    )
    assert one_line(capsys, [])[1].startswith("python -m pi_course：错误：缺少参数 命令，")


def test_a_missing_argument_shows_how_to_write_the_command(capsys: pytest.CaptureFixture[str]) -> None:
    code, line = one_line(capsys, ["practice", "05"])
    assert code == 2
    assert line.startswith(
        "python -m pi_course practice：错误：缺少参数 DIR，应写成 python -m pi_course practice"
    )
    assert line.split("应写成 ")[1].split("（")[0].endswith(" 05 DIR"), line


@pytest.mark.parametrize(
    "command", [[], ["serve"], ["chat"], ["practice"], ["check"], ["checkpoint"], ["grade"]]
)
def test_help_is_chinese(capsys: pytest.CaptureFixture[str], command: list[str]) -> None:
    """Every command's --help: Chinese headings and a Chinese line for each option (names stay)."""
    assert main([*command, "--help"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("用法：python -m pi_course"), text
    assert ARGPARSE_ENGLISH.search(text) is None, text
    for line in text.splitlines():
        described = re.match(
            r"^  (?:-\S+(?: \S+)?(?:, -\S+(?: \S+)?)?|[A-Z0-9.]+|\w+)\s{2,}(?P<help>.+)$", line
        )
        if described:
            assert re.search(r"[\u4e00-\u9fff]", described["help"]), line


# --- connect() ----------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_the_local_provider_gets_a_placeholder_key_and_a_strict_transport() -> None:
    model = local_model()
    headers = model.transport._headers()  # type: ignore[attr-defined]
    assert headers["Authorization"].removeprefix("Bearer ")  # a chapter-faithful transport sends it
    assert model.transport.strict is True  # type: ignore[attr-defined]
    await model.transport.aclose()  # type: ignore[attr-defined]
    replay = local_model("recorded/openai-text", strict=False)
    assert replay.transport.strict is False  # type: ignore[attr-defined]
    await replay.transport.aclose()  # type: ignore[attr-defined]


@pytest.mark.anyio
async def test_a_real_provider_gets_a_non_strict_transport() -> None:
    env = {"PI_COURSE_BASE_URL": "https://api.example.invalid/v1", "PI_COURSE_MODEL": "m"}
    model = connect(env=env)
    assert model.transport.strict is False  # type: ignore[attr-defined]
    await model.transport.aclose()  # type: ignore[attr-defined]
    with pytest.raises(ConfigurationError, match="PI_COURSE_BASE_URL"):
        connect(env={**env, "PI_COURSE_BASE_URL": "ftp://example.com"})
    assert default_model({}) == LOCAL_DEFAULT_MODEL
    assert default_model(env) == "m"
    assert default_model({"PI_COURSE_BASE_URL": "https://x/v1"}) is None


@pytest.mark.slow
def test_check_rules_prints_the_table_on_a_fresh_copy_and_a_closed_pipe_is_no_error(copy: Path) -> None:
    from pi_course.chapter.rules import RULES

    result = run_in(copy, "check", "05", "--rules")
    lines = result.stdout.splitlines()
    assert lines[0] == f"本章规则：0/{len(RULES)}（还没有检查：先让 pi_course 能导入、5.1 的两个类型就位）"
    assert sum(line.startswith("  待完成 ") for line in lines) == len(RULES)
    assert lines[-1].startswith("第 05 章：未完成——第一次红灯")
    # `check 05 --rules | head`: the reader has gone before the output is written
    process = subprocess.Popen(
        [sys.executable, "-m", "pi_course", "check", "05", "--rules"],
        cwd=copy, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()
    errors = process.stderr.read()
    assert process.wait(timeout=120) == 1
    assert "Traceback" not in errors and "BrokenPipeError" not in errors, errors


def test_check_json_help_says_where_the_text_goes(capsys: pytest.CaptureFixture[str]) -> None:
    text = " ".join(help_text(capsys, ["check", "--help"]).split())
    assert "标准输出上只打印这份副本的记录（JSON，一行）；文字报告写到标准错误" in text
