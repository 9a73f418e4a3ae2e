"""What a check is asked to do: one value every door builds (the CLI, a notebook's ``check()``, grade).

Its command-line flags are derived from it (:meth:`CheckRequest.flags`), so a check run again
in a sandbox (``check --path``, ``grade``) is asked exactly what the first one was.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...chapter.steps import Step
from ...chapter.steps import step as step_named


@dataclass(frozen=True)
class CheckRequest:
    """One check: which step (None: the chapter), which tree, how much, and how it is shown."""

    step: str | None = None  # "5.3": that step and every step before it
    path: str | None = None  # a practice copy (or a folder inside one); None: around the current folder
    reference: bool = False  # the installed reference, not a copy
    course_only: bool = False  # the focused tests alone (no beyond checks, rules, comparisons)
    verbose: bool = False  # pytest's own report first
    as_json: bool = False  # the record alone on stdout (the text on stderr)
    rules: bool = False  # the rules table instead of the counts
    sandbox: str = "auto"  # with ``path``: where the copy's code runs
    assembled: bool = False  # the sandbox's own call, on the tree it built

    @property
    def asked(self) -> Step | None:
        return None if self.step is None else step_named(self.step)

    @property
    def beyond(self) -> bool:
        """The checks beyond the focused tests run too (the command line's default)."""
        return not self.course_only

    def flags(self) -> list[str]:
        """The ``check 05`` flags asking for this, the tree's (``--path``/``--reference``) left out."""
        flags = ["--step", self.step] if self.step else []
        flags += ["--json"] * self.as_json + ["--course-only"] * self.course_only + ["-v"] * self.verbose
        flags += ["--rules"] * self.rules + ["--assembled"] * self.assembled
        return flags
