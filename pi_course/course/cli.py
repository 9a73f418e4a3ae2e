"""``python -m pi_course``: serve the local provider, chat with a model, practise and check."""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import socket
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NoReturn

from ..chapter.steps import STEP_NUMBERS

EXIT_USAGE = 2  # a bad argument, path or variable: nothing was run
EXIT_INTERRUPTED = 130


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors: what is wrong, and where to read the usage."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: 错误：{message}（用 {self.prog} --help 查看用法）\n")


def _port(value: str) -> int:
    try:
        port = int(value)
    except ValueError:
        port = -1
    if not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"必须是 1 到 65535 之间的整数，收到 {value!r}")
    return port


def _positive(kind: type[int] | type[float]) -> Callable[[str], float]:
    """An argparse type for a positive, finite ``int`` or ``float`` (``grade --jobs``, ``--timeout``)."""

    def parse(value: str) -> float:
        try:
            number = kind(value)
        except ValueError:
            number = 0
        if not 0 < number < float("inf"):
            raise argparse.ArgumentTypeError(f"必须是正{'整' if kind is int else ''}数，收到 {value!r}")
        return number

    return parse


def _model_help() -> str:
    """``chat --model``'s help, saying which model is used without it in the current environment."""
    base_url = os.environ.get("PI_COURSE_BASE_URL")
    if not base_url:
        return "model name; default: mainline, a script of the local provider (PI_COURSE_BASE_URL is not set)"
    model = os.environ.get("PI_COURSE_MODEL")
    if model:
        return f"model name; default: PI_COURSE_MODEL={model!r} at PI_COURSE_BASE_URL={base_url!r}"
    return (
        "model name; required here: PI_COURSE_BASE_URL is set and PI_COURSE_MODEL is not "
        "(set PI_COURSE_MODEL, pass --model, or unset PI_COURSE_BASE_URL for the local provider)"
    )


def _say(line: str) -> None:
    print(line, file=sys.stderr)


def _before_51(error: ImportError) -> str | None:
    """The one line for a practice copy whose ``ToolDefinition`` (practice 5.1) is not there yet."""
    if "ToolDefinition" not in str(error):
        return None
    return (
        "这个命令要用到 ToolDefinition，而这份 pi_course 还没有它：先完成实践 5.1"
        "（python -m pi_course check 05 --step 5.1），再运行。"
    )


def _missing_server(error: ModuleNotFoundError) -> str | None:
    if error.name not in ("uvicorn", "starlette"):
        return None
    return f'本地 provider 需要 {error.name}，但它没有安装：pip install "pi-course[lab]"（或 make lab）。'


_MODEL_NOT_FOUND = re.compile(
    r"HTTP 404: (?P<message>.*\bmodel\b.*(?:does not exist|not found|not exist|model_not_found).*)$",
    re.IGNORECASE,
)


def unknown_model_line(error_message: str | None, model: str, base_url: str | None) -> str | None:
    """One line for an HTTP 404 that says the model does not exist (the local provider's or a real one's)."""
    found = _MODEL_NOT_FOUND.search(error_message or "")
    if found is None:
        return None
    if base_url:
        fix = f"换一个这个 provider 有的模型名（--model 或 PI_COURSE_MODEL），base URL 是 {base_url}"
    else:
        fix = "用 --model 选一个存在的名字，或者省略 --model（默认 mainline）"
    return f"chat：模型 {model!r} 不存在（HTTP 404：{found['message'].rstrip('.')}）。{fix}。"


async def _chat(prompt: str, model_name: str | None) -> int:
    try:
        from ..chapter.fixtures import READ_TOOL
        from ..notebook.display import describe_event
        from ..provider.connect import ConfigurationError, connect, not_found_hint
    except ImportError as error:
        _say(_before_51(error) or f"chat 无法导入 pi_course：{error}")
        return 1
    from ..protocol import AgentContext, user_message

    try:
        model = connect(model_name)
    except ConfigurationError as error:
        _say(str(error))
        return EXIT_USAGE
    except ModuleNotFoundError as error:
        _say(_missing_server(error) or f"chat 缺少依赖：{error}")
        return 1
    context = AgentContext(messages=(user_message(prompt),), tools=(READ_TOOL,))
    base_url = os.environ.get("PI_COURSE_BASE_URL")
    held = None  # `start`, printed with the next event: an unknown model is then one line alone
    try:
        async for event in model.stream(context):
            if event.type == "start" and held is None:
                held = event
                continue
            if event.type == "error":
                unknown = unknown_model_line(event.error.error_message, model.model, base_url)
                if unknown is not None:
                    _say(unknown)
                    return EXIT_USAGE
            if held is not None:
                print(describe_event(held), flush=True)
                held = None
            print(describe_event(event), flush=True)
            if event.type == "error":
                hint = not_found_hint(event.error.error_message, base_url)
                if hint:
                    _say(hint)
                return 1
    except NotImplementedError as error:
        _say(f"chat 还不能运行：{error}。先完成这一步（python -m pi_course check 05），再运行 chat。")
        return 1
    except Exception as error:  # the learner's code failed outside the stream's own error handling
        _say(f"chat 失败：{type(error).__name__}: {error}（python -m pi_course check 05 会指出是哪一步）")
        return 1
    finally:
        await model.transport.aclose()  # type: ignore[attr-defined]
    return 0


