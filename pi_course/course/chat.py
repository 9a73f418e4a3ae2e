"""``python -m pi_course chat``: one model turn streamed through the lesson, every event printed.

The command line (:mod:`.cli`) parses the arguments and calls :func:`chat`; what a learner can get
wrong on the way (an unfinished step, a model the provider does not have, a missing server
dependency) is one line on stderr.
"""

from __future__ import annotations

import logging
import os
import re
import sys

from .exits import EXIT_USAGE


def say(line: str) -> None:
    print(line, file=sys.stderr)


def before_51(error: ImportError) -> str | None:
    """The one line for a practice copy whose ``ToolDefinition`` (practice 5.1) is not there yet."""
    if "ToolDefinition" not in str(error):
        return None
    return (
        "这个命令要用到 ToolDefinition，而这份 pi_course 还没有它：先完成实践 5.1"
        "（python -m pi_course check 05 --step 5.1），再运行。"
    )


def missing_server(error: ModuleNotFoundError) -> str | None:
    if error.name not in ("uvicorn", "starlette"):
        return None
    return (
        f'本地 provider 需要 {error.name}，但它没有安装：在课程仓库里运行 make lab 或 pip install ".[lab]"。'
    )


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


class _PrintedRecord(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        print(record.getMessage(), flush=True)
        for line in getattr(getattr(record, "set_aside", None), "shown", list)():  # reasoning's text
            print(line, flush=True)


def _print_reader_log() -> None:
    """Print the reader's INFO records (pi_course.reading: fields it ignored, with their sizes)."""
    reader_log = logging.getLogger("pi_course.reading")
    if not any(isinstance(handler, _PrintedRecord) for handler in reader_log.handlers):
        reader_log.addHandler(_PrintedRecord(logging.INFO))
    reader_log.setLevel(logging.INFO)


async def chat(prompt: str, model_name: str | None) -> int:
    try:
        from ..chapter.fixtures import READ_TOOL
        from ..provider.connect import ConfigurationError, connect, not_found_hint
        from .describe import describe_event
    except ImportError as error:
        say(before_51(error) or f"chat 无法导入 pi_course：{error}")
        return 1
    from ..protocol import AgentContext, user_message

    try:
        model = connect(model_name)
    except ConfigurationError as error:
        say(str(error))
        return EXIT_USAGE
    except ModuleNotFoundError as error:
        say(missing_server(error) or f"chat 缺少依赖：{error}")
        return 1
    context = AgentContext(messages=(user_message(prompt),), tools=(READ_TOOL,))
    base_url = os.environ.get("PI_COURSE_BASE_URL")
    _print_reader_log()  # what the reader ignored (reasoning, citations): one line per stream
    held = None  # `start`, printed with the next event: an unknown model is then one line alone
    try:
        async for event in model.stream(context):
            if event.type == "start" and held is None:
                held = event
                continue
            if event.type == "error":
                unknown = unknown_model_line(event.error.error_message, model.model, base_url)
                if unknown is not None:
                    say(unknown)
                    return EXIT_USAGE
            if held is not None:
                print(describe_event(held), flush=True)
                held = None
            print(describe_event(event), flush=True)
            if event.type == "error":
                hint = not_found_hint(event.error.error_message, base_url)
                if hint:
                    say(hint)
                return 1
    except NotImplementedError as error:
        say(f"chat 还不能运行：{error}。先完成这一步（python -m pi_course check 05），再运行 chat。")
        return 1
    except Exception as error:  # the learner's code failed outside the stream's own error handling
        say(f"chat 失败：{type(error).__name__}: {error}（python -m pi_course check 05 会指出是哪一步）")
        return 1
    finally:
        await model.transport.aclose()  # type: ignore[attr-defined]
    return 0
