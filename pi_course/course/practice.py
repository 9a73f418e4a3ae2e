"""Practice copies: the chapter's starting point, generated from the reference source.

The reference marks what a learner writes, the way nbgrader marks solutions::

    # BEGIN LAB 5.2                      the body becomes `raise NotImplementedError(...)`
    # BEGIN LAB 5.4 (starter: CODE)      the body becomes CODE, a naive first version
    # BEGIN LAB 5.1 REMOVE               the lines disappear (ToolDefinition, AgentContext.tools)
    # END LAB 5.x [REMOVE]

So there is one source of truth: a starter is always the reference minus its marked regions.
"""

from __future__ import annotations

import contextlib
import difflib
import json
import os
import re
import secrets
import shutil
from collections.abc import Collection
from pathlib import Path

from ..chapter.steps import BEYOND_TEST, FOCUSED_TEST, RULES_TEST, STEPS
from .locate import PACKAGE, course_root

TEACHING_FILES = ("protocol.py", "outbound.py", "adapter.py", "sse.py", "transport.py")
_BEGIN = re.compile(
    r"^(?P<indent>\s*)# BEGIN LAB (?P<step>\d\.\d)(?P<remove> REMOVE)?(?: \(starter: (?P<starter>.*)\))?$"
)
_END = re.compile(r"^\s*# END LAB (?P<step>\d\.\d)(?: REMOVE)?$")
_LABELS = {step.number: step.label for step in STEPS}
# The comment on a generator stub's `if False: yield` (LEARNING.md says the same in Chinese).
GENERATOR_NOTE = "never runs: it only keeps this a generator (harmless if left in)"


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
_TARGET_README = """# The chapter's target (do not edit)

These are the reference versions of the lesson modules, the state after practice 5.4. The code
between `# BEGIN LAB 5.x` and `# END LAB 5.x` is what each practice step writes.

- `python -m pi_course checkpoint 05 --diff` prints the target diff: starter → target.
- `python -m pi_course checkpoint 05 --diff --mine` prints your files → target.
- `python -m pi_course practice 05 NEWDIR` (run in this copy) makes a fresh starter from them.

Read them after a first attempt, not before: the chapter asks you to write the code yourself.
"""
_SKIPPED_DIRS = frozenset({"__pycache__", "_course", ".ipynb_checkpoints"})


