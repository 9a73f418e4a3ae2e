"""``python -m pi_course grade 05 PATH...``: a class of practice copies, graded as untrusted code.

One job per module, otter-grader style:

* :mod:`.discovery`: which copies the PATHs hold (folders, folders of copies, archives, links);
* :mod:`.archives`: archives extracted safely (no path outside, no links, a size bound);
* :mod:`.assemble`: the tree a copy is graded in: the installed course's tests, plugin and package
  with only the copy's lesson files, and the flags (``tests-modified``, ``matches-reference``);
* :mod:`.sandbox`: bubblewrap (or, where there is none, a scrubbed environment and ``not-sandboxed``);
* :mod:`.runner`: one check bounded in time and output, a class in parallel, ``check --path``;
* :mod:`.records`: the record of each copy; :mod:`.gradebook`: points, roster and the CSV;
* :mod:`.similarity`: near-identical lesson code (copydetect); :mod:`.report` and :mod:`.page`:
  the terminal table, the JSON and the HTML page; :mod:`.command`: the command itself.
"""

from __future__ import annotations

from ..record import FIELDS, STATUSES
from .archives import UnsafeArchive, copy_folder, extract
from .assemble import MATCHES_REFERENCE, NOT_SANDBOXED, TESTS_MODIFIED, assemble, instructor_copy
from .discovery import GradeError, Source, discover, find_tree, looks_like_a_copy
from .records import Graded, unfinished_first
from .runner import DEFAULT_TIMEOUT, check_command, grade, grade_one, run_bounded
from .sandbox import Sandbox, SandboxError, choose, scrubbed_environment

__all__ = [
    "DEFAULT_TIMEOUT",
    "FIELDS",
    "MATCHES_REFERENCE",
    "NOT_SANDBOXED",
    "STATUSES",
    "TESTS_MODIFIED",
    "GradeError",
    "Graded",
    "Sandbox",
    "SandboxError",
    "Source",
    "UnsafeArchive",
    "assemble",
    "check_command",
    "choose",
    "copy_folder",
    "discover",
    "extract",
    "find_tree",
    "grade",
    "grade_one",
    "instructor_copy",
    "looks_like_a_copy",
    "run_bounded",
    "scrubbed_environment",
    "unfinished_first",
]