def _serve(host: str, port: int) -> int:
    try:
        from ..provider.server import serve as run_server
    except ImportError as error:
        missing = isinstance(error, ModuleNotFoundError) and _missing_server(error)
        _say(missing or _before_51(error) or f"serve 无法导入本地 provider：{error}")
        return 1
    try:
        with socket.create_server((host, port)):
            pass  # only to turn a busy port or a bad host into one line before uvicorn starts
    except OSError as error:
        reason = error.strerror or str(error)
        _say(f"无法在 {host}:{port} 上启动本地 provider：{reason}。换一个端口（--port）或地址（--host）。")
        return 1
    print(f"pi_course local provider on http://{host}:{port}/v1 (Ctrl-C stops it)")
    run_server(host, port)
    return 0


def practice_path_problem(path: str) -> str | None:
    """Why ``check --path PATH`` cannot run there (one line), or ``None`` for a usable tree."""
    from ..chapter.steps import FOCUSED_TEST

    folder = Path(path).expanduser()
    if not folder.exists():
        return (
            f"check --path {path}：这个文件夹不存在。"
            "请给出练习副本的目录（python -m pi_course practice 05 DIR 创建的那个）。"
        )
    if not folder.is_dir():
        return f"check --path {path}：这不是一个文件夹。请给出练习副本的目录。"
    if find_course_tree(folder.resolve()) is None:
        return (
            f"check --path {path}：这里不是练习副本（需要 pi_course/__init__.py 和 tests/{FOCUSED_TEST}）。"
            "请给出 python -m pi_course practice 05 DIR 创建的目录。"
        )
    return None


def is_course_tree(folder: Path) -> bool:
    """A folder ``check`` can test: ``pi_course/__init__.py`` beside the focused tests."""
    from ..chapter.steps import FOCUSED_TEST

    tests = (folder / "tests" / FOCUSED_TEST, folder / "pi_course" / "_course" / "tests" / FOCUSED_TEST)
    return (folder / "pi_course" / "__init__.py").is_file() and any(test.is_file() for test in tests)


def is_practice_copy(folder: Path) -> bool:
    """A tree made by ``practice 05`` (its ``__init__.py`` says ``EDITION = "practice"``)."""
    try:
        source = (folder / "pi_course" / "__init__.py").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    return 'EDITION = "practice"' in source or (folder / "LEARNING.md").is_file()


def find_course_tree(start: Path) -> Path | None:
    """The nearest tree ``check`` can test at or above ``start`` (a practice copy's notebooks/…)."""
    for folder in (start, *start.parents):
        if is_course_tree(folder):
            return folder
    return None


def check_target(path: str | None, cwd: Path, running: Path) -> tuple[Path | None, str | None]:
    """Which tree ``check`` tests, with the one line to say about it; or ``None`` and why not.

    The nearest tree at or above ``--path`` (else the current directory) — a practice copy is
    checked without a word. Outside every tree, the tree of the running ``pi_course``. Whatever
    is not a practice copy (the reference) is named in one line, so that a learner who ran
    ``check`` in the wrong folder does not take the reference's 11/11 for their own.
    """
    if path is not None:
        problem = practice_path_problem(path)
        if problem is not None:
            return None, problem
        start = Path(path).expanduser().resolve()
    else:
        start = cwd
    found = find_course_tree(start)
    if found is None:
        if not is_course_tree(running):
            return None, (
                f"check 05：{cwd} 不在练习副本里，正在运行的 pi_course（{running / 'pi_course'}）"
                "也没有聚焦测试。请 cd 到练习副本的目录再运行，或加 --path 副本目录"
                "（python -m pi_course practice 05 DIR 创建一份）。"
            )
        found = running
        if is_practice_copy(found):
            note = f"check 05：{cwd} 不在练习副本里；检查的是正在运行的 pi_course 所在的练习副本 {found}。"
            return found, note
    if is_practice_copy(found):
        return found, None
    return found, (
        f"check 05：检查的是参考实现（reference，{found / 'pi_course'}），不是练习副本。"
        "要检查你的练习副本：在副本目录里运行，或加 --path 副本目录。"
    )


