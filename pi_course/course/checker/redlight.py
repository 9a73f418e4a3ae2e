"""The red light: does the tree's ``pi_course`` import, and does it have practice 5.1's two types?

It runs before any test, in a process of its own (in a browser: in the kernel). Its answer goes to a
file the runner names in :data:`ANSWER_VARIABLE`, never to stdout: a learner's module that prints
while it is imported can never be taken for the answer, and what it printed is kept as the run's
output. The runner waits for the process, not for its output, so a child the learner's code leaves
running (holding stdout open) cannot stall ``check``.
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path

from ..edition import CHECK_COMMAND
from ..running import inkernel
from .facts import Report
from .import_failure import IMPORT_BOUND, import_failure_from_text

ANSWER_VARIABLE = "PI_COURSE_RED_LIGHT_ANSWER"  # the file the script writes its answer to (JSON)
SCRIPT = f"""
import dataclasses, json, os
answer = os.environ.pop({ANSWER_VARIABLE!r})  # the learner's code never sees where the answer goes
from pi_course import *  # every lesson module the facade exports, as the tests import them
import pi_course
missing = []
if not hasattr(pi_course, "ToolDefinition"):
    missing.append("pi_course 没有导出 ToolDefinition")
if "tools" not in {{f.name for f in dataclasses.fields(pi_course.AgentContext)}}:
    missing.append("AgentContext 没有 tools 字段")
with open(answer, "w", encoding="utf-8") as file:
    json.dump(missing, file, ensure_ascii=False)
"""


def red_light(root: Path, env: Mapping[str, str]) -> Report | None:
    """Import the tree's ``pi_course`` alone: a red light before any test runs, else ``None``."""
    with tempfile.TemporaryDirectory() as scratch:
        answer = Path(scratch) / "answer.json"
        env = {**env, ANSWER_VARIABLE: str(answer)}
        status, stdout, stderr = inkernel.run_python([sys.executable, "-c", SCRIPT], root, env, IMPORT_BOUND)
        if status is None:
            return Report({}, _stuck_line(), import_error=True, timed_out=True, output=stdout + stderr)
        said = answer.read_text(encoding="utf-8") if answer.is_file() else None
    return red_light_of(status, said, stdout, stderr, root)


def red_light_of(status: int, answer: str | None, stdout: str, stderr: str, root: Path) -> Report | None:
    """The red light from the script's exit status and answer; what the import printed is the output."""
    output = (stdout + stderr).strip()
    if status != 0:
        return Report({}, import_failure_from_text(stderr, root), import_error=True, output=output)
    if answer is None:
        line = (
            "import pi_course 没有做完就退出了（某个模块在导入时结束了进程，例如调用了 sys.exit()）。"
            f"下一步：看各个模块顶层（函数之外）的代码，再运行 {CHECK_COMMAND}。"
        )
        return Report({}, line, import_error=True, output=output)
    missing = json.loads(answer)
    if missing:
        return Report({}, f"第一次红灯：{'；'.join(missing)}。先完成实践 5.1 的两个类型。", output=output)
    return None


def _stuck_line() -> str:
    return (
        f"import pi_course 超过 {IMPORT_BOUND:g} 秒没有结束，已被停止：某个模块在导入时进入了"
        "不会结束的循环（或在等待）。下一步：看各个模块顶层（函数之外）的代码，"
        f"再运行 {CHECK_COMMAND}。"
    )
