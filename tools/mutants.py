"""``make mutants``: the mutation score of ``check`` over the LAB regions of the lesson modules.

A finished practice copy (the reference's lesson code) is made once; every single-point mutant
of a LAB region (a comparison flipped, ``and``/``or`` swapped, ``x or y`` cut to one side, a ``not``
dropped, ``+``/``-`` swapped, a constant changed, ``.get(k)`` made ``[k]``, a condition negated, one
statement replaced by ``pass``) is written into a copy of it in turn, and ``python -m pi_course
check 05 --json`` decides: killed (not ``done``) or survived. A survivor is either listed in
``tools/mutants_equivalent.json`` with the reason it behaves exactly like the reference, or it
is a hole in ``check``: the run then exits 1.

    python tools/mutants.py                 # every mutant (2 workers)
    python tools/mutants.py --sample 24     # a fixed, evenly spread sample (CI)
    python tools/mutants.py --list          # the mutants, without running them
    python tools/mutants.py --learner dan --sample 20   # mutants of a learner's own code instead

``--learner NAME`` measures recall on code the reference's mutants never explore: every mutant of
what learner NAME wrote (``tests/workflow/learners/NAME``, the whole files), each merged into a
practice copy as the learner's code is. There is no list of equivalent mutants for a learner:
each survivor is printed with its diff, to be judged (caught, allowed by the chapter, or a hole).
"""

from __future__ import annotations

import argparse
import ast
import concurrent.futures
import difflib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pi_course.course.copies.practice import create_practice  # noqa: E402
from pi_course.course.copies.starters import lab_regions, reference_sources  # noqa: E402

EQUIVALENT = Path(__file__).with_name("mutants_equivalent.json")
CHECK_TIMEOUT = 180.0  # seconds per mutant's check (check bounds itself well below this)

_FLIPPED: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.Lt: ast.GtE,
    ast.GtE: ast.Lt,
    ast.LtE: ast.Gt,
    ast.Gt: ast.LtE,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
}


@dataclass(frozen=True)
class Mutant:
    """One single-point change: where, what kind, and the new source of the changed span."""

    file: str
    line: int
    col: int
    end_line: int
    end_col: int
    operator: str
    replacement: str

    @property
    def id(self) -> str:
        return f"{self.file}:{self.line}:{self.col}:{self.operator}:{self.replacement}"

    def apply(self, source: str) -> str:
        lines = source.splitlines(keepends=True)
        offsets = [0]
        for line in lines:
            offsets.append(offsets[-1] + len(line.encode()))
        data = source.encode()
        start = offsets[self.line - 1] + self.col
        end = offsets[self.end_line - 1] + self.end_col
        return (data[:start] + self.replacement.encode() + data[end:]).decode()


def _in_lab(node: ast.AST, regions: list[tuple[int, int]]) -> bool:
    line = getattr(node, "lineno", None)
    end = getattr(node, "end_lineno", None)
    return line is not None and end is not None and any(a < line and end < b for a, b in regions)


def _docstring_nodes(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Module):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                found.add(id(body[0]))
                found.add(id(body[0].value))
    return found


def _annotations(tree: ast.AST) -> Iterator[ast.AST]:
    for node in ast.walk(tree):
        if isinstance(node, ast.arg) and node.annotation is not None:
            yield node.annotation
        if isinstance(node, ast.AnnAssign):
            yield node.annotation
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.returns is not None:
            yield node.returns


