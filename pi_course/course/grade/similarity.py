"""Pairs of copies whose lesson code is near-identical, found by ``copydetect`` (MOSS-style winnowing).

Each copy's teaching modules are read as one text; the starter's fingerprints are boilerplate
(every copy shares them), so only what learners wrote is compared. A pair is reported when each
side's own code is mostly the other's. Similar is not copied: the report shows both side by side.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ...chapter.steps import LESSON_FILES

THRESHOLD = 0.9  # the share of each side's tokens found in the other
NOISE_K, GUARANTEE_T = 25, 30  # copydetect's defaults: k-grams of 25 tokens, matches of 30 always found


@dataclass(frozen=True)
class Pair:
    """Two copies with near-identical lesson code, and that code for a side-by-side view."""

    left: str
    right: str
    similarity: float  # the smaller of the two sides' shares
    left_code: str
    right_code: str


def lesson_code(tree: Path) -> str:
    """A copy's teaching modules as one text, each headed by its file name (missing files are empty)."""
    parts = []
    for name in LESSON_FILES:
        path = tree / "pi_course" / name
        try:
            text = path.read_text(encoding="utf-8") if path.is_file() and not path.is_symlink() else ""
        except (OSError, UnicodeDecodeError):
            text = ""
        parts.append(f"# ==== pi_course/{name}\n{text}")
    return "\n".join(parts)


def near_identical(codes: Mapping[str, str], starter: str, threshold: float = THRESHOLD) -> list[Pair]:
    """Every pair of ``codes`` (name → lesson code) whose learner-written code is near-identical."""
    try:
        from copydetect import CodeFingerprint, compare_files
    except ImportError:  # the [lab] extra brings it; without it there is simply no similarity section
        return []
    window = GUARANTEE_T - NOISE_K + 1

    def fingerprint(text: str, boilerplate: Sequence[int] = ()) -> CodeFingerprint:
        return CodeFingerprint(
            "lesson.py", NOISE_K, window, list(boilerplate), True, "python", io.StringIO(text)
        )

    try:
        boilerplate = fingerprint(starter).hashes
        prints = {name: fingerprint(text, boilerplate) for name, text in codes.items() if text.strip()}
    except Exception:  # a tokenizer failure on hostile text must not stop the report
        return []
    names = sorted(name for name, print_ in prints.items() if len(print_.hashes) > 0)
    pairs = []
    for index, left in enumerate(names):
        for right in names[index + 1 :]:
            _, (left_share, right_share), _ = compare_files(prints[left], prints[right])
            similarity = float(min(left_share, right_share))
            if similarity >= threshold:
                pairs.append(Pair(left, right, similarity, codes[left], codes[right]))
    return sorted(pairs, key=lambda pair: (-pair.similarity, pair.left, pair.right))
