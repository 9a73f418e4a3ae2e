"""What the recorded corpus is, said once: docs/real-providers.md's provider table and 05-7's summary.

Both are rendered from ``recordings/index.json``, so their claims can never say more than the
labels there (a documentation sample is not a capture, a trimmed stream not the whole body, a
hand-written fixture no provider's behaviour). ``tests/integration/test_corpus.py`` checks that
docs/real-providers.md and 05-7's stored output are exactly what these functions render now.
"""

from __future__ import annotations

import json
from collections import Counter
from importlib.resources import files
from typing import Any

Entry = dict[str, Any]

KINDS = ("sdk-capture", "documentation-sample", "third-party", "hand-written-fixture", "derived")
KIND_EN = {
    "sdk-capture": "SDK test-suite capture",
    "documentation-sample": "documentation sample",
    "third-party": "third party's log or capture",
    "hand-written-fixture": "hand-written fixture",
    "derived": "derived",
}
KIND_ZH = {
    "sdk-capture": "SDK 测试录制",
    "documentation-sample": "文档示例",
    "third-party": "第三方日志",
    "hand-written-fixture": "手写 fixture",
    "derived": "派生",
}
TABLE_BEGIN = "<!-- BEGIN corpus table: generated from recordings/index.json by pi_course.provider.corpus -->"
TABLE_END = "<!-- END corpus table -->"


def load_index() -> dict[str, Any]:
    index: dict[str, Any] = json.loads(
        (files(__package__) / "recordings" / "index.json").read_text(encoding="utf-8")
    )
    return index


def label(entry: Entry) -> str:
    """One stream's label: ``SDK test-suite capture, re-encoded, trimmed``, ``documentation sample, …``."""
    parts = [KIND_EN[entry["kind"]]]
    if entry["kind"] != "derived":
        parts.append(entry["bytes"].split(":")[0])
    if "trimmed" in entry:
        parts.append("trimmed")
    if "elided" in entry:
        parts.append("lines elided")
    return ", ".join(parts)


def _kinds(entries: list[Entry], names: dict[str, str]) -> str:
    counts = Counter(entry["kind"] for entry in entries)
    trimmed = sum("trimmed" in entry for entry in entries)
    if names is KIND_EN:
        text = ", ".join(f"{counts[kind]}× {names[kind]}" for kind in KINDS if counts[kind])
    else:
        text = "、".join(
            f"{counts[kind]} 条{' ' * names[kind][0].isascii()}{names[kind]}"
            for kind in KINDS
            if counts[kind]
        )
    return text + (f" ({trimmed} trimmed)" if trimmed and names is KIND_EN else "")


def _outcomes(entries: list[Entry], mode: str) -> str:
    read = [e for e in entries if e["expected"][mode]["outcome"] == "accepted"]
    rejected = [e for e in entries if e["expected"][mode]["outcome"] == "rejected"]
    errors = [e for e in entries if e["expected"][mode]["outcome"] == "error"]
    parts = [f"read {len(read)}/{len(entries)}"]
    if rejected:
        fields = sorted({f"`{e['expected'][mode]['field']}`" for e in rejected})
        parts.append(f"rejected {len(rejected)} (at {', '.join(fields)})")
    if errors:
        parts.append(f"error {len(errors)} ({', '.join(e['name'] for e in errors)})")
    return "; ".join(parts)


def _by_provider(index: dict[str, Any]) -> list[tuple[Entry, list[Entry]]]:
    rows = []
    for provider in index["providers"]:
        names = provider.get("recorded_as", [provider["name"]])
        rows.append((provider, [e for e in index["recordings"] if e["provider"] in names]))
    return rows


def docs_table(index: dict[str, Any] | None = None) -> str:
    """docs/real-providers.md's block: the corpus in one sentence and the provider table."""
    index = index or load_index()
    recordings = index["recordings"]
    providers = {e["provider"] for e in recordings if e["provider"]}
    fixtures = [e["name"] for e in recordings if not e["provider"]]
    lines = [
        TABLE_BEGIN,
        "",
        f"The corpus holds {len(recordings)} streams from {len(providers)} providers and servers: "
        f"{_kinds(recordings, KIND_EN)}. `index.json` labels each one (`kind`, `bytes`, and `trimmed` or "
        "`elided` where that applies) with its source. A trimmed stream is not the whole body the provider "
        "sent; a documentation sample is not a capture; "
        + (
            f"{', '.join(f'`{n}`' for n in fixtures)} is a hand-written fixture and stands for no provider. "
            if fixtures
            else ""
        )
        + "The strict and `strict=False` columns are what `index.json` expects and "
        "`tests/integration/test_corpus.py` checks.",
        "",
        "| provider | `PI_COURSE_BASE_URL` | `PI_COURSE_MODEL` (example) | recordings | strict=True "
        "(the chapter's reader) | strict=False (`connect()`) | what the recordings show |",
        "|---|---|---|---|---|---|---|",
    ]
    for provider, entries in _by_provider(index):
        name = provider["name"]
        if "recorded_as" in provider:
            name += ": " + ", ".join(provider["recorded_as"])
        lines.append(
            f"| {name} | `{provider['base_url']}` | {provider['model']} | {len(entries)}: "
            f"{_kinds(entries, KIND_EN)} | {_outcomes(entries, 'strict')} "
            f"| {_outcomes(entries, 'non_strict')} | {provider['note']} |"
        )
    lines += ["", TABLE_END]
    return "\n".join(lines)


def docs_block(readme: str) -> str:
    """The generated block as it stands in a Markdown text (empty when the markers are missing)."""
    start, end = readme.find(TABLE_BEGIN), readme.find(TABLE_END)
    return readme[start : end + len(TABLE_END)] if 0 <= start < end else ""


def summary(index: dict[str, Any] | None = None) -> str:
    """05-7's summary of the corpus (Chinese): what the streams are, and how many per provider.

    05-7's table then lists every stream by name.
    """
    index = index or load_index()
    recordings = index["recordings"]
    providers = Counter(e["provider"] for e in recordings if e["provider"])
    trimmed = sum("trimmed" in e for e in recordings)
    lines = [
        f"语料：{len(recordings)} 条流，来自 {len(providers)} 个 Provider 或服务器",
        f"  其中 {_kinds(recordings, KIND_ZH)}；{trimmed} 条被截短"
        "（index.json 的 trimmed 写明去掉了几条 event、按什么规则）",
    ]
    lines.append("  " + "、".join(f"{provider} {count}" for provider, count in providers.items()))
    for kind in KINDS[1:]:  # the streams that are not SDK captures, by what they are
        names = [e["name"] for e in recordings if e["kind"] == kind]
        if names:
            elided = "（印出来时省略了部分行）" if kind == "documentation-sample" else ""
            lines.append(f"  {KIND_ZH[kind]}{elided}：{', '.join(names)}")
    lines.append(f"  截短：{', '.join(e['name'] for e in recordings if 'trimmed' in e)}")
    return "\n".join(lines)
