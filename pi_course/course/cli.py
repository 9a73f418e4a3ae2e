"""``python -m pi_course``: serve the local provider, chat with a model, practise and check."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence

from ..notebook.display import describe_event


async def _chat(prompt: str, model_name: str | None) -> int:
    from ..provider.connect import connect
    from ..types import AgentContext, user_message
    from .fixtures import READ_TOOL

    model = connect(model_name)
    context = AgentContext(messages=(user_message(prompt),), tools=(READ_TOOL,))
    try:
        async for event in model.stream(context):
            print(describe_event(event), flush=True)
            if event.type == "error":
                return 1
    finally:
        await model.transport.aclose()  # type: ignore[attr-defined]
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pi_course", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", help="run the scripted OpenAI-compatible provider")
    serve.add_argument("--host", default="127.0.0.1", help="interface (default: loopback only)")
    serve.add_argument("--port", type=int, default=8765)

    chat = commands.add_parser("chat", help="stream one model turn and print every event")
    chat.add_argument("prompt")
    chat.add_argument("--model", help="script name or PI_COURSE_MODEL (default: mainline)")

    practice = commands.add_parser("practice", help="create a practice copy at the chapter's start")
    practice.add_argument("chapter", choices=["05"])
    practice.add_argument("directory")

    check = commands.add_parser("check", help="run the focused tests, one line per practice step")
    check.add_argument("chapter", choices=["05"])
    check.add_argument("--step", choices=["5.1", "5.2", "5.3", "5.4"])
    check.add_argument("--path", help="a practice copy (default: this pi_course)")
    check.add_argument("-v", "--verbose", action="store_true", help="print pytest's full report too")
    check.add_argument(
        "--course-only", action="store_true", help="the 11 focused tests alone, without the beyond checks"
    )

    checkpoint = commands.add_parser("checkpoint", help="where chapter 05 starts and ends")
    checkpoint.add_argument("chapter", choices=["05"])
    checkpoint.add_argument("--diff", action="store_true", help="print the starter → target diff")

    args = parser.parse_args(argv)
    if args.command == "serve":
        from ..provider.server import serve as run_server

        print(f"pi_course local provider on http://{args.host}:{args.port}/v1 (Ctrl-C stops it)")
        run_server(args.host, args.port)
        return 0
    if args.command == "chat":
        return asyncio.run(_chat(args.prompt, args.model))
    if args.command == "practice":
        from .practice import PracticeError, create_practice

        try:
            target = create_practice(args.directory)
        except PracticeError as error:
            print(error, file=sys.stderr)
            return 2
        print(f"练习目录已创建：{target}")
        print(f"下一步：cd {target} && python -m pi_course check 05（先看第一次红灯），再读 LEARNING.md")
        return 0
    if args.command == "check":
        from .checkpoint import check as run_check

        try:
            beyond = args.step is None and not args.course_only
            return 0 if run_check(args.step, args.path, beyond=beyond, verbose=args.verbose) else 1
        except KeyboardInterrupt:
            print("check 已中断（Ctrl-C）。", file=sys.stderr)
            return 130
    if args.command == "checkpoint":
        from .practice import target_diff

        print(target_diff() if args.diff else CHECKPOINT_05, end="")
        return 0
    parser.error(f"unknown command {args.command}")
    return 2


CHECKPOINT_05 = """Checkpoint 05 · 接入 OpenAI-compatible Provider
起点（parent）：第 04 章完成。`python -m pi_course practice 05 DIR` 生成这个起点：
  没有 ToolDefinition，AgentContext 没有 tools，第 05 章的函数都是桩。
终点（target）：11 项聚焦测试全部通过（1 + 3 + 5 + 2）。
教学文件：
  pi_course/types.py      5.1  ToolDefinition、AgentContext.tools
  pi_course/outbound.py   5.1  to_provider_messages()、to_provider_tools()
  pi_course/adapter.py    5.2  fixed_transport()、OpenAICompatibleModel.stream()
  pi_course/sse.py        5.3  SSEDecoder、parse_payload()、iter_provider_chunks()
  pi_course/http.py       5.3  读取响应与取消；5.4  请求形状与密钥脱敏
聚焦测试：tests/test_05_provider_adapter.py
命令：
  python -m pi_course practice 05 DIR        创建练习目录
  python -m pi_course check 05 [--step 5.x]  [--path DIR]  逐步检查
  python -m pytest tests/test_05_provider_adapter.py -k outbound   直接运行一步的聚焦测试
  python -m pytest --nbval-lax notebooks/    讲师检查学习者的笔记本
  python -m pi_course checkpoint 05 --diff   target diff（先别看）
"""


if __name__ == "__main__":
    sys.exit(main())
