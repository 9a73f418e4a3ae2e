"""``practice 05 DIR``: a standalone practice copy, built aside and moved into place.

The copy holds the package in its starter form (:mod:`.starters`), its target, the chapter's test
files, clean notebooks, ``LEARNING.md`` (its step table from :mod:`pi_course.chapter.steps`) and
the GitHub Classroom workflow (:mod:`.classroom`).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
import sys
from pathlib import Path
from typing import Literal

from ...chapter.notebooks import fit_first_box
from ...chapter.steps import CHAPTER_TOTAL, FOCUSED_TEST, SHIPPED_TESTS, START_NOTEBOOK, STEPS
from ...provider.corpus import load_index
from ..edition import IN_A_TAB
from ..oserrors import reason as said_reason
from .classroom import classroom_workflow
from .locate import CACHE_FILE, PACKAGE, copies_below, course_root, find_course_tree, is_practice_copy, named
from .points import DEFAULT_POINTS, Points
from .pythons import course_python, missing_packages, name_of, record, use_instead
from .starters import (
    TARGET_FOLDER,
    TARGET_README,
    PracticeError,
    package_files,
    reference_sources,
    starter_sources,
)

# The answer key sits in the copy (check, checkpoint --diff and a fresh practice read it); its
# README says first, in the learner's language, that it is the answer (the browser edition also
# marks every file opened from it: tools/lite/boot.js).
TARGET_WARNING = """# 先别看：这里是第 05 章的答案（target）

这个文件夹里是参考实现：5.1–5.4 要你自己写的代码，每一段都用 LAB 5.x 的开始、结束注释标了出来。
先在 `pi_course/` 顶层的五个文件里自己写，检查点打印「完成」之后再来对照。这里的文件不要改：
`check`、`checkpoint 05 --diff` 和 `practice`（从这份副本再生成起点）都读它们。

"""


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


def create_practice(destination: str | Path, points: Points | None = None) -> Path:
    """Write a standalone practice copy to ``destination`` (which must be absent or empty).

    The copy is built in a hidden sibling folder and renamed into place at the end, so a failure
    at any point leaves nothing behind (folders created for the path are removed too). Every
    problem is a :class:`PracticeError` with a one-line message.
    """
    target = Path(destination).expanduser().absolute()
    problem = destination_problem(target)
    if problem is not None:
        raise PracticeError(problem)
    created = _make_parents(target.parent)
    scratch = target.parent / f".{target.name}.partial-{os.getpid()}-{secrets.token_hex(4)}"
    was_empty_folder = target.exists()
    try:
        scratch.mkdir()
        _write_copy(scratch, points)
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


def destination_problem(target: Path) -> str | None:
    """Why a copy cannot be made at ``target`` (one line with the fix), before anything is written."""
    python = name_of(Path(sys.executable))
    if target.is_file():
        return (
            f"{target} 是一个文件，不是文件夹：practice 要一个新的（或空的）文件夹，"
            "换一个路径（这个文件没有改动）。"
        )
    copy = find_course_tree(target) if target.is_dir() else None
    if copy is not None and is_practice_copy(copy):
        where = "这里已经是你的练习副本" if copy == target else f"{target} 在你的练习副本 {copy} 里面"
        return (
            f"{where}：接着做就 cd {copy}，再运行 {python} -m pi_course check 05"
            "（没有改动任何文件）；要从头再来，换一个新目录。"
        )
    if target.is_dir() and any(target.iterdir()):
        below = copies_below(target)
        if below:
            return (
                f"{target} 不是空目录，它下面已经有练习副本：{named(below)}。"
                f"接着做就 cd {below[0]}；要一份新的，换一个新目录（原有内容没有改动）。"
            )
        return f"{target} 已存在且不是空目录；请换一个新目录，原有内容没有改动。"
    return None


def python_problem() -> str | None:
    """Why the running Python cannot go on with the copy it would make (no [lab]), and which one can."""
    missing = missing_packages()
    if not missing or IN_A_TAB:
        return None
    command = " ".join(["-m pi_course", *sys.argv[1:]])
    return (
        f"这个 Python（{sys.executable}）没有安装 {'、'.join(missing)}，"
        f"用它做的副本没法检查、也打不开笔记本；没有创建任何文件。"
        + use_instead(course_python(course_root()), command)
    )


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
    reason = said_reason(error)
    return f"无法创建练习目录 {target}：{reason}。请换一个可以写入的新目录路径（没有留下任何文件）。"


# A copy pushed to GitHub Classroom commits the learner's work, never what check keeps for itself.
GITIGNORE = (
    f"# what check keeps for this machine (pi_course/course/checker/stepcache.py)\n{CACHE_FILE.parent}/\n"
)


def _write_copy(root: Path, points: Points | None = None) -> None:
    """A learner's copy: the course tree, clean notebooks, LEARNING.md, the classroom workflow and a
    ``.gitignore`` for check's kept results."""
    write_course_tree(root)
    (root / "notebooks").mkdir()
    for notebook in sorted(_course_file("notebooks").glob("05-*.ipynb")):
        (root / "notebooks" / notebook.name).write_text(_without_outputs(notebook), encoding="utf-8")
    (root / "LEARNING.md").write_text(learning_md(), encoding="utf-8")
    (root / ".gitignore").write_text(GITIGNORE, encoding="utf-8")
    workflows = root / ".github" / "workflows"
    workflows.mkdir(parents=True)
    workflow = classroom_workflow(points or DEFAULT_POINTS, _course_file("tests", FOCUSED_TEST))
    (workflows / "classroom.yml").write_text(workflow, encoding="utf-8")
    if not IN_A_TAB:
        record(root)  # the Python that made it: named when another one is used in the copy


