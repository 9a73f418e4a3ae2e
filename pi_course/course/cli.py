"""``python -m pi_course``: serve the local provider, chat with a model, practise and check.

Its usage, help and errors are Chinese (:mod:`.parser`), like the rest of the course's terminal output.

Each command is a pair side by side: ``_NAME_command(commands)`` adds its parser and names
``_run_NAME(args)``, which runs it and returns the exit status (:mod:`.exits`).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import socket
import sys
from collections.abc import Callable, Sequence
from typing import TypeAlias

from ..chapter.steps import STEP_NUMBERS
from ..provider import DEFAULT_PORT, default_model
from .chat import before_51, chat, missing_server
from .checker.import_failure import lesson_imported
from .exits import EXIT_DONE, EXIT_FAILED, EXIT_INTERRUPTED, EXIT_USAGE
from .oserrors import reason as said_reason
from .parser import ChineseParser
from .running.sandbox import CHOICES as SANDBOX_CHOICES


class _CourseParser(ChineseParser):
    """The course's parser: its chapter argument, shown as ``05`` in the usage, is 章节 05 in an error."""

    names = {"05": "章节 05", "COMMAND": "命令"}  # noqa: RUF012 -- read only


_Commands: TypeAlias = "argparse._SubParsersAction[_CourseParser]"  # what add_parser is called on
DESCRIPTION = "动手学 Pi 第 05 章的命令：练习副本、检查、评分，本地 provider 与一轮对话。"


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
    model = default_model()
    if not base_url:
        return f"模型名；默认 {model}，本地 provider 的一个脚本（没有设置 PI_COURSE_BASE_URL）"
    if model:
        return f"模型名；默认 PI_COURSE_MODEL={model!r}，在 PI_COURSE_BASE_URL={base_url!r}"
    return (
        "模型名；这里必须给出：设置了 PI_COURSE_BASE_URL，却没有设置 PI_COURSE_MODEL"
        "（设置 PI_COURSE_MODEL、加 --model，或取消 PI_COURSE_BASE_URL 改用本地 provider）"
    )


def _say(line: str) -> None:
    print(line, file=sys.stderr)


# --- chat -------------------------------------------------------------------------------------------


def _chat_command(commands: _Commands) -> None:
    chat = commands.add_parser(
        "chat",
        help="让模型流式回答一轮，打印每一个事件",
        description="让模型流式回答一轮，打印每一个事件。设置了 PI_COURSE_BASE_URL 时用它和 "
        "PI_COURSE_MODEL、PI_COURSE_API_KEY，否则用本地 provider。",
    )
    chat.add_argument("prompt", nargs="+", metavar="PROMPT", help="提示词；几个词合成一句（读取 README.md）")
    chat.add_argument("--model", help=_model_help())
    chat.set_defaults(run=_run_chat)


def _lesson_broken() -> bool:
    """chat and serve run the lesson in this process: a lesson module that does not import is one line."""
    broken = lesson_imported()
    if broken is not None:
        _say(broken)
    return broken is not None


def _run_chat(args: argparse.Namespace) -> int:
    if _lesson_broken():
        return EXIT_FAILED
    try:
        return asyncio.run(chat(" ".join(args.prompt), args.model))
    except KeyboardInterrupt:
        _say("chat 已中断（Ctrl-C）。")
        return EXIT_INTERRUPTED


# --- serve ------------------------------------------------------------------------------------------


def _serve_command(commands: _Commands) -> None:
    serve = commands.add_parser(
        "serve",
        help="运行脚本化的 OpenAI 兼容 provider",
        description="运行脚本化的 OpenAI 兼容 provider（离线）。",
    )
    serve.add_argument("--host", default="127.0.0.1", help="监听的地址（默认只在本机回环地址）")
    serve.add_argument("--port", type=_port, default=DEFAULT_PORT, help=f"1-65535（默认 {DEFAULT_PORT}）")
    serve.add_argument(
        "--api-key",
        metavar="KEY",
        help="别的 Bearer key 一律回答 401 invalid_api_key（默认不检查）",
    )
    serve.set_defaults(run=_run_serve)


def _run_serve(args: argparse.Namespace) -> int:
    if _lesson_broken():
        return EXIT_FAILED
    try:
        return _serve(args.host, args.port, args.api_key)
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED


def _serve(host: str, port: int, api_key: str | None = None) -> int:
    try:
        from ..provider.server import serve as run_server
    except ImportError as error:
        missing = isinstance(error, ModuleNotFoundError) and missing_server(error)
        _say(missing or before_51(error) or f"serve 无法导入本地 provider：{error}")
        return 1
    try:
        with socket.create_server((host, port)):
            pass  # only to turn a busy port or a bad host into one line before uvicorn starts
    except OSError as error:
        reason = said_reason(error)
        _say(f"无法在 {host}:{port} 上启动本地 provider：{reason}。换一个端口（--port）或地址（--host）。")
        return 1
    checked = "别的 Bearer key 一律回答 401" if api_key else "不检查 API key"
    print(f"pi_course 本地 provider：http://{host}:{port}/v1（{checked}；Ctrl-C 停止）", flush=True)
    run_server(host, port, api_key)
    print("pi_course 本地 provider 已停止。", flush=True)
    return 0


