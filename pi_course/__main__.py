"""``python -m pi_course``: serve the local provider, chat with a model, practise and check."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence

from .display import describe_event


async def _chat(prompt: str, model_name: str | None) -> int:
    from .connect import connect
    from .fixtures import READ_TOOL
    from .types import AgentContext, user_message

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

    args = parser.parse_args(argv)
    if args.command == "serve":
        from .server import serve as run_server

        print(f"pi_course local provider on http://{args.host}:{args.port}/v1 (Ctrl-C stops it)")
        run_server(args.host, args.port)
        return 0
    if args.command == "chat":
        return asyncio.run(_chat(args.prompt, args.model))
    parser.error(f"unknown command {args.command}")
    return 2


if __name__ == "__main__":
    sys.exit(main())