def write_course_tree(root: Path) -> None:
    """What check runs on: the package with its starters and target, the chapter's test files.

    A learner's copy adds notebooks and guides to it; ``grade`` assembles a copy's lesson files into it.
    """
    package = root / "pi_course"
    starters = starter_sources()
    for name, path in package_files():
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
    (shipped / "README.md").write_text(TARGET_WARNING + TARGET_README, encoding="utf-8")
    (root / "tests").mkdir()
    for name in ("conftest.py", *SHIPPED_TESTS):
        if name != FOCUSED_TEST and name != "conftest.py" and not _has_course_file("tests", name):
            continue  # an older install without these checks: check says it skipped them
        shutil.copyfile(_course_file("tests", name), root / "tests" / name)


def _has_course_file(*parts: str) -> bool:
    try:
        _course_file(*parts)
    except PracticeError:
        return False
    return True


def _without_outputs(notebook: Path) -> str:
    """A learner starts from clean notebooks: no reference outputs, counts or widget state."""
    data = fit_first_box(json.loads(notebook.read_text(encoding="utf-8")), "practice")
    for cell in data["cells"]:
        if cell["cell_type"] == "code":
            cell["outputs"], cell["execution_count"] = [], None
    data["metadata"].pop("widgets", None)
    return json.dumps(data, ensure_ascii=False, indent=1) + "\n"


# The server's root is the copy (pi_course/ beside notebooks/); the URL it prints and opens is 05-0.
LAB_START = f"/lab/tree/{START_NOTEBOOK}"
LAB_ARGUMENTS = f"lab --LabApp.default_url={LAB_START}"


def this_python() -> str:
    """How to name the running interpreter in a command: ``python`` when that is it, else its path.

    A copy made with ``.venv/bin/python -m pi_course practice …`` is then told to go on with the
    same ``.venv/bin/python``, which has the course; the ``python`` on PATH may not.
    """
    return name_of(Path(sys.executable))


def next_steps(target: Path) -> str:
    """What ``practice`` prints once the copy is made: where it is and the first three commands."""
    python = this_python()
    root = " --allow-root" if hasattr(os, "geteuid") and os.geteuid() == 0 else ""
    return "\n".join(
        [
            f"练习目录已创建：{target}",
            "下一步（LEARNING.md 开头的“先做这个”）：",
            f"  cd {target}",
            f"  {python} -m pi_course check 05    # 先看第一次红灯",
            f"  {python} -m jupyter {LAB_ARGUMENTS}{root}    # 在 05-0 打开；pi_course/ 就在 notebooks/ 旁边",
        ]
    )


Edition = Literal["terminal", "browser"]


def provider_count() -> int:
    """How many real providers the recordings come from (05-7 replays them): one number everywhere."""
    return len({entry["provider"] for entry in load_index()["recordings"] if entry["provider"]})


def learning_md(edition: Edition | None = None, python: Path | None = None) -> str:
    """The copy's ``LEARNING.md``: the template, with its table of the four steps from ``STEPS``.

    ``edition`` keeps the template's terminal or browser blocks (the browser edition has no
    terminal: its steps are notebook calls); by default the browser's under Pyodide. ``python``
    (default: the running one) is the Python named where the terminal edition advises one.
    """
    python = Path(sys.executable).absolute() if python is None else python
    activate = python.parent / "activate"
    if edition is None:
        edition = "browser" if IN_A_TAB else "terminal"
    template = (PACKAGE / "course" / "copies" / "templates" / "LEARNING.md").read_text(encoding="utf-8")
    rows = [
        f"| {step.number} {step.label} | `{step.notebook}` | {'、'.join(f'`{name}`' for name in step.files)} "
        f"| `-k {step.keyword}` | {step.expected}/{step.expected} |"
        for step in STEPS
    ]
    rows.append(f"| 整章 | | | `tests/{FOCUSED_TEST}` | {CHAPTER_TOTAL}/{CHAPTER_TOTAL} |")
    browser = edition == "browser"
    text = _edition_blocks(template, edition)
    for name, value in {
        "@STEP_TABLE@": "\n".join(rows),
        "@CHECK_STEP@": '`check(step="5.1")`' if browser else "`python -m pi_course check 05 --step 5.1`",
        "@CHECK_ALL@": "`check()`" if browser else "`check 05`",
        "@PROVIDERS@": str(provider_count()),
        "@LAB@": LAB_ARGUMENTS,
        "@PYTHON@": str(python),
        "@ACTIVATE@": f"`source {activate}` 之后再运行，" if activate.is_file() else "",
    }.items():
        text = text.replace(name, value)
    return text


def _edition_blocks(text: str, edition: Edition) -> str:
    """``text`` without the other edition's ``<!-- BEGIN x -->…<!-- END x -->`` blocks; its own unmarked."""
    other = "browser" if edition == "terminal" else "terminal"
    text = re.sub(rf"(?ms)^<!-- BEGIN {other} -->\n.*?^<!-- END {other} -->\n", "", text)
    text = re.sub(rf"(?s)<!-- BEGIN {other} -->.*?<!-- END {other} -->", "", text)
    text = re.sub(rf"(?m)^<!-- (?:BEGIN|END) {edition} -->\n", "", text)
    return re.sub(rf"<!-- (?:BEGIN|END) {edition} -->", "", text)
