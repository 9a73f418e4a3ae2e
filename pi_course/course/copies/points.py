"""Points per focused test of each step: what ``grade`` counts and the Classroom workflow awards.

Kept apart from :mod:`..grade` so that writing a practice copy's workflow needs nothing of grading.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...chapter.steps import STEP_NUMBERS, STEPS
from ..oserrors import reason


class GradebookError(Exception):
    """A ``--points`` or ``--roster`` that cannot be read; the message is one line."""


@dataclass(frozen=True)
class Points:
    """Points per focused test of each step (1 each by default): what grade and Classroom both count."""

    per_test: Mapping[str, float]

    def of(self, step: str) -> float:
        return self.per_test.get(step, 1)

    def step_max(self, step: str) -> float:
        expected = next(candidate.expected for candidate in STEPS if candidate.number == step)
        return expected * self.of(step)

    @property
    def total(self) -> float:
        return sum(self.step_max(step) for step in STEP_NUMBERS)

    def score(self, record: Mapping[str, Any]) -> dict[str, float]:
        """The points of each step for one record: passed tests times the step's weight."""
        focused = record.get("focused") or {}
        scored = {}
        for step in STEP_NUMBERS:
            pair = focused.get(step) or [0, 0]
            scored[step] = _number(int(pair[0]) * self.of(step))
        return scored


DEFAULT_POINTS = Points({})


def _number(value: float) -> float:
    """3.0 → 3 (a whole number prints as one), anything else as it is."""
    return int(value) if float(value).is_integer() else value


def parse_points(text: str | None) -> Points:
    """``5.1=1,5.2=3,…`` or the path of a TOML file (``"5.2" = 3``, or under ``[points]``)."""
    if not text:
        return DEFAULT_POINTS
    path = Path(text).expanduser()
    if path.suffix == ".toml" or path.is_file():
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
            raise GradebookError(f"--points {text}：无法读取这个 TOML 文件：{reason(error)}。") from None
        table = data.get("points", data)
        pairs = [(str(key), value) for key, value in table.items()]
    else:
        pairs = []
        for item in filter(None, (part.strip() for part in text.split(","))):
            step, _, value = item.partition("=")
            pairs.append((step.strip(), value.strip()))
    weights: dict[str, float] = {}
    for step, value in pairs:
        if step not in STEP_NUMBERS:
            raise GradebookError(f"--points：没有实践 {step!r}；可选 {', '.join(STEP_NUMBERS)}（例如 5.2=3）")
        try:
            weight = float(value)
        except (TypeError, ValueError):
            raise GradebookError(f"--points：{step} 的分值 {value!r} 不是数字") from None
        if not weight >= 0 or weight == float("inf"):
            raise GradebookError(f"--points：{step} 的分值必须是不小于 0 的有限数")
        weights[step] = _number(weight)
    return Points(weights)