# --- practice ---------------------------------------------------------------------------------------


def _practice_command(commands: _Commands) -> None:
    practice = commands.add_parser(
        "practice", help="创建一份停在本章起点的练习副本", description="创建一份停在本章起点的练习副本。"
    )
    practice.add_argument("chapter", choices=["05"], metavar="05", help="章节（只有 05）")
    practice.add_argument("directory", metavar="DIR", help="一个新的（或空的）文件夹")
    practice.add_argument(
        "--points",
        metavar="SPEC",
        help="GitHub Classroom 工作流里每项测试的分值：5.1=1,5.2=3,…（和 grade 的一样）",
    )
    practice.set_defaults(run=_run_practice)


def _run_practice(args: argparse.Namespace) -> int:
    from .copies.points import GradebookError, parse_points
    from .copies.practice import create_practice, next_steps, python_problem
    from .copies.starters import PracticeError

    problem = python_problem()
    if problem is not None:
        _say(problem)
        return EXIT_USAGE
    try:
        target = create_practice(args.directory, parse_points(args.points) if args.points else None)
    except (PracticeError, GradebookError) as error:
        _say(str(error))
        return EXIT_USAGE
    except KeyboardInterrupt:
        _say("practice 已中断（Ctrl-C），没有留下半成品目录。")
        return EXIT_INTERRUPTED
    print(next_steps(target))
    return EXIT_DONE


# --- check -------------------------------------------------------------------------------------------