def _checkpoint(diff: bool, mine: bool) -> int:
    from .practice import PracticeError, target_diff

    if not diff:
        if mine:
            _say("checkpoint 05 --mine 要和 --diff 一起用：python -m pi_course checkpoint 05 --diff --mine")
            return EXIT_USAGE
        print(CHECKPOINT_05, end="")
        return 0
    # --mine from a copy's notebooks/ runs the reference's CLI: diff the copy's files, not its own.
    copy = find_course_tree(Path.cwd()) if mine else None
    try:
        if copy is not None and is_practice_copy(copy):
            text = target_diff(mine=True, package=copy / "pi_course")
        else:
            text = target_diff(mine=mine)
    except PracticeError as error:
        _say(str(error))
        return 1
    if mine and not text:
        print("你的教学文件与 target 相同（mine → target 没有差别）。")
        return 0
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:  # `checkpoint 05 --diff | head`: the reader left; so do we, quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = _Parser(prog="python -m pi_course", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", help="run the scripted OpenAI-compatible provider")
    serve.add_argument("--host", default="127.0.0.1", help="interface (default: loopback only)")
    serve.add_argument("--port", type=_port, default=8765, help="1-65535 (default: 8765)")

    chat = commands.add_parser(
        "chat",
        help="stream one model turn and print every event",
        description="Stream one model turn and print every event. Uses PI_COURSE_BASE_URL, "
        "PI_COURSE_MODEL and PI_COURSE_API_KEY when PI_COURSE_BASE_URL is set, else the local provider.",
    )
    chat.add_argument("prompt", nargs="+", help="the prompt; several words are one prompt (读取 README.md)")
    chat.add_argument("--model", help=_model_help())

    practice = commands.add_parser("practice", help="create a practice copy at the chapter's start")
    practice.add_argument("chapter", choices=["05"])
    practice.add_argument("directory", help="a new or empty folder")

    check = commands.add_parser("check", help="run the focused tests, one line per practice step")
    check.add_argument("chapter", choices=["05"])
    check.add_argument("--step", choices=STEP_NUMBERS)
    check.add_argument(
        "--path",
        help="a practice copy or a folder inside one (default: the copy around the current folder; "
        "outside every copy, the running pi_course, which is then named)",
    )
    check.add_argument("-v", "--verbose", action="store_true", help="print pytest's full report too")
    check.add_argument(
        "--course-only", action="store_true", help="the 11 focused tests alone, without the beyond checks"
    )

    checkpoint = commands.add_parser("checkpoint", help="where chapter 05 starts and ends")
    checkpoint.add_argument("chapter", choices=["05"])
    checkpoint.add_argument("--diff", action="store_true", help="print the target diff: starter → target")
    checkpoint.add_argument("--mine", action="store_true", help="with --diff: from your files to the target")

    grade = commands.add_parser(
        "grade",
        help="check a class of practice copies (folders, folders of copies, .zip/.tar.gz), in parallel",
        description="Check every practice copy: each on a temporary copy, in its own process group, "
        "with a time bound and an environment without provider settings or keys. "
        "Prints a table (unfinished copies first) and writes the files asked for.",
    )
    grade.add_argument("chapter", choices=["05"])
    grade.add_argument(
        "paths", nargs="+", metavar="PATH", help="a copy, a folder of copies, or a .zip/.tar.gz of one"
    )
    grade.add_argument("--json", dest="json_file", metavar="F", help="write the records as a JSON list")
    grade.add_argument("--csv", dest="csv_file", metavar="F", help="write one CSV row per copy")
    grade.add_argument("--html", dest="html_file", metavar="F", help="write one self-contained HTML page")
    grade.add_argument(
        "--jobs", type=_positive(int), metavar="N", help="copies checked at once (default: CPU count)"
    )
    grade.add_argument(
        "--timeout", type=_positive(float), default=120.0, metavar="S", help="seconds per copy (default: 120)"
    )

    try:
        args, extra = parser.parse_known_args(argv)
        if extra:  # named by the subcommand that did not take them, with its own --help
            commands.choices[args.command].error(f"unrecognized arguments: {' '.join(extra)}")
    except SystemExit as stop:  # --help, or a one-line usage error already printed
        return stop.code if isinstance(stop.code, int) else EXIT_USAGE
    if args.command == "serve":
        try:
            return _serve(args.host, args.port)
        except KeyboardInterrupt:
            return EXIT_INTERRUPTED
    if args.command == "chat":
        try:
            return asyncio.run(_chat(" ".join(args.prompt), args.model))
        except KeyboardInterrupt:
            _say("chat 已中断（Ctrl-C）。")
            return EXIT_INTERRUPTED
    if args.command == "practice":
        from .practice import PracticeError, create_practice

        try:
            target = create_practice(args.directory)
        except PracticeError as error:
            _say(str(error))
            return EXIT_USAGE
        except KeyboardInterrupt:
            _say("practice 已中断（Ctrl-C），没有留下半成品目录。")
            return EXIT_INTERRUPTED
        print(f"练习目录已创建：{target}")
        print(f"下一步：cd {target} && python -m pi_course check 05（先看第一次红灯），再读 LEARNING.md")
        return 0
    if args.command == "check":
        from .checkpoint import check as run_check
        from .checkpoint import course_root

        try:
            cwd = Path.cwd()
        except OSError:  # the current folder was removed
            cwd = Path(os.environ.get("PWD") or ".").absolute()
        root, line = check_target(args.path, cwd, course_root())
        if line is not None:
            _say(line)
        if root is None:
            return EXIT_USAGE
        try:
            beyond = args.step is None and not args.course_only
            return 0 if run_check(args.step, root, beyond=beyond, verbose=args.verbose) else 1
        except KeyboardInterrupt:
            print("check 已中断（Ctrl-C）。", file=sys.stderr)
            return 130
    if args.command == "checkpoint":
        return _checkpoint(args.diff, args.mine)
    if args.command == "grade":
        from .grade_report import run as run_grade

        try:
            return run_grade(
                args.paths, json_file=args.json_file, csv_file=args.csv_file, html_file=args.html_file,
                jobs=args.jobs, timeout=args.timeout,
            )  # fmt: skip
        except KeyboardInterrupt:
            _say("grade 已中断（Ctrl-C），没有留下检查进程。")
            return EXIT_INTERRUPTED
    parser.error(f"unknown command {args.command}")