def _variants(node: ast.expr) -> Iterator[tuple[str, ast.AST]]:
    """Each single-point change of ``node`` itself (not of its children)."""
    if isinstance(node, ast.Compare):
        for i, op in enumerate(node.ops):
            flipped = _FLIPPED.get(type(op))
            if flipped is not None:
                changed = ast.Compare(
                    node.left, [*node.ops[:i], flipped(), *node.ops[i + 1 :]], node.comparators
                )
                yield "flip-comparison", changed
    elif isinstance(node, ast.BoolOp):
        other = ast.Or() if isinstance(node.op, ast.And) else ast.And()
        yield "swap-and-or", ast.BoolOp(other, node.values)
        for i in range(len(node.values)):
            kept = [*node.values[:i], *node.values[i + 1 :]]
            yield "drop-operand", kept[0] if len(kept) == 1 else ast.BoolOp(node.op, kept)
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        yield "drop-not", node.operand
    elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Sub):
        other_op = ast.Sub() if isinstance(node.op, ast.Add) else ast.Add()
        yield "swap-add-sub", ast.BinOp(node.left, other_op, node.right)
    elif isinstance(node, ast.Constant):
        value = node.value
        if isinstance(value, bool):
            yield "flip-bool", ast.Constant(not value)
        elif isinstance(value, int):
            yield "change-number", ast.Constant(value + 1)
            if value != 0:
                yield "change-number", ast.Constant(0)
        elif isinstance(value, str):
            yield "change-string", ast.Constant(value + "X" if value else "X")
            if value:
                yield "change-string", ast.Constant("")
    elif (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "get"
        and len(node.args) == 1
        and not node.keywords
    ):
        yield "get-to-subscript", ast.Subscript(node.func.value, node.args[0], ast.Load())


def mutants_of(file: str, source: str, *, whole: bool = False) -> list[Mutant]:
    """Every mutant of the LAB regions of one reference module (``whole``: of the whole file), in
    source order."""
    tree = ast.parse(source)
    if whole:
        regions = [(0, len(source.splitlines()) + 1)]
    else:
        regions = [(begin, end) for step, begin, end in lab_regions(source)]
    docstrings = _docstring_nodes(tree)
    found: list[Mutant] = []

    def add(node: ast.expr | ast.stmt, operator: str, replacement: str) -> None:
        end_line = node.end_lineno or node.lineno
        found.append(
            Mutant(
                file, node.lineno, node.col_offset, end_line, node.end_col_offset or 0, operator, replacement
            )
        )

    in_fstring = {
        id(inner) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr) for inner in ast.walk(node)
    }
    annotations = {id(inner) for annotation in _annotations(tree) for inner in ast.walk(annotation)}
    for node in ast.walk(tree):
        if not _in_lab(node, regions) or id(node) in docstrings or id(node) in annotations:
            continue  # an annotation is never evaluated here (``from __future__ import annotations``)
        if id(node) in in_fstring and not isinstance(node, ast.JoinedStr):
            continue  # an f-string's parts have no source offsets of their own before 3.12
        if isinstance(node, ast.expr):
            for operator, changed in _variants(node):
                add(node, operator, ast.unparse(changed))
        if isinstance(node, ast.If | ast.While):
            add(node.test, "negate-condition", f"not ({ast.unparse(node.test)})")
        statements = ast.Expr | ast.Assign | ast.AugAssign | ast.AnnAssign | ast.Raise | ast.Return
        if isinstance(node, statements) and not (isinstance(node, ast.AnnAssign) and node.value is None):
            add(node, "delete-statement", "pass")
    return sorted(
        {m.id: m for m in found if _applies(m, source)}.values(), key=lambda m: (m.line, m.col, m.id)
    )


def _applies(mutant: Mutant, source: str) -> bool:
    try:
        changed = mutant.apply(source)
        ast.parse(changed)
    except (SyntaxError, UnicodeDecodeError, ValueError):
        return False
    return changed != source


def all_mutants() -> list[Mutant]:
    sources = reference_sources()
    return [mutant for name in sorted(sources) for mutant in mutants_of(name, sources[name])]


LEARNERS = ROOT / "tests" / "workflow" / "learners"


def learner_mutants(learner: str) -> list[Mutant]:
    folder = LEARNERS / learner
    return [
        mutant
        for path in sorted(folder.glob("*.py"))
        for mutant in mutants_of(path.name, path.read_text(encoding="utf-8"), whole=True)
    ]


def learner_copy(folder: Path, learner: str) -> Path:
    """A practice copy holding ``learner``'s code, as tests/workflow/learners applies it."""
    sys.path.insert(0, str(LEARNERS.parent))
    from learners import apply

    copy = create_practice(folder / "finished")
    shutil.copytree(copy / "pi_course", folder / "starter")  # the starter modules, to merge mutants into
    apply(copy, learner)
    return copy


