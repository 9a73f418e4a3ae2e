"""``python -m pi_course grade 05 PATH...``: a class of practice copies, graded as untrusted code.

One job per module, otter-grader style; below it, shared with ``check 05 --path``, the sandboxed
run of one copy (:mod:`..checker.copyrun`: the tree :mod:`..copies.assemble` builds, run in
:mod:`..running.sandbox`) and the record of a copy (:mod:`..checker.record`):

* :mod:`.discovery`: which copies the PATHs hold (folders, folders of copies, archives, links);
* :mod:`.archives`: archives extracted safely (no path outside, no links, a size bound);
* :mod:`.runner`: a class in parallel, each copy's source found and run, its record read back;
* :mod:`.records`: a graded copy (its record and output); :mod:`.gradebook`: points, roster and the CSV;
* :mod:`.similarity`: near-identical lesson code (copydetect); :mod:`.report` and :mod:`.page`:
  the terminal table, the JSON and the HTML page; :mod:`.command`: the command itself.
"""

from __future__ import annotations

from ..checker.copyrun import DEFAULT_TIMEOUT
from ..checker.record import FIELDS, STATUSES
from ..copies.assemble import MATCHES_REFERENCE, TESTS_MODIFIED, assemble, instructor_copy
from ..running.sandbox import NOT_SANDBOXED, Sandbox, SandboxError, choose, scrubbed_environment
from .archives import UnsafeArchive, copy_folder, extract
from .discovery import GradeError, Source, discover, find_tree, looks_like_a_copy
from .records import Graded, unfinished_first
from .runner import grade, grade_one

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
    "choose",
    "copy_folder",
    "discover",
    "extract",
    "find_tree",
    "grade",
    "grade_one",
    "instructor_copy",
    "looks_like_a_copy",
    "scrubbed_environment",
    "unfinished_first",
]
