"""``check``: what notebook checkpoint cells and ``python -m pi_course check 05`` call.

Every door builds one :class:`~.checker.request.CheckRequest`; one run of the tests gives one
:class:`~.checker.facts.Report`; :func:`~.checker.judgement.judge` turns it into the one
:class:`~.checker.judgement.Judgement` everything shown reads: the count lines, the next steps
(:mod:`.checker.advice`), the verdict (the last line, which the exit status follows) and, with ``--json``,
the record that ``grade`` collects per copy.

``python -m pi_course check 05`` and ``check()`` (the notebooks' checkpoint cells) ask the same:
the focused tests, the chapter's rules, the comparisons with the reference and the checks beyond
the chapter; the chapter is done when all of them pass. ``--step 5.x`` / ``check("5.x")`` runs
that step and every step before it, with the rules, comparisons and beyond checks that need no
later step, so a step said done is never refused by the whole chapter's verdict for that step.
``--course-only`` / ``beyond=False`` runs the focused tests alone, and says so in its verdict
(``第 05 章聚焦测试``, ``实践 5.x 聚焦测试``). In a practice copy the results of steps whose files
did not change are not run again (:mod:`.checker.stepcache`).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import TextIO

from .checker.copyrun import DEFAULT_TIMEOUT, assembled_check, run_copy
from .checker.judgement import Judgement, judge, judged_steps, record_of, text_lines
from .checker.record import CopyRecord, nothing_ran, parse_record, record_line
from .checker.request import CheckRequest
from .checker.testrun import run_tests
from .copies.assemble import instructor_copy
from .copies.checkpoint import tested_tree
from .copies.locate import check_target, course_root, is_practice_copy, practice_path_problem
from .exits import EXIT_DONE, EXIT_FAILED, EXIT_INTERRUPTED, EXIT_USAGE
from .running.sandbox import SandboxError, choose, not_sandboxed_line

__all__ = ["check", "check_command", "check_record", "course_root", "judged", "print_judgement"]


def judged(request: CheckRequest, root: Path) -> Judgement:
    """Run what ``request`` asks on the tree at ``root`` and judge it (a practice copy keeps its results)."""
    steps = judged_steps(request.asked)
    kept = is_practice_copy(root) and not request.assembled
    report = run_tests(steps, root, beyond=request.beyond, verbose=request.verbose, kept=kept)
    return judge(report, request.asked, beyond=request.beyond)


def print_judgement(
    judgement: Judgement, *, verbose: bool = False, file: TextIO | None = None, table: bool = False,
    compact: bool = False,
) -> None:  # fmt: skip
    """Print what ``check`` shows, ending with the verdict (``table``: the rules table, ``--rules``)."""
    out = file or sys.stdout
    if verbose and judgement.facts.output:
        print(judgement.facts.output.rstrip(), end="\n\n", file=out)
    lines = text_lines(judgement, compact=compact, table=table)
    if lines:
        print("\n".join(lines), file=out)
    print(judgement.line, file=out)


def check(
    step: str | None = None,
    path: str | Path | None = None,
    *,
    beyond: bool = True,
    verbose: bool = False,
) -> bool:
    """Print one line per step, the next steps and the verdict; ``True`` when it is done.

    What notebook checkpoint cells call: the command line's check, ``step`` its ``--step`` and
    ``beyond=False`` its ``--course-only`` (the focused tests alone). ``verbose`` prints pytest's
    own report first. It tests the practice copy the kernel's folder belongs to, whatever
    ``pi_course`` the kernel imported, and says which tree in its first line; a step whose
    earlier steps are not done names the first of them before anything about its own files.
    """
    request = CheckRequest(step=step, path=None if path is None else str(path), course_only=not beyond,
                           verbose=verbose)  # fmt: skip
    root, first_line = tested_tree(path)
    print(first_line)
    judgement = judged(request, root)
    print_judgement(judgement, verbose=verbose, compact=True)
    return judgement.done


def check_record(path: str | Path) -> CopyRecord:
    """Check the practice copy at (or around) ``path``, print nothing, return its record."""
    problem = practice_path_problem(str(path))
    if problem is not None:
        folder = Path(path).expanduser().absolute()
        return nothing_ran(folder.name, folder, "not-a-copy", problem)
    root, _ = check_target(str(path), Path.cwd(), course_root())
    assert root is not None  # practice_path_problem found the tree
    started = time.monotonic()
    judgement = judged(CheckRequest(path=str(path)), root)
    return record_of(judgement, root, time.monotonic() - started)


# --- the command ----------------------------------------------------------------------------------


def _cwd() -> Path:
    try:
        return Path.cwd()
    except OSError:  # the current folder was removed
        return Path(os.environ.get("PWD") or ".").absolute()


def check_command(request: CheckRequest) -> int:
    """``python -m pi_course check 05 …``: find the tree, run, print; the exit status follows the verdict.

    0: done; 1: not done; 2: nothing checked (not a copy). With ``as_json`` the record is the
    only thing printed on stdout (a path that is not a copy is a ``not-a-copy`` record), and the
    text a learner reads goes to stderr, so ``grade`` gets both from one run.

    ``--path`` to a practice copy checks its lesson files with this installation's tests, in the
    sandbox ``grade`` uses (:func:`.checker.copyrun.run_copy`); ``assembled`` is that sandbox's own call,
    on the tree it built.
    """
    root, line = check_target(request.path, _cwd(), course_root(), reference=request.reference)
    if line is not None and not request.assembled:
        print(line, file=sys.stderr)
    if root is None:
        if request.as_json:
            folder = Path(request.path or _cwd()).expanduser().absolute()
            print(record_line(nothing_ran(folder.name, folder, "not-a-copy", line or "")))
        return EXIT_USAGE
    if (
        request.path is not None
        and not request.assembled
        and is_practice_copy(root)
        and root != course_root()
    ):
        return _from_outside(root, request)
    started = time.monotonic()
    try:
        judgement = judged(request, root)
    except KeyboardInterrupt:
        print("check 已中断（Ctrl-C）。", file=sys.stderr)
        return EXIT_INTERRUPTED
    seconds = time.monotonic() - started
    text = sys.stderr if request.as_json else sys.stdout  # with --json, stdout carries the record alone
    print_judgement(judgement, verbose=request.verbose, file=text, table=request.rules)
    if request.as_json:
        print(record_line(record_of(judgement, root, seconds)))
    return EXIT_DONE if judgement.done else EXIT_FAILED


def _from_outside(copy: Path, request: CheckRequest) -> int:
    """``check 05 --path COPY``: the copy's lesson files checked with the installed course's tests.

    The check's text and exit status are the inner ``check``'s; its record (``--json``) names the
    copy and carries the flags; the flags' lines go to stderr before it.
    """
    try:
        sandbox = choose(request.sandbox)
    except SandboxError as error:
        print(error, file=sys.stderr)
        return EXIT_USAGE
    with instructor_copy() as instructor:
        ran = run_copy(copy, instructor, sandbox, command=lambda tree: assembled_check(tree, request))
    if not sandbox.sandboxed:
        print(not_sandboxed_line(sandbox), file=sys.stderr)
    for note in ran.assembled.notes:
        print(note, file=sys.stderr)
    if ran.status is None:
        print(f"check 05：超过 {DEFAULT_TIMEOUT:g} 秒没有结束，已停止。", file=sys.stderr)
        return EXIT_FAILED
    out = ran.out
    record = parse_record(out) if request.as_json else None
    if record is not None:
        record.update({"name": copy.name, "path": str(copy), "flags": list(ran.flags)})
        out = record_line(record) + "\n"
    sys.stderr.write(ran.err)
    sys.stdout.write(out)
    return ran.status
