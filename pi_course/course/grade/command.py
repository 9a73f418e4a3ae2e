"""``python -m pi_course grade 05 PATH...``: grade a class, print the table, write the class's files.

The files are written when the class is done, and also when it is cut short: Ctrl-C or SIGTERM
stop every running check and write the rows already graded. Re-grading some students with the
same ``--json`` file updates their rows and keeps everyone else's, so the CSV and the page stay
the whole class.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import signal
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import FrameType

from ..checker.copyrun import DEFAULT_TIMEOUT
from ..checker.record import as_record
from ..copies.locate import course_root
from ..copies.pythons import TO_CHECK, course_python, missing_packages, use_instead
from ..exits import EXIT_DONE, EXIT_INTERRUPTED, EXIT_USAGE
from ..oserrors import reason as said_reason
from ..running.sandbox import SandboxError, choose, not_sandboxed_line
from .discovery import GradeError, discover
from .gradebook import GradebookError, Points, Student, parse_points, read_roster, to_csv
from .page import to_html
from .records import Graded, status_said
from .report import _printable, _seconds, table
from .runner import grade
from .similarity import near_identical


def python_problem() -> str | None:
    """The grader's Python must have the course's packages: without them every copy would read as
    one that does not import. Said before anything is graded or written, naming the one that has them."""
    missing = missing_packages(TO_CHECK)
    if not missing:
        return None
    command = " ".join(["-m pi_course", *sys.argv[1:]])
    return (
        f"grade 05：这个 Python（{sys.executable}）没有安装 {'、'.join(missing)}，"
        "它评出来的每一份都会是“无法导入”；没有评分，也没有写任何文件。"
        + use_instead(course_python(course_root()), command)
    )


@contextlib.contextmanager
def _sigterm_interrupts() -> Iterator[None]:
    """SIGTERM ends the run the way Ctrl-C does: checks stopped, the graded rows written."""

    def interrupt(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    try:
        previous = signal.signal(signal.SIGTERM, interrupt)
    except ValueError:  # not the main thread: leave SIGTERM alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _merged(json_file: str | None, results: list[Graded]) -> list[Graded]:
    """The class so far: the earlier run's rows (from ``--json``) with these copies' rows replacing theirs."""
    if json_file is None:
        return results
    try:
        earlier = json.loads(Path(json_file).expanduser().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return results
    if not isinstance(earlier, list):
        return results
    fresh = {str(graded.record.get("name")): graded for graded in results}
    merged: list[Graded] = []
    for item in earlier:
        if not isinstance(item, dict) or "name" not in item:
            continue
        name = str(item["name"])
        if name in fresh:
            merged.append(fresh.pop(name))
        else:
            record = as_record(item)
            if record is not None:
                merged.append(Graded(record, str(item.get("output", ""))))
    return merged + [graded for graded in results if str(graded.record.get("name")) in fresh]


def _with_output(results: Sequence[Graded]) -> str:
    """The JSON file: each record with its check's text, so a later re-grade can rebuild the page."""
    rows = [{**graded.record, "output": graded.output} for graded in results]
    return json.dumps(rows, ensure_ascii=False, indent=2) + "\n"


def _starter_code() -> str:
    from ..copies.assemble import instructor_copy
    from .similarity import lesson_code

    with instructor_copy() as instructor:
        return lesson_code(instructor.root)


def run(
    paths: Sequence[str],
    *,
    json_file: str | None = None,
    csv_file: str | None = None,
    html_file: str | None = None,
    jobs: int | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    sandbox: str = "auto",
    points: str | None = None,
    roster: str | None = None,
) -> int:
    """``grade 05``: check every copy, print the table, write the files asked for.

    0 when every copy was graded (whatever the learners' results); 2 when a PATH does not exist,
    ``--sandbox bwrap`` cannot run, ``--points``/``--roster`` cannot be read, or an output file
    cannot be written; 130 when interrupted (the rows graded so far are written).
    """
    unable = python_problem()
    if unable is not None:
        print(unable, file=sys.stderr)
        return EXIT_USAGE
    try:
        sources = discover(paths)
        weights = parse_points(points)
        students: dict[str, Student] = read_roster(roster) if roster else {}
        chosen = choose(sandbox)
        _check_outputs(json_file, csv_file, html_file)
    except (GradeError, GradebookError, SandboxError) as error:
        print(error, file=sys.stderr)
        return EXIT_USAGE
    warning = None if chosen.sandboxed else not_sandboxed_line(chosen)
    if warning:
        print(warning, file=sys.stderr, flush=True)
    total = len(sources)
    done: list[Graded] = []
    codes: dict[str, str] = {}

    def progress(graded: Graded) -> None:
        done.append(graded)
        record = graded.record
        line = (
            f"[{len(done)}/{total}] {_printable(record['name'])}：{status_said(record['status'])}"
            f"（{_seconds(record)} 秒）"
        )
        print(line, file=sys.stderr, flush=True)

    interrupted = False
    with _sigterm_interrupts():
        try:
            results = grade(
                sources, sandbox=chosen, jobs=jobs, timeout=timeout, progress=progress, codes=codes
            )
        except KeyboardInterrupt:
            interrupted = True
            order = {source.name: index for index, source in enumerate(sources)}
            results = sorted(done, key=lambda graded: order.get(str(graded.record.get("name")), len(order)))
            print(
                f"grade 已中断：写入已评完的 {len(results)}/{total} 份，没有留下检查进程。", file=sys.stderr
            )
    print(table(results, shutil.get_terminal_size((160, 24)).columns, warning))
    code = _write(results, codes, json_file, csv_file, html_file, weights, students, warning)
    return EXIT_INTERRUPTED if interrupted else code


def _check_outputs(*names: str | None) -> None:
    """Before any copy is graded: every output's folder exists (made when missing) and takes a file.

    A class can take minutes to grade; a path that cannot be written is found first, not after.
    """
    for name in filter(None, names):
        target = Path(name).expanduser()
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            if target.is_dir():
                raise IsADirectoryError(21, "这是一个目录")
            existed = target.exists()
            with target.open("a", encoding="utf-8"):
                pass  # appending nothing: an existing file (a re-grade merges into it) is left as it is
            if not existed:
                target.unlink()
        except OSError as error:
            reason = said_reason(error)
            raise GradeError(
                f"grade 05：无法写入 {name}：{reason}（还没有开始评分）。换一个可以写入的路径。"
            ) from None


def _write(
    results: list[Graded],
    codes: dict[str, str],
    json_file: str | None,
    csv_file: str | None,
    html_file: str | None,
    weights: Points,
    students: dict[str, Student],
    warning: str | None,
) -> int:
    whole = _merged(json_file, results)
    pairs = near_identical(codes, _starter_code()) if html_file and len(codes) > 1 else []
    outputs: list[tuple[str | None, Callable[[], str]]] = [
        (json_file, lambda: _with_output(whole)),
        (csv_file, lambda: to_csv([graded.record for graded in whole], weights, students)),
        (
            html_file,
            lambda: to_html(whole, points=weights, warning=warning, pairs=pairs, compared=len(codes)),
        ),
    ]
    for name, render in outputs:
        if name is None:
            continue
        try:
            Path(name).expanduser().write_text(render(), encoding="utf-8")
        except OSError as error:
            print(f"grade 05：无法写入 {name}：{said_reason(error)}", file=sys.stderr)
            return EXIT_USAGE
        print(f"已写入 {name}", file=sys.stderr)
    return EXIT_DONE