def _package_files() -> list[tuple[str, Path]]:
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

    Raises :class:`PracticeError` in a practice copy made before copies carried their target.
    """
    shipped = PACKAGE / TARGET_FOLDER
    if shipped.is_dir():
        return {
            path.relative_to(shipped).as_posix(): path.read_text(encoding="utf-8")
            for path in sorted(shipped.rglob("*.py"))
        }
    sources = {}
    for name, path in _package_files():
        if path.suffix == ".py" and name != "course/practice.py":
            text = path.read_text(encoding="utf-8")
            if _is_marked(text):
                sources[name] = text
    if not sources:
        raise PracticeError(
            f"这个练习副本里没有 target（pi_course/{TARGET_FOLDER}/）：它是用旧版本的 pi_course 创建的。"
            "请在参考仓库里（或 pip install 之后）重新运行 python -m pi_course practice 05 新目录。"
        )
    return sources


def _as_practice(name: str, text: str) -> str:
    if name == "__init__.py":
        return text.replace('EDITION = "reference"', 'EDITION = "practice"', 1)
    return text


def starter_sources() -> dict[str, str]:
    """Every module of the package in its starter form, by file name."""
    reference = reference_sources()
    sources = {}
    for name, path in _package_files():
        if path.suffix == ".py":
            text = reference.get(name) or path.read_text(encoding="utf-8")
            sources[name] = _as_practice(name, make_starter(text))
    return sources


def _course_file(*parts: str) -> Path:
    """A course file next to the package (a clone or a copy) or packaged inside it (a wheel)."""
    for base in (course_root(), PACKAGE / "_course"):
        candidate = base.joinpath(*parts)
        if candidate.exists():
            return candidate
    raise PracticeError(
        f"找不到课程文件 {'/'.join(parts)}（在 {course_root()} 和 pi_course/_course 下都没有）；"
        "请在完整的参考仓库、pip 安装的 pi-course 或完整的练习副本里运行 practice。"
    )


def create_practice(destination: str | Path) -> Path:
    """Write a standalone practice copy to ``destination`` (which must be absent or empty).

    The copy is built in a hidden sibling folder and renamed into place at the end, so a failure
    at any point leaves nothing behind (folders created for the path are removed too). Every
    problem is a :class:`PracticeError` with a one-line message.
    """
    target = Path(destination).expanduser().absolute()
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise PracticeError(f"{target} 已存在且不是空目录；请换一个新目录，原有内容没有改动。")
    created = _make_parents(target.parent)
    scratch = target.parent / f".{target.name}.partial-{os.getpid()}-{secrets.token_hex(4)}"
    was_empty_folder = target.exists()
    try:
        scratch.mkdir()
        _write_copy(scratch)
        if was_empty_folder:
            target.rmdir()  # empty, checked above; a rename cannot replace it everywhere
        scratch.rename(target)
    except BaseException as error:
        shutil.rmtree(scratch, ignore_errors=True)
        if was_empty_folder and not target.exists():
            with contextlib.suppress(OSError):
                target.mkdir()  # give the learner's empty folder back
        for folder in reversed(created):
            with contextlib.suppress(OSError):
                folder.rmdir()
        if isinstance(error, OSError):
            raise PracticeError(_cannot_create(target, error)) from None
        raise
    return target


def _make_parents(folder: Path) -> list[Path]:
    """Create ``folder`` and its missing ancestors; return the ones created, outermost first."""
    missing = []
    for candidate in (folder, *folder.parents):
        if candidate.exists():
            break
        missing.append(candidate)
    missing.reverse()
    created: list[Path] = []
    try:
        for candidate in missing:
            candidate.mkdir()
            created.append(candidate)
    except OSError as error:
        for done in reversed(created):
            with contextlib.suppress(OSError):
                done.rmdir()
        raise PracticeError(_cannot_create(folder, error)) from None
    if not folder.is_dir():
        raise PracticeError(f"无法在 {folder} 里创建练习目录：它不是一个目录。请换一个新目录路径。")
    return created


def _cannot_create(target: Path, error: OSError) -> str:
    reason = error.strerror or str(error)
    return f"无法创建练习目录 {target}：{reason}。请换一个可以写入的新目录路径（没有留下任何文件）。"


def _write_copy(root: Path) -> None:
    package = root / "pi_course"
    starters = starter_sources()
    for name, path in _package_files():
        destination = package / name
        destination.parent.mkdir(parents=True, exist_ok=True)
        if name in starters:
            destination.write_text(starters[name], encoding="utf-8")
        else:
            shutil.copyfile(path, destination)
    shipped = package / TARGET_FOLDER
    shipped.mkdir(parents=True)
    for name, text in reference_sources().items():
        (shipped / name).parent.mkdir(parents=True, exist_ok=True)
        (shipped / name).write_text(text, encoding="utf-8")
    (shipped / "README.md").write_text(_TARGET_README, encoding="utf-8")
    (root / "tests").mkdir()
    for name in (FOCUSED_TEST, "conftest.py", BEYOND_TEST, RULES_TEST):
        if name in (BEYOND_TEST, RULES_TEST) and not _has_course_file("tests", name):
            continue  # an older install without these checks: check says it skipped them
        shutil.copyfile(_course_file("tests", name), root / "tests" / name)
    (root / "notebooks").mkdir()
    for notebook in sorted(_course_file("notebooks").glob("05-*.ipynb")):
        (root / "notebooks" / notebook.name).write_text(_without_outputs(notebook), encoding="utf-8")
    shutil.copyfile(package / "course" / "templates" / "LEARNING.md", root / "LEARNING.md")
    workflows = root / ".github" / "workflows"
    workflows.mkdir(parents=True)
    (workflows / "classroom.yml").write_text(classroom_workflow(), encoding="utf-8")


# What `check 05` needs in a copy's CI (the copy's own pi_course is what runs): pytest and anyio for
# the tests, httpx for the transport, uvicorn and starlette for the local provider of the beyond checks.
CI_REQUIREMENTS = ("httpx>=0.27", "pytest>=8.0", "anyio>=4.3", "uvicorn>=0.30", "starlette>=0.37")
CHAPTER_RUNNER = "chapter-05"


def classroom_workflow() -> str:
    """The copy's GitHub Classroom autograding workflow: one graded step per practice step.

    Each step is worth its focused tests (1 + 3 + 5 + 2 points); the last runs the whole
    ``check 05`` (beyond checks included) for no points, so the run fails until the chapter is done.
    """
    template = (PACKAGE / "course" / "templates" / "classroom.yml").read_text(encoding="utf-8")
    graders = [
        (
            f"step-{step.number.replace('.', '-')}",
            f"{step.number} {step.label}",
            f"--step {step.number}",
            step.expected,
        )
        for step in STEPS
    ]
    graders.append((CHAPTER_RUNNER, "第 05 章：完成（聚焦测试与本章之外的检查）", "", 0))
    blocks = [
        f'      - name: "{title}"\n        id: {runner}\n'
        "        uses: classroom-resources/autograding-command-grader@v1\n        with:\n"
        f'          test-name: "{title}"\n          command: python -m pi_course check 05 {flags}'.rstrip()
        + f"\n          timeout: 5\n          max-score: {points}"
        for runner, title, flags, points in graders
    ]
    results = [
        f'          {runner.upper()}_RESULTS: "${{{{ steps.{runner}.outputs.result }}}}"'
        for runner, *_ in graders
    ]
    return (
        template.replace("@REQUIREMENTS@", " ".join(f'"{requirement}"' for requirement in CI_REQUIREMENTS))
        .replace("@GRADERS@", "\n".join(blocks))
        .replace("@RESULTS@", "\n".join(results))
        .replace("@RUNNERS@", ",".join(runner for runner, *_ in graders))
    )


def _has_course_file(*parts: str) -> bool:
    try:
        _course_file(*parts)
    except PracticeError:
        return False
    return True


def _without_outputs(notebook: Path) -> str:
    """A learner starts from clean notebooks: no reference outputs, counts or widget state."""
    data = json.loads(notebook.read_text(encoding="utf-8"))
    for cell in data["cells"]:
        if cell["cell_type"] == "code":
            cell["outputs"], cell["execution_count"] = [], None
    data["metadata"].pop("widgets", None)
    return json.dumps(data, ensure_ascii=False, indent=1) + "\n"


# Files the target diff covers, in the chapter's order; __init__.py carries 5.1's export.
DIFF_FILES = (*TEACHING_FILES, "__init__.py")


def target_diff(*, mine: bool = False, package: Path = PACKAGE) -> str:
    """The target diff: unified diff from starter to target over the lesson files.

    With ``mine``, from ``package``'s current files (a learner's work; by default the running
    package) to the target instead. The same in the reference, a wheel and a practice copy
    (which reads its shipped target).
    """
    reference = reference_sources()
    chunks: list[str] = []
    for name in DIFF_FILES:
        if name not in reference:
            continue
        target = _as_practice(name, without_markers(reference[name]))
        if mine:
            current = package / name
            before = current.read_text(encoding="utf-8") if current.is_file() else ""
            before = _as_practice(name, without_markers(before))
            label = f"mine/pi_course/{name}"
        else:
            before, label = _as_practice(name, make_starter(reference[name])), f"starter/pi_course/{name}"
        chunks += difflib.unified_diff(
            before.splitlines(keepends=True),
            target.splitlines(keepends=True),
            fromfile=label,
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
