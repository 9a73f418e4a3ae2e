"""What the recorded corpus is, said once: each stream's label and 05-7's summary.

Both are rendered from ``recordings/index.json``, so their claims can never say more than the
labels there (a documentation sample is not a capture, a trimmed stream not the whole body, a
hand-written fixture no provider's behaviour). ``tests/integration/test_corpus.py`` checks that
05-7's stored output is what :func:`summary` renders now, and renders docs/real-providers.md's
provider table from the same index.
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


def _kinds(entries: list[Entry]) -> str:
    counts = Counter(entry["kind"] for entry in entries)
    return "、".join(
        f"{counts[kind]} 条{' ' * KIND_ZH[kind][0].isascii()}{KIND_ZH[kind]}"
        for kind in KINDS
        if counts[kind]
    )


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
        f"  其中 {_kinds(recordings)}；{trimmed} 条被截短"
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
