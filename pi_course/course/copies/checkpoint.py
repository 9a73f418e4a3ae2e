"""``python -m pi_course checkpoint 05``: where the chapter starts and ends, and the target diff.

The summary is derived, not written: the steps, their files and focused-test counts come from
:mod:`pi_course.chapter.steps`, and what each step writes in each file (the functions and
classes holding its marked regions) from the LAB-marked reference sources.
"""

from __future__ import annotations

import ast
import os
import re
import sys
from pathlib import Path

from ...chapter.steps import FOCUSED_TEST, STEPS, Step
from ..exits import EXIT_DONE, EXIT_FAILED, EXIT_USAGE
from .diffs import DIFF_FILES, target_diff
from .locate import course_root, find_course_tree, is_practice_copy
from .starters import TARGET_FOLDER, PracticeError, lab_regions, reference_sources

_NAME = re.compile(r"\b[A-Za-z_]\w*\b")


def _definitions(tree: ast.Module) -> list[tuple[int, int, str, bool]]:
    """Every function and class as (first line, last line, qualified name, is a class)."""
    found: list[tuple[int, int, str, bool]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                name = f"{prefix}{child.name}"
                is_class = isinstance(child, ast.ClassDef)
                found.append((child.lineno, child.end_lineno or child.lineno, name, is_class))
                visit(child, f"{name}.")

    visit(tree, "")
    return found


def lab_names(source: str) -> dict[str, list[str]]:
    """What each step writes in one LAB-marked module, by step: ``{"5.1": ["ToolDefinition", …]}``.

    A region inside a function names the function; a class-level region names the field it adds
    (``AgentContext.tools``); a module-level region names the classes and functions inside it,
    or else what it exports (``导出 ToolDefinition``).
    """
    lines = source.splitlines()
    definitions = _definitions(ast.parse(source))
    names: dict[str, list[str]] = {}
    for step, first, number in lab_regions(source):
        region = "\n".join(lines[first : number - 1])
        around = [d for d in definitions if d[0] < first < d[1]]
        if around:
            _, _, name, is_class = max(around)  # the innermost
            if is_class:
                field = re.match(r"\s*(\w+)\s*:", region)
                shown = f"{name}.{field[1]}" if field else name
            else:
                shown = f"{name}()"
        else:
            inside = [d for d in definitions if first < d[0] < number and "." not in d[2]]
            shown = "、".join(f"{d[2]}" if d[3] else f"{d[2]}()" for d in inside)
            if not shown:
                exported = [name for name in _NAME.findall(region) if name not in names.get(step, [])]
                shown = "导出 " + "、".join(dict.fromkeys(exported)) if exported else ""
        if not shown or shown.rsplit(".", 1)[-1].startswith("__"):
            continue  # a dunder (AgentContext.__post_init__) belongs with the field it serves
        listed = names.setdefault(step, [])
        if shown not in listed:
            listed.append(shown)
    return names


def _step_files(step: Step, sources: dict[str, str]) -> list[tuple[str, list[str]]]:
    """The files a step edits (its own, then any other lesson file with its LAB regions)."""
    by_file = {name: lab_names(text).get(step.number, []) for name, text in sources.items()}
    files = [path.removeprefix("pi_course/") for path in step.files]
    files += [name for name in DIFF_FILES if name not in files and by_file.get(name)]
    return [(name, by_file.get(name, [])) for name in files]


def summary() -> str:
    """The checkpoint's text: start, end, each step's files and what it writes, the commands."""
    try:
        sources = reference_sources()
    except PracticeError:  # a copy made before copies carried their target: files without names
        sources = {}
    counts = " + ".join(str(step.expected) for step in STEPS)
    total = sum(step.expected for step in STEPS)
    lines = [
        "Checkpoint 05 · 接入 OpenAI-compatible Provider",
        "起点（parent）：第 04 章完成。`python -m pi_course practice 05 DIR` 生成这个起点：",
        "  没有 ToolDefinition，AgentContext 没有 tools，第 05 章的函数都是桩。",
        f"终点（target）：{total} 项聚焦测试全部通过（{counts}），本章之外的检查也全部通过。",
        f"  练习副本里，target 放在 pi_course/{TARGET_FOLDER}/（LAB 区域有标记；先别看）。",
        "实践步骤（教学文件在 pi_course/ 顶层；provider/、course/、notebook/ 是工具，不用改）：",
    ]
    for step in STEPS:
        lines.append(f"  {step.number} {step.label}：{step.expected} 项聚焦测试（-k {step.keyword}）")
        for name, written in _step_files(step, sources):
            what = "、".join(written)
            lines.append(f"      pi_course/{name:<14}{what}".rstrip())
    lines += [
        f"聚焦测试：tests/{FOCUSED_TEST}",
        "命令：",
        "  python -m pi_course practice 05 DIR        创建练习目录",
        "  python -m pi_course check 05 [--step 5.x]  逐步检查（在副本里，或加 --path DIR）",
        f"  python -m pytest tests/{FOCUSED_TEST} -k outbound   直接运行一步的聚焦测试",
        "  python -m pytest --nbval-lax notebooks/    讲师检查学习者的笔记本",
        "  python -m pi_course checkpoint 05 --diff   target diff：starter → target（先别看）",
        "  python -m pi_course checkpoint 05 --diff --mine   你的文件 → target",
    ]
    return "\n".join(lines) + "\n"


def checkpoint_command(diff: bool = False, mine: bool = False) -> int:
    """``checkpoint 05 [--diff [--mine]]``: the summary, or a target diff on stdout."""
    if not diff:
        if mine:
            print("checkpoint 05 --mine 要和 --diff 一起用：python -m pi_course checkpoint 05 --diff --mine",
                  file=sys.stderr)  # fmt: skip
            return EXIT_USAGE
        print(summary(), end="")
        return EXIT_DONE
    # --mine from a copy's notebooks/ runs the reference's CLI: diff the copy's files, not its own.
    copy = find_course_tree(Path.cwd()) if mine else None
    try:
        if copy is not None and is_practice_copy(copy):
            text = target_diff(mine=True, package=copy / "pi_course")
        else:
            text = target_diff(mine=mine)
    except PracticeError as error:
        print(str(error), file=sys.stderr)
        return EXIT_FAILED
    if mine and not text:
        print("你的教学文件与 target 相同（mine → target 没有差别）。")
        return EXIT_DONE
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:  # `checkpoint 05 --diff | head`: the reader left; so do we, quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return EXIT_DONE


# --- check() from a notebook ----------------------------------------------------------------------


def tested_tree(path: str | Path | None = None, cwd: Path | None = None) -> tuple[Path, str]:
    """The tree ``check()`` tests and the first line it prints, naming that tree.

    Without ``path``: the practice copy the notebook belongs to (its ``notebooks/`` is the
    kernel's folder), found on disk whatever ``pi_course`` the kernel imported; outside a copy,
    the reference (the course tree around ``cwd``, else the imported package's).
    """
    here = cwd or Path.cwd()
    if path is not None:
        found = find_course_tree(Path(path).expanduser().resolve())
        root = found or Path(path).expanduser().resolve()
    else:
        root = find_course_tree(here) or find_course_tree(course_root()) or course_root()
    if is_practice_copy(root):
        return root, f"检查的练习副本：{root}"
    return root, f"检查的是参考实现（{_shown(root / 'pi_course', here)}），不是练习副本"


def _shown(folder: Path, cwd: Path) -> str:
    """``../pi_course`` from a clone's ``notebooks/`` (the same on every machine), else the full path."""
    try:
        near = cwd in folder.parents or folder.parent in cwd.parents
        return os.path.relpath(folder, cwd) if near else str(folder)
    except ValueError:  # another drive
        return str(folder)