CHECKPOINT_05 = """Checkpoint 05 · 接入 OpenAI-compatible Provider
起点（parent）：第 04 章完成。`python -m pi_course practice 05 DIR` 生成这个起点：
  没有 ToolDefinition，AgentContext 没有 tools，第 05 章的函数都是桩。
终点（target）：11 项聚焦测试全部通过（1 + 3 + 5 + 2）。
  练习副本里，target 放在 pi_course/course/target-05/（LAB 区域有标记；先别看）。
教学文件（pi_course/ 顶层；provider/、course/、notebook/ 是工具，不用改）：
  pi_course/protocol.py      5.1  ToolDefinition、AgentContext.tools（并在 __init__.py 导出）
  pi_course/outbound.py   5.1  to_provider_messages()、to_provider_tools()
  pi_course/adapter.py    5.2  fixed_transport()、OpenAICompatibleModel.stream()
  pi_course/sse.py        5.3  SSEDecoder.feed()、parse_payload() 与校验函数、iter_provider_chunks()
  pi_course/transport.py       5.3  stream()、_reads()：读取响应与取消（5 项 SSE 测试都经过它们）
                          5.4  chat_completions_url()、_headers()、request_body()、_Secret.redact()
聚焦测试：tests/test_05_provider_adapter.py
命令：
  python -m pi_course practice 05 DIR        创建练习目录
  python -m pi_course check 05 [--step 5.x]  [--path DIR]  逐步检查
  python -m pytest tests/test_05_provider_adapter.py -k outbound   直接运行一步的聚焦测试
  python -m pytest --nbval-lax notebooks/    讲师检查学习者的笔记本
  python -m pi_course checkpoint 05 --diff   target diff：starter → target（先别看）
  python -m pi_course checkpoint 05 --diff --mine   你的文件 → target
"""


if __name__ == "__main__":
    sys.exit(main())