def run_learner_one(
    mutant: Mutant, base: Path, scratch: Path, learner: str
) -> tuple[Mutant, str, str | None]:
    sys.path.insert(0, str(LEARNERS.parent))
    from learners import merge

    work = scratch / f"m{os.getpid()}"
    if not work.exists():
        shutil.copytree(base, work)
    target = work / "pi_course" / mutant.file
    original = target.read_text(encoding="utf-8")
    starter = (scratch / "starter" / mutant.file).read_text(encoding="utf-8")
    own = (LEARNERS / learner / mutant.file).read_text(encoding="utf-8")
    try:
        target.write_text(merge(starter, mutant.apply(own)), encoding="utf-8")
        status, failure, _ = verdict(work)
    finally:
        target.write_text(original, encoding="utf-8")
    return mutant, status, failure


def learner_diff(mutant: Mutant, learner: str) -> str:
    source = (LEARNERS / learner / mutant.file).read_text(encoding="utf-8")
    lines = difflib.unified_diff(
        source.splitlines(), mutant.apply(source).splitlines(), f"{learner}/{mutant.file}", "mutant", n=0,
        lineterm="",
    )  # fmt: skip
    return "\n".join(list(lines)[2:])


def finished_copy(folder: Path) -> Path:
    """A practice copy whose lesson files are the reference's: ``check`` says 完成 there."""
    copy = create_practice(folder / "finished")
    for name, text in reference_sources().items():
        (copy / "pi_course" / name).write_text(text, encoding="utf-8")
    return copy


