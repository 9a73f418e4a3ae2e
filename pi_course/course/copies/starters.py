"""Starters: the chapter's starting point, generated from the LAB-marked reference source.

The reference marks what a learner writes, the way nbgrader marks solutions::

    # BEGIN LAB 5.2                      the body becomes `raise NotImplementedError(...)`
    # BEGIN LAB 5.4 (starter: CODE)      the body becomes CODE, a naive first version
    # BEGIN LAB 5.1 REMOVE               the lines disappear (ToolDefinition, AgentContext.tools)
    # END LAB 5.x [REMOVE]

So there is one source of truth: a starter is always the reference minus its marked regions.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from pathlib import Path

from ...chapter.steps import STEPS
from .locate import PACKAGE

_BEGIN = re.compile(
    r"^(?P<indent>\s*)# BEGIN LAB (?P<step>\d\.\d)(?P<remove> REMOVE)?(?: \(starter: (?P<starter>.*)\))?$"
)
_END = re.compile(r"^\s*# END LAB (?P<step>\d\.\d)(?: REMOVE)?$")
_LABELS = {step.number: step.label for step in STEPS}
# The comment on a generator stub's `if False: yield` (LEARNING.md says the same in Chinese).
GENERATOR_NOTE = "never runs: it only keeps this a generator (harmless if left in)"


class PracticeError(Exception):
    """A practice copy cannot be made (for example, the folder is not empty, or holds no target)."""


def make_starter(source: str, steps: Collection[str] | None = None) -> str:
    """The starter version of one reference module: every marked region replaced.

    With ``steps``, only those steps' regions are replaced (the others keep the reference code):
    the state of a learner who has finished every other step.
    """
    out: list[str] = []
    region: list[str] | None = None
    begin: re.Match[str] | None = None
    for line in source.splitlines(keepends=True):
        if region is None:
            begin = _BEGIN.match(line.rstrip("\n"))
            if begin is None:
                out.append(line)
            else:
                region = []
            continue
        end = _END.match(line.rstrip("\n"))
        if end is None:
            region.append(line)
            continue
        assert begin is not None
        if end["step"] != begin["step"]:
            raise ValueError(f"LAB {begin['step']} region closed by END LAB {end['step']}")
        out += _replacement(begin, region) if steps is None or begin["step"] in steps else region
        region = None
    if region is not None:
        raise ValueError("a LAB region is not closed")
    return "".join(out)


def lab_regions(source: str) -> list[tuple[str, int, int]]:
    """Each marked region of a reference module: (step, its BEGIN line, its END line), 1-based."""
    regions: list[tuple[str, int, int]] = []
    begin: tuple[str, int] | None = None
    for number, line in enumerate(source.splitlines(), start=1):
        if (found := _BEGIN.match(line)) is not None:
            begin = (found["step"], number)
        elif begin is not None and _END.match(line):
            regions.append((*begin, number))
            begin = None
    return regions


def _replacement(begin: re.Match[str], region: list[str]) -> list[str]:
    indent, step = begin["indent"], begin["step"]
    if begin["remove"]:
        return []
    if begin["starter"]:
        return [f"{indent}{begin['starter']}  # starter: Lab {step} replaces this line\n"]
    stub = [f'{indent}raise NotImplementedError("Lab {step} {_LABELS[step]} 尚未实现")\n']
    if any(re.search(r"\byield\b", line) for line in region):
        # A bare `yield` after the raise made a learner who replaced only the raise yield one extra
        # None. Behind `if False:` the line keeps the function a generator and is harmless if kept.
        stub.append(f"{indent}if False:  # {GENERATOR_NOTE}\n{indent}    yield\n")
    return stub


# Where a practice copy keeps the chapter's target: the reference lesson modules, LAB regions
# marked. `checkpoint 05 --diff` and `practice 05 DIR` run inside a copy read it from here. The
# hyphen keeps it from ever being imported as package code.
TARGET_FOLDER = "course/target-05"
TARGET_README = """# The chapter's target (do not edit)

These are the reference versions of the lesson modules, the state after practice 5.4. The code
between `# BEGIN LAB 5.x` and `# END LAB 5.x` is what each practice step writes.

- `python -m pi_course checkpoint 05 --diff` prints the target diff: starter → target.
- `python -m pi_course checkpoint 05 --diff --mine` prints your files → target.
- `python -m pi_course practice 05 NEWDIR` (run in this copy) makes a fresh starter from them.

Read them after a first attempt, not before: the chapter asks you to write the code yourself.
"""
_SKIPPED_DIRS = frozenset({"__pycache__", "_course", ".ipynb_checkpoints"})


def package_files() -> list[tuple[str, Path]]:
    """Every file of the package as (name relative to the package, path), tooling data included.

    Left out: caches, hidden files, a wheel's packaged course files (``_course/``) and a copy's
    own target folder (a new copy gets a fresh one).
    """
    files = []
    for path in sorted(PACKAGE.rglob("*")):
        relative = path.relative_to(PACKAGE)
        name = relative.as_posix()
        if not path.is_file() or name.startswith(f"{TARGET_FOLDER}/"):
            continue
        if any(part in _SKIPPED_DIRS or part.startswith(".") for part in relative.parts):
            continue
        if path.suffix in (".pyc", ".pyo"):
            continue
        files.append((name, path))
    return files


def _is_marked(source: str) -> bool:
    return any(_BEGIN.match(line) for line in source.splitlines())


def reference_sources() -> dict[str, str]:
    """The LAB-marked reference modules by file name: the package itself, or a copy's target.

    Where the lesson package has neither (a browser tab's ``check`` tests a copy in memory that
    holds no tooling), the package this tooling loads from: the installed wheel there.
    Raises :class:`PracticeError` in a practice copy made before copies carried their target.
    """
    shipped = PACKAGE / TARGET_FOLDER
    if shipped.is_dir():
        return {
            path.relative_to(shipped).as_posix(): path.read_text(encoding="utf-8")
            for path in sorted(shipped.rglob("*.py"))
        }
    sources = {}
    for name, path in package_files():
        if path.suffix == ".py" and name != "course/copies/starters.py":
            text = path.read_text(encoding="utf-8")
            if _is_marked(text):
                sources[name] = text
    tooling = Path(__file__).resolve().parents[2]
    if not sources and tooling != PACKAGE.resolve():
        found = {path.name: path.read_text(encoding="utf-8") for path in sorted(tooling.glob("*.py"))}
        sources = {name: text for name, text in found.items() if _is_marked(text)}
    if not sources:
        raise PracticeError(
            f"这个练习副本里没有 target（pi_course/{TARGET_FOLDER}/）：它是用旧版本的 pi_course 创建的。"
            "请在参考仓库里（或 pip install 之后）重新运行 python -m pi_course practice 05 新目录。"
        )
    return sources


def starter_sources() -> dict[str, str]:
    """Every module of the package in its starter form, by file name."""
    reference = reference_sources()
    sources = {}
    for name, path in package_files():
        if path.suffix == ".py":
            text = reference.get(name) or path.read_text(encoding="utf-8")
            sources[name] = make_starter(text)
    return sources


def without_markers(source: str) -> str:
    """The reference without its LAB marker lines: what the target looks like to a reader."""
    return "".join(
        line
        for line in source.splitlines(keepends=True)
        if not (_BEGIN.match(line.rstrip("\n")) or _END.match(line.rstrip("\n")))
    )
