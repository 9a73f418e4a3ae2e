"""A learner who writes only what the chapter names still gets the reference's 05-7.

``learners/cai`` holds no rule the chapter does not teach: no in-stream ``error`` payloads, no
choice index, no refusals, no ``strict`` flag, ``[DONE]`` compared exactly. The given reading
around the lab (``pi_course/payload_reading.py``) must make up the difference, so that in a practice copy
with cai's solution, every recording 05-7 reads ends the way ``index.json`` says for the
reference, in both modes (the wording of a rejection aside: the learner words it, the field it
names must be the same).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from learners import apply

from pi_course.course.copies.practice import create_practice

ROOT = Path(__file__).parents[2]
INDEX = json.loads(
    (ROOT / "pi_course" / "provider" / "recordings" / "index.json").read_text(encoding="utf-8")
)

# Run inside the copy: 05-7's read() (the embedded provider replays recorded/<name>), every
# recording, both modes; the outcome in the index's shape.
READ_EVERY_RECORDING = r"""
import asyncio, json, re
from pi_course import AgentContext, TextContent, ToolCall, user_message
from pi_course.provider.connect import local_model
from pi_course.provider.server import recordings_index

def outcome(message):
    text = "".join(b.text for b in message.content if isinstance(b, TextContent))
    usage = {"input": message.usage.input, "output": message.usage.output,
             "total_tokens": message.usage.total_tokens}
    if message.stop_reason in ("stop", "length", "toolUse"):
        calls = [{"id": c.id, "name": c.name, "arguments": c.raw_arguments}
                 for c in message.content if isinstance(c, ToolCall)]
        return {"outcome": "accepted", "stop_reason": message.stop_reason, "text": text,
                "tool_calls": calls, "usage": usage}
    named = re.match(r"Invalid provider chunk: (\S+)", message.error_message or "")
    result = {"outcome": "rejected" if named else "error", "partial_text": text, "usage": usage}
    if named:
        result["field"] = named.group(1)
    return result

async def main():
    seen = {}
    for name in recordings_index():
        for mode, strict in (("strict", True), ("non_strict", False)):
            model = local_model(f"recorded/{name}", strict=strict)
            stream = model.stream(AgentContext((user_message("x"),)))
            seen[f"{name} {mode}"] = outcome(await stream.result())
            await model.transport.aclose()
    print(json.dumps(seen))

asyncio.run(main())
"""


def expected_outcomes() -> dict[str, dict[str, Any]]:
    expected = {}
    for entry in INDEX["recordings"]:
        for mode, outcome in entry["expected"].items():
            expected[f"{entry['name']} {mode}"] = {
                key: value for key, value in outcome.items() if key not in ("error", "rule")
            }
    return expected


@pytest.fixture(scope="module")
def chapter_only_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # What `practice 05` makes, made in this process (test_practice runs the command itself).
    copy = create_practice(tmp_path_factory.mktemp("chapter-only") / "lab")
    apply(copy, "cai")
    return copy


@pytest.mark.slow
def test_the_chapter_only_learner_passes_the_course(chapter_only_copy: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "pi_course", "check", "05"],
        cwd=chapter_only_copy, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert "第 05 章聚焦测试：11/11" in result.stdout


@pytest.mark.slow
def test_the_chapter_only_learner_reads_every_recording_as_the_reference(chapter_only_copy: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-c", READ_EVERY_RECORDING],
        cwd=chapter_only_copy, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    seen = json.loads(result.stdout)
    expected = expected_outcomes()
    assert set(seen) == set(expected)
    differing = {key: (seen[key], expected[key]) for key in expected if seen[key] != expected[key]}
    assert not differing, json.dumps(differing, ensure_ascii=False, indent=1)
