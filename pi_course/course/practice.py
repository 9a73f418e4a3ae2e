"""Practice copies: the chapter's starting point, generated from the reference source.

The reference marks what a learner writes, the way nbgrader marks solutions::

    # BEGIN LAB 5.2                      the body becomes `raise NotImplementedError(...)`
    # BEGIN LAB 5.4 (starter: CODE)      the body becomes CODE, a naive first version
    # BEGIN LAB 5.1 REMOVE               the lines disappear (ToolDefinition, AgentContext.tools)
    # END LAB 5.x [REMOVE]

So there is one source of truth: a starter is always the reference minus its marked regions.
"""

from __future__ import annotations

import difflib
import json
import re
import shutil
from collections.abc import Collection
from pathlib import Path

from .checkpoint import PACKAGE, STEPS, course_root

TEACHING_FILES = ("types.py", "outbound.py", "adapter.py", "sse.py", "http.py")
_BEGIN = re.compile(
    r"^(?P<indent>\s*)# BEGIN LAB (?P<step>\d\.\d)(?P<remove> REMOVE)?(?: \(starter: (?P<starter>.*)\))?$"
)
_END = re.compile(r"^\s*# END LAB (?P<step>\d\.\d)(?: REMOVE)?$")
_LABELS = {step.number: step.label for step in STEPS}


class PracticeError(Exception):
    """A practice copy cannot be made (for example, the folder is not empty)."""


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


def _replacement(begin: re.Match[str], region: list[str]) -> list[str]:
    indent, step = begin["indent"], begin["step"]
    if begin["remove"]:
        return []
    if begin["starter"]:
        return [f"{indent}{begin['starter']}  # starter: Lab {step} replaces this line\n"]
    stub = [f'{indent}raise NotImplementedError("Lab {step} {_LABELS[step]} 尚未实现")\n']
    if any(re.search(r"\byield\b", line) for line in region):
        stub.append(f"{indent}yield  # unreachable; keeps this function a generator\n")
    return stub


def starter_sources() -> dict[str, str]:
    """Every module of the package in its starter form, by file name."""
    sources = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        name = path.relative_to(PACKAGE).as_posix()
        if name.startswith("_course/"):  # a wheel's packaged course files are not package code
            continue
        text = make_starter(path.read_text(encoding="utf-8"))
        if name == "__init__.py":
            text = text.replace('EDITION = "reference"', 'EDITION = "practice"', 1)
        sources[name] = text
    return sources


def _course_file(*parts: str) -> Path:
    """A course file next to the package (a clone) or packaged inside it (a wheel)."""
    for base in (course_root(), PACKAGE / "_course"):
        candidate = base.joinpath(*parts)
        if candidate.exists():
            return candidate
    raise FileNotFoundError("/".join(parts))


def create_practice(destination: str | Path) -> Path:
    """Write a standalone practice copy to ``destination`` (which must be absent or empty)."""
    target = Path(destination)
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise PracticeError(f"{target} 已存在且不是空目录；请换一个新目录，原有内容没有改动。")
    package = target / "pi_course"
    package.mkdir(parents=True, exist_ok=True)
    for name, text in starter_sources().items():
        (package / name).parent.mkdir(parents=True, exist_ok=True)
        (package / name).write_text(text, encoding="utf-8")
    (target / "tests").mkdir()
    for name in ("test_05_provider_adapter.py", "conftest.py"):
        shutil.copyfile(_course_file("tests", name), target / "tests" / name)
    (target / "notebooks").mkdir()
    for notebook in sorted(_course_file("notebooks").glob("05-*.ipynb")):
        (target / "notebooks" / notebook.name).write_text(_without_outputs(notebook), encoding="utf-8")
    shutil.copyfile(Path(__file__).parent / "templates" / "LEARNING.md", target / "LEARNING.md")
    return target


def _without_outputs(notebook: Path) -> str:
    """A learner starts from clean notebooks: no reference outputs, counts or widget state."""
    data = json.loads(notebook.read_text(encoding="utf-8"))
    for cell in data["cells"]:
        if cell["cell_type"] == "code":
            cell["outputs"], cell["execution_count"] = [], None
    data["metadata"].pop("widgets", None)
    return json.dumps(data, ensure_ascii=False, indent=1) + "\n"


def target_diff() -> str:
    """The unified diff from starter to reference over the teaching files ("target diff")."""
    starters = starter_sources()
    chunks: list[str] = []
    for name in TEACHING_FILES:
        reference = (PACKAGE / name).read_text(encoding="utf-8")
        chunks += difflib.unified_diff(
            starters[name].splitlines(keepends=True),
            without_markers(reference).splitlines(keepends=True),
            fromfile=f"starter/pi_course/{name}",
            tofile=f"target/pi_course/{name}",
        )
    return "".join(chunks)


def without_markers(source: str) -> str:
    """The reference without its LAB marker lines: what the target looks like to a reader."""
    return "".join(
        line
        for line in source.splitlines(keepends=True)
        if not (_BEGIN.match(line.rstrip("\n")) or _END.match(line.rstrip("\n")))
    )
