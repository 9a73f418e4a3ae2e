"""The chapter's notebooks, in reading order, listed once.

Tests, docs and the overview notebook's map read this list; a notebook added to ``notebooks/``
is one line here (a test fails while a ``notebooks/*.ipynb`` is missing from it). The practice
notebooks are the steps' own (:attr:`.steps.Step.notebook`): each ends with its step's checkpoint.
"""

from __future__ import annotations

from .steps import STEPS

NOTEBOOKS: tuple[str, ...] = (
    "05-0-overview",
    *(step.notebook for step in STEPS),  # 05-1 … 05-4
    "05-5-break-it",
    "05-6-migration",
    "05-7-real-providers",
    "05-8-questionnaire",
)
