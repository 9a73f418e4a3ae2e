"""A block of a text generated between two markers: what a test regenerates and compares with the text."""

from __future__ import annotations


def between_markers(text: str, start_marker: str, end_marker: str, block: str) -> str:
    """``text`` with what stands between two markers (a generated table) replaced by ``block``."""
    start = text.index(start_marker) + len(start_marker)
    end = text.index(end_marker, start)
    return text[:start] + block + text[end:]