class _Once(argparse.Action):
    """An option that may be given once: ``check --path a --path b`` is an error, not the last one."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[object] | None,
        option_string: str | None = None,
    ) -> None:
        if getattr(namespace, self.dest, None) is not None:
            parser.error(
                f"{option_string} 只能给一次（收到 {getattr(namespace, self.dest)} 和 {values}）；"
                "要一次检查多份练习副本，用 python -m pi_course grade 05 PATH..."
            )
        setattr(namespace, self.dest, values)


def _check_command(commands: _Commands) -> None:
    check = commands.add_parser(
        "check",
        help="运行聚焦测试和本章之外的检查；最后一行是结论",
        description="运行练习副本的聚焦测试和本章之外的检查；最后一行是结论。",
    )
    check.add_argument("chapter", choices=["05"], metavar="05", help="章节（只有 05）")
    check.add_argument("--step", choices=STEP_NUMBERS, help="只检查这一步（连同它之前的各步）")
    which = check.add_mutually_exclusive_group()
    which.add_argument(
        "--path",
        action=_Once,
        help="练习副本，或副本里的一个文件夹（默认：当前文件夹所在的副本）",
    )
    which.add_argument("--reference", action="store_true", help="检查安装的参考实现，而不是练习副本")
    check.add_argument("-v", "--verbose", action="store_true", help="同时打印 pytest 的完整报告")
    check.add_argument("--course-only", action="store_true", help="只跑 11 项聚焦测试，不跑本章之外的检查")
    check.add_argument(
        "--json",
        action="store_true",
        help="标准输出上只打印这份副本的记录（JSON，一行）；文字报告写到标准错误",
    )
    check.add_argument("--rules", action="store_true", help="本章规则表：这份副本每条规则 ✓ / ✗ / 待完成")
    check.add_argument(
        "--sandbox", choices=SANDBOX_CHOICES, default="auto",
        help="和 --path 一起用：副本的代码在哪里运行（默认 auto：装了 bubblewrap 就用它）",
    )  # fmt: skip
    check.add_argument("--assembled", action="store_true", help=argparse.SUPPRESS)  # grade's own call
    check.set_defaults(run=_run_check, validate=_check_options)


def _check_options(args: argparse.Namespace, check: argparse.ArgumentParser) -> None:
    """Options that do not go together: a one-line usage error."""
    if args.json and (args.step or args.course_only or args.verbose):
        check.error("--json 给出整章的记录：不能和 --step、--course-only 或 -v 一起用")
    if args.rules and (args.step or args.course_only):
        check.error("--rules 检查整章的规则：不能和 --step 或 --course-only 一起用")


def _run_check(args: argparse.Namespace) -> int:
    from .check import check_command
    from .checker.request import CheckRequest

    request = CheckRequest(
        step=args.step,
        path=args.path,
        reference=args.reference,
        course_only=args.course_only,
        verbose=args.verbose,
        as_json=args.json,
        rules=args.rules,
        sandbox=args.sandbox,
        assembled=args.assembled,
    )
    return check_command(request)


# --- checkpoint --------------------------------------------------------------------------------------


def _checkpoint_command(commands: _Commands) -> None:
    checkpoint = commands.add_parser(
        "checkpoint", help="第 05 章的起点和终点", description="第 05 章的起点、终点、教学文件与命令。"
    )
    checkpoint.add_argument("chapter", choices=["05"], metavar="05", help="章节（只有 05）")
    checkpoint.add_argument(
        "--diff", action="store_true", help="打印 target diff：起点（starter）→ 终点（target）"
    )
    checkpoint.add_argument("--mine", action="store_true", help="和 --diff 一起用：从你现在的文件到 target")
    checkpoint.set_defaults(run=_run_checkpoint)


def _run_checkpoint(args: argparse.Namespace) -> int:
    from .copies.checkpoint import checkpoint_command

    return checkpoint_command(args.diff, args.mine)


# --- grade -------------------------------------------------------------------------------------------


def _grade_command(commands: _Commands) -> None:
    from .checker.copyrun import DEFAULT_TIMEOUT  # the grade command's own default, read here

    grade = commands.add_parser(
        "grade",
        help="并行检查全班的练习副本（文件夹、装着副本的文件夹、.zip/.tar.gz）",
        description="检查每一份练习副本：用你安装的课程自带的测试测它的课程文件，每份在 bubblewrap 沙箱里"
        "（没有网络，看不到你的文件和进程）、有时间上限。打印一张表（未完成的在前），写出要求的文件。",
    )
    grade.add_argument("chapter", choices=["05"], metavar="05", help="章节（只有 05）")
    grade.add_argument(
        "paths", nargs="+", metavar="PATH", help="一份副本、装着副本的文件夹，或一份副本的 .zip/.tar.gz"
    )
    grade.add_argument("--json", dest="json_file", metavar="F", help="把记录写成一个 JSON 列表")
    grade.add_argument("--csv", dest="csv_file", metavar="F", help="每份副本一行的成绩表（CSV）")
    grade.add_argument("--html", dest="html_file", metavar="F", help="一个自包含的 HTML 页面：全班一览")
    grade.add_argument("--jobs", type=_positive(int), metavar="N", help="同时检查几份（默认：CPU 核数）")
    grade.add_argument(
        "--timeout",
        type=_positive(float),
        default=DEFAULT_TIMEOUT,
        metavar="S",
        help=f"每份副本最多几秒（默认 {DEFAULT_TIMEOUT:g}）",
    )
    grade.add_argument(
        "--sandbox", choices=SANDBOX_CHOICES, default="auto",
        help="auto（默认）：装了 bubblewrap 就用，否则醒目地标出 not-sandboxed；"
        "bwrap：没有它就拒绝评分；none：只清理环境变量、限制时间",
    )  # fmt: skip
    grade.add_argument(
        "--points",
        metavar="SPEC",
        help="每一步每项聚焦测试的分值：5.1=1,5.2=3,…，或一个 TOML 文件",
    )
    grade.add_argument(
        "--roster", metavar="CSV", help="文件夹名或 GitHub 用户名 → 学号和姓名（student_id、name）"
    )
    grade.set_defaults(run=_run_grade)


def _run_grade(args: argparse.Namespace) -> int:
    from .grade.command import run as run_grade

    try:
        return run_grade(
            args.paths, json_file=args.json_file, csv_file=args.csv_file, html_file=args.html_file,
            jobs=args.jobs, timeout=args.timeout, sandbox=args.sandbox, points=args.points,
            roster=args.roster,
        )  # fmt: skip
    except KeyboardInterrupt:
        _say("grade 已中断（Ctrl-C），没有留下检查进程。")
        return EXIT_INTERRUPTED


# --- the commands together ---------------------------------------------------------------------------

COMMANDS = (
    _serve_command,
    _chat_command,
    _practice_command,
    _check_command,
    _checkpoint_command,
    _grade_command,
)


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; output into a pipe that closed early (``check 05 --rules | head``) is no error."""
    try:
        return _main(argv)
    except BrokenPipeError:
        # The reader is gone: say nothing more, and let the interpreter's final flush find /dev/null.
        devnull = os.open(os.devnull, os.O_WRONLY)
        with contextlib.suppress(OSError, ValueError):  # a stdout with no file descriptor
            os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return EXIT_FAILED


def _main(argv: Sequence[str] | None = None) -> int:
    parser = _CourseParser(prog="python -m pi_course", description=DESCRIPTION)
    commands = parser.add_subparsers(
        dest="command", required=True, title="命令", metavar="COMMAND", parser_class=_CourseParser
    )
    for add in COMMANDS:
        add(commands)
    try:
        args, extra = parser.parse_known_args(argv)
        command = commands.choices[args.command]
        if extra:  # named by the subcommand that did not take them, with its own --help
            command.error(f"unrecognized arguments: {' '.join(extra)}")  # said in Chinese by .parser
        if hasattr(args, "validate"):
            args.validate(args, command)
    except SystemExit as stop:  # --help, or a one-line usage error already printed
        return stop.code if isinstance(stop.code, int) else EXIT_USAGE
    run: Callable[[argparse.Namespace], int] = args.run
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