def verdict(copy: Path) -> tuple[str, str | None, dict[str, int]]:
    """``check 05 --json`` in ``copy``: its status, its first failure, and what it compared."""
    try:
        done = subprocess.run(
            [sys.executable, "-m", "pi_course", "check", "05", "--json"],
            cwd=copy, capture_output=True, text=True, timeout=CHECK_TIMEOUT, check=False,
            env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        return "timeout", "check ran past its bound", {}
    try:
        record = json.loads(done.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        return "no-record", (done.stderr or done.stdout)[-300:], {}
    return record["status"], record.get("first_failure"), record.get("compared", {})


def run_one(mutant: Mutant, base: Path, scratch: Path) -> tuple[Mutant, str, str | None]:
    work = scratch / f"m{os.getpid()}"
    if not work.exists():
        shutil.copytree(base, work)
    target = work / "pi_course" / mutant.file
    original = target.read_text(encoding="utf-8")
    try:
        target.write_text(mutant.apply(original), encoding="utf-8")
        status, failure, _ = verdict(work)
    finally:
        target.write_text(original, encoding="utf-8")
    return mutant, status, failure


def diff_of(mutant: Mutant) -> str:
    source = reference_sources()[mutant.file]
    changed = mutant.apply(source)
    lines = difflib.unified_diff(
        source.splitlines(), changed.splitlines(), f"pi_course/{mutant.file}", "mutant", n=0, lineterm=""
    )
    return "\n".join(list(lines)[2:])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sample", type=int, help="run only N mutants, evenly spread (deterministic)")
    parser.add_argument("--offset", type=int, default=0, help="with --sample: start the spread this far in")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--list", action="store_true", help="print the mutants and stop")
    parser.add_argument("--ids", type=Path, help="run only the mutants whose ids this file lists, one a line")
    parser.add_argument("--json", type=Path, help="write every mutant's outcome here")
    parser.add_argument("--learner", help="mutate this learner's code (tests/workflow/learners/NAME)")
    args = parser.parse_args(argv)
    if args.learner:
        return learner_main(args)

    mutants = all_mutants()
    if args.ids:
        wanted = set(args.ids.read_text(encoding="utf-8").splitlines())
        mutants = [mutant for mutant in mutants if mutant.id in wanted]
    if args.sample:
        step = max(1, len(mutants) // args.sample)
        mutants = mutants[args.offset % step :: step][: args.sample]
    equivalent: dict[str, str] = {
        item["id"]: f"{item['kind']}: {item['reason']}"
        for item in json.loads(EQUIVALENT.read_text(encoding="utf-8"))
    }
    stale = sorted(set(equivalent) - {mutant.id for mutant in all_mutants()})
    if stale:  # the reference changed under a listed mutant: its reason must be looked at again
        print(f"listed as equivalent but no longer a mutant: {stale}", file=sys.stderr)
        return 2
    if args.list:
        for mutant in mutants:
            print(mutant.id)
        return 0

    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="pi-course-mutants-") as folder:
        base = finished_copy(Path(folder))
        status, failure, compared = verdict(base)
        if status != "done":
            print(f"the finished copy is not done: {status} {failure}", file=sys.stderr)
            return 2
        print(
            f"finished copy: done, compared {compared}; {len(mutants)} mutants, {args.jobs} workers",
            flush=True,
        )
        outcomes: list[tuple[Mutant, str, str | None]] = []
        with concurrent.futures.ProcessPoolExecutor(args.jobs) as pool:
            futures = [pool.submit(run_one, mutant, base, Path(folder)) for mutant in mutants]
            for number, future in enumerate(concurrent.futures.as_completed(futures), start=1):
                outcomes.append(future.result())
                if number % 25 == 0:
                    print(f"  {number}/{len(mutants)} ({time.monotonic() - started:.0f} s)", flush=True)
    outcomes.sort(key=lambda item: (item[0].file, item[0].line, item[0].col, item[0].id))
    killed = [item for item in outcomes if item[1] != "done"]
    survived = [item for item in outcomes if item[1] == "done"]
    listed = [item for item in survived if item[0].id in equivalent]
    holes = [item for item in survived if item[0].id not in equivalent]
    total = len(outcomes)
    print()
    print(f"mutants: {total}; killed {len(killed)}; survived {len(survived)} "
          f"(equivalent, listed: {len(listed)}; not listed: {len(holes)})")  # fmt: skip
    non_equivalent = total - len(listed)
    if non_equivalent:
        score = len(killed) / non_equivalent
        print(f"score over the non-equivalent mutants: {len(killed)}/{non_equivalent} = {score:.1%}")
    print(f"time: {time.monotonic() - started:.0f} s")
    for mutant, _, _ in listed:
        print(f"  equivalent {mutant.id}: {equivalent[mutant.id]}")
    for mutant, _, _ in holes:
        print(f"\nSURVIVED (not listed as equivalent): {mutant.id}\n{diff_of(mutant)}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(
            json.dumps(
                [
                    {"id": m.id, "status": s, "first_failure": f, "equivalent": equivalent.get(m.id)}
                    for m, s, f in outcomes
                ],
                ensure_ascii=False, indent=1,
            ),
            encoding="utf-8",
        )  # fmt: skip
    return 1 if holes else 0


def learner_main(args: argparse.Namespace) -> int:
    """The mutants of one learner's code through ``check 05``: killed, and each survivor's diff."""
    mutants = learner_mutants(args.learner)
    if args.ids:
        wanted = set(args.ids.read_text(encoding="utf-8").splitlines())
        mutants = [mutant for mutant in mutants if mutant.id in wanted]
    if args.sample:
        step = max(1, len(mutants) // args.sample)
        mutants = mutants[args.offset % step :: step][: args.sample]
    if args.list:
        for mutant in mutants:
            print(mutant.id)
        return 0
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="pi-course-mutants-") as folder:
        base = learner_copy(Path(folder), args.learner)
        status, failure, _ = verdict(base)
        if status != "done":
            print(f"learner {args.learner}'s copy is not done: {status} {failure}", file=sys.stderr)
            return 2
        print(f"learner {args.learner}: done; {len(mutants)} mutants, {args.jobs} workers", flush=True)
        with concurrent.futures.ProcessPoolExecutor(args.jobs) as pool:
            futures = [
                pool.submit(run_learner_one, mutant, base, Path(folder), args.learner) for mutant in mutants
            ]
            outcomes = [future.result() for future in futures]
    killed = [item for item in outcomes if item[1] != "done"]
    survived = [item for item in outcomes if item[1] == "done"]
    print(f"learner {args.learner}: mutants {len(outcomes)}; killed {len(killed)}; survived {len(survived)}; "
          f"time {time.monotonic() - started:.0f} s")  # fmt: skip
    for mutant, _, _ in survived:
        print(f"\nSURVIVED {mutant.id}\n{learner_diff(mutant, args.learner)}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(
            json.dumps(
                [{"id": m.id, "status": s, "first_failure": f} for m, s, f in outcomes],
                ensure_ascii=False, indent=1,
            ),
            encoding="utf-8",
        )  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
