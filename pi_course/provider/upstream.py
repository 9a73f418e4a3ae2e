"""Upstream Pi beside the course: pi-ai's reading of every recording, stored, and where it differs.

``tools/upstream_pi`` replays each recording through pi-ai's ``openai-completions`` provider (a
pinned npm version, under node) and stores what it read in ``upstream_pi.json``. Here that reading
is set beside ``connect()``'s (the ``strict=False`` expectation in ``recordings/index.json``); the
index's ``upstream_pi`` note says, for each difference, why (the spec or the stream's own evidence).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib.resources import files
from typing import Any

from .corpus import Entry, load_index

COMPARED = ("stop_reason", "text", "tool_calls", "usage")  # what a final message is made of
FIELD_ZH = {"stop_reason": "结束", "text": "文本", "tool_calls": "工具", "usage": "usage"}


def load_upstream() -> dict[str, Any]:
    """``upstream_pi.json``: the pi-ai version and its reading of each recording, by name."""
    stored: dict[str, Any] = json.loads((files(__package__) / "upstream_pi.json").read_text(encoding="utf-8"))
    return stored


def _arguments(raw: str) -> object:
    try:
        return json.loads(raw) if raw else {}
    except ValueError:
        return raw


def course_reading(entry: Entry) -> dict[str, Any]:
    """``connect()``'s reading of one recording, in the fields both readers produce."""
    expected = entry["expected"]["non_strict"]
    accepted = expected["outcome"] == "accepted"
    return {
        "stop_reason": expected["stop_reason"] if accepted else "error",
        "text": expected["text"] if accepted else expected["partial_text"],
        "tool_calls": [
            {"id": c["id"], "name": c["name"], "arguments": _arguments(c["arguments"])}
            for c in expected.get("tool_calls", [])
        ],
        "usage": expected["usage"],
        "error": "" if accepted else expected["error"],
    }


def pi_reading(reading: dict[str, Any]) -> dict[str, Any]:
    """pi-ai's stored reading in the same fields (its tool arguments are an object already)."""
    return {
        "stop_reason": reading["stop_reason"],
        "text": reading["text"],
        "tool_calls": [
            {"id": c["id"], "name": c["name"], "arguments": _arguments(c["arguments"])}
            for c in reading["tool_calls"]
        ],
        "usage": {key: reading["usage"][key] for key in ("input", "output", "total_tokens")},
        "cache_read": reading["usage"].get("cache_read", 0),  # pi-ai counts cache hits apart from input
        "error": reading.get("error", ""),
    }


@dataclass(frozen=True)
class Row:
    """One recording: both readings, the fields where they differ, and why (the index's note)."""

    name: str
    course: dict[str, Any]
    pi: dict[str, Any]
    thinking: str  # the reasoning pi-ai kept in its message ("" when the stream carried none)
    differs: tuple[str, ...]
    why: str
    openai_client: str


def compare(index: dict[str, Any] | None = None, upstream: dict[str, Any] | None = None) -> list[Row]:
    """Every recording's row, in the index's order."""
    index = index or load_index()
    upstream = upstream or load_upstream()
    rows = []
    for entry in index["recordings"]:
        stored = upstream["readings"][entry["name"]]
        course, pi = course_reading(entry), pi_reading(stored)
        differs = tuple(field for field in COMPARED if course[field] != pi[field])
        rows.append(
            Row(entry["name"], course, pi, stored.get("thinking", ""), differs,
                entry.get("upstream_pi", "agrees"), entry["openai_client"])
        )  # fmt: skip
    return rows


def verdict(reading: dict[str, Any]) -> str:
    """``stop`` · ``toolUse ×2`` · ``error`` with the text kept: one short cell."""
    calls = f" ×{len(reading['tool_calls'])}" if reading["tool_calls"] else ""
    text = reading["text"]
    shown = (text[:24] + "…") if len(text) > 25 else text
    usage = reading["usage"]
    cached = f" (+{reading['cache_read']} cached)" if reading.get("cache_read") else ""
    return (
        f"{reading['stop_reason']}{calls} {json.dumps(shown, ensure_ascii=False)} "
        f"usage {usage['input']}/{usage['output']}/{usage['total_tokens']}{cached}"
    )


def markdown_table(rows: list[Row] | None = None) -> str:
    """docs/real-providers.md's table: every recording, both readings, and why they differ."""
    rows = rows if rows is not None else compare()
    lines = [
        "| recording | course (`connect()`) | upstream Pi (pi-ai) | differs in | why | openai-python |",
        "|---|---|---|---|---|---|",
    ]
    for row in rows:
        differs = ", ".join(row.differs) or "—"
        why = row.why if row.differs else ("—" if row.why == "agrees" else row.why)
        oracle = "agrees" if row.openai_client == "agrees" else row.openai_client
        lines.append(
            f"| `{row.name}` | {_cell(verdict(row.course))} | {_cell(verdict(row.pi))} | {differs} "
            f"| {_cell(why)} | {_cell(oracle)} |"
        )
    return "\n".join(lines)


def _cell(text: str) -> str:
    """Text for one Markdown table cell: no line break, no column bar, no HTML tag (``<tool_call>``)."""
    return text.replace("|", "\\|").replace("\n", " ").replace("<", "&lt;").replace(">", "&gt;")


# --- 05-7: one table in Chinese -------------------------------------------------------------------


def _zh_verdict(message: Any) -> str:
    """One reader's result, one short cell: ``读出 stop``, ``拒绝 `字段```, ``error``."""
    if message.stop_reason != "error":
        return f"读出 {message.stop_reason}"
    error = message.error_message or ""
    if error.startswith("Invalid provider chunk: "):  # the field's last name; error_texts() has it all
        return f"拒绝\u00a0`{error.split()[3].split('.')[-1]}`"  # no break inside the cell
    return "error"


def _zh_pi(row: Row) -> str:
    if not row.differs:
        return "同"
    return "≠\u00a0" + "、".join(FIELD_ZH[field] for field in row.differs)


def reading_table(
    strict: dict[str, Any], lenient: dict[str, Any], index: dict[str, Any] | None = None
) -> str:
    """05-7's summary (Markdown): per recording, both readings of the course, upstream Pi's, one line.

    ``strict`` and ``lenient`` map each recording to the ``AssistantMessage`` the notebook just read.
    """
    index = index or load_index()
    rows = {row.name: row for row in compare(index)}
    lines = [
        "| 录音 | 本章 reader | `connect()` | 上游 Pi | 一句话，或本章 reader 报错时章节里的规则 |",
        "|---|---|---|---|---|",
    ]
    for entry in index["recordings"]:
        name = entry["name"]
        rule = entry["expected"]["strict"].get("rule")
        line = f"「{rule}」" if strict[name].stop_reason == "error" and rule else entry["zh"]
        ours, theirs = _zh_verdict(strict[name]), _zh_verdict(lenient[name])
        lines.append(
            f"| `{name}` | {ours} | {'同' if theirs == ours else theirs} "
            f"| {_zh_pi(rows[name])} | {_cell(line)} |"
        )
    return "\n".join(lines)


def error_texts(strict: dict[str, Any], lenient: dict[str, Any]) -> str:
    """The English error texts of the table's error rows, folded (HTML ``<details>``)."""
    items = []
    for name, message in strict.items():
        if message.stop_reason != "error":
            continue
        texts = [f"strict: {message.error_message}"]
        if lenient[name].error_message != message.error_message:
            texts.append(f"connect(): {lenient[name].error_message or '(读出，没有错误)'}")
        shown = "<br>".join(_html(text) for text in texts)
        items.append(f"<li><code>{name}</code><br>{shown}</li>")
    return f"<details><summary>英文错误原文（{len(items)} 条）</summary><ul>{''.join(items)}</ul></details>"


def _html(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def upstream_summary(rows: list[Row] | None = None, index: dict[str, Any] | None = None) -> str:
    """05-7's comparison with upstream Pi (Markdown, Chinese): the differences, each with why."""
    rows = rows if rows is not None else compare(index)
    entries = {e["name"]: e for e in (index or load_index())["recordings"]}
    same = [row.name for row in rows if not row.differs]
    differ = [row for row in rows if row.differs]
    version = load_upstream()["pi_ai"]
    lines = [
        f"pi-ai {version}（上游 Pi 的 `openai-completions` provider）读 {len(rows)} 条录音："
        f"{len(same)} 条和 `connect()` 的最终消息相同（结束原因、文本、工具调用、usage），"
        f"{len(differ)} 条不同：",
        "",
        "| 录音 | `connect()` | 上游 Pi | 为什么不同 | openai-python |",
        "|---|---|---|---|---|",
    ]
    for row in differ:
        entry = entries[row.name]
        oracle = entry.get("openai_client_zh") or (
            "同 `connect()`" if row.openai_client == "agrees" else row.openai_client
        )
        lines.append(
            f"| `{row.name}` | {_cell(verdict(row.course))} | {_cell(verdict(row.pi))} "
            f"| {_cell(entry['upstream_pi_zh'])} | {_cell(oracle)} |"
        )
    return "\n".join(lines)


def write_docs_table(docs: str) -> str:
    """``docs`` (docs/real-providers.md's text) with its table, the last block, rendered anew."""
    start = docs.index("| recording | course (`connect()`)")
    return docs[:start] + markdown_table() + "\n"


if __name__ == "__main__":  # python -m pi_course.provider.upstream: refresh docs/real-providers.md
    from pathlib import Path

    path = Path(__file__).parents[2] / "docs" / "real-providers.md"
    path.write_text(write_docs_table(path.read_text(encoding="utf-8")), encoding="utf-8")
