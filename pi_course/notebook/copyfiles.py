"""A practice copy's files from a notebook: put one back to its starter, or take the whole copy away.

The browser edition has no terminal and keeps the copy in the browser's storage, so these are the
notebook's way: ``reset("pi_course/outbound.py")`` writes that file's starter over it (nothing else
changes) and ``download_copy()`` packs the copy into one zip the browser downloads. Both work in a
local copy too (the zip is then written next to the copy).
"""

from __future__ import annotations

import base64
import html
import io
import json
import tempfile
import zipfile
from pathlib import Path, PurePosixPath

from ..course.copies.locate import find_course_tree, is_practice_copy
from ..course.copies.practice import create_practice
from ..course.edition import IN_A_TAB

__all__ = ["copy_root", "download_copy", "reset", "starter_of", "zip_copy"]

# What never goes into the zip: caches the kernel and JupyterLab write beside the learner's files.
_LEFT_OUT = frozenset({"__pycache__", ".ipynb_checkpoints", ".pytest_cache"})


class CopyFileError(ValueError):
    """A file that cannot be reset or a folder that is no practice copy; the message is one line."""


def copy_root(start: str | Path | None = None) -> Path:
    """The practice copy at or above ``start`` (default: the notebook's folder)."""
    folder = Path(start if start is not None else Path.cwd()).resolve()
    root = find_course_tree(folder)
    if root is None or not is_practice_copy(root):
        raise CopyFileError(
            f"{folder} 不在练习副本里：请在 practice/ 里的笔记本中运行（浏览器版），"
            "或用 python -m pi_course practice 05 DIR 创建的副本里的笔记本。"
        )
    return root


def _relative(root: Path, file: str | Path) -> PurePosixPath:
    """``file`` as a path inside the copy: ``pi_course/sse.py``, ``sse.py`` or a path under the copy."""
    path = Path(file)
    if path.is_absolute():
        try:
            return PurePosixPath(path.resolve().relative_to(root).as_posix())
        except ValueError:
            raise CopyFileError(f"{file} 不在练习副本 {root} 里。") from None
    relative = PurePosixPath(path.as_posix())
    if relative.parts[:1] == (root.name,) and not (root / relative).exists():
        relative = PurePosixPath(*relative.parts[1:])  # "practice/pi_course/sse.py" from the site's root
    if len(relative.parts) == 1 and not (root / relative).exists():
        relative = "pi_course" / relative  # "sse.py": the lesson file of that name
    if ".." in relative.parts:
        raise CopyFileError(f"{file}：要给出练习副本里的文件，例如 pi_course/outbound.py。")
    return relative


def starter_of(relative: str | PurePosixPath) -> str:
    """The starter text of one file of a practice copy: that file in a brand-new copy."""
    with tempfile.TemporaryDirectory(prefix="pi-course-starter-") as scratch:
        fresh = create_practice(Path(scratch) / "copy")
        target = fresh / relative
        if not target.is_file():
            raise CopyFileError(
                f"{relative} 不是练习副本起点里的文件，没有可恢复的版本"
                "（要恢复的是例如 pi_course/outbound.py、notebooks/05-1-outbound.ipynb）。"
            )
        return target.read_text(encoding="utf-8")


def reset(file: str | Path, *, start: str | Path | None = None) -> None:
    """Write ``file``'s starter over it (only that file) and say in one line what to do next."""
    root = copy_root(start)
    relative = _relative(root, file)
    text = starter_of(relative)
    target = root / relative
    before = target.read_text(encoding="utf-8") if target.is_file() else None
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    if before == text:
        print(f"{relative} 本来就是起点版本，没有改动。")
    elif IN_A_TAB:
        _reload_open_editor(target, relative)
    else:
        print(
            f"已把 {relative} 恢复成起点版本（你的改动已被替换，其他文件没动）。"
            "如果编辑器里开着它，关掉标签页再打开；然后重启内核（Kernel → Restart Kernel）再从第一格运行。"
        )


def _reload_open_editor(target: Path, relative: PurePosixPath) -> None:
    """In a browser tab: the editor open on ``target`` reloads it (the site's boot script does it),
    so no tab keeps the old text, whose next save would undo the reset."""
    from IPython.display import display

    from pi_course_here import BROWSER_STORAGE

    path = target.relative_to(BROWSER_STORAGE).as_posix() if target.is_relative_to(BROWSER_STORAGE) else ""
    said = f"已把 {relative} 恢复成起点版本（你的改动已被替换，其他文件没动）。"
    restart = "然后重启内核（Kernel → Restart Kernel）再从第一格运行。"
    quoted = json.dumps(path).replace("<", "\\u003c")  # a JS string that cannot end the script element
    script = (
        "<script>(() => { const n = window.piCourseRevert ? window.piCourseRevert("
        f"{quoted}) : -1; const s = document.currentScript.parentElement.querySelector"
        "('.pi-course-reverted'); if (s) s.textContent = n > 0 ? '编辑器里开着的它已重新载入起点版本；' : "
        "n === 0 ? '' : '如果编辑器里开着它，关掉标签页再打开；'; })()</script>"
    )
    bundle = {
        "text/html": f'<div>{html.escape(said)}<span class="pi-course-reverted"></span>'
        f"{html.escape(restart)}{script}</div>",
        "text/plain": f"{said}{restart}",
    }
    display(bundle, raw=True)  # type: ignore[no-untyped-call]


def zip_copy(root: Path) -> tuple[bytes, int]:
    """The copy as one zip (its folder name at the top) and how many files it holds."""
    buffer = io.BytesIO()
    count = 0
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(root.rglob("*")):
            relative = path.relative_to(root)
            if not path.is_file() or any(part in _LEFT_OUT for part in relative.parts):
                continue
            if path.suffix in (".pyc", ".pyo"):
                continue
            archive.writestr(f"{root.name}/{relative.as_posix()}", path.read_bytes())
            count += 1
    return buffer.getvalue(), count


def download_copy(*, start: str | Path | None = None) -> Path | None:
    """The whole practice copy as one zip: downloaded by the browser, or written next to the copy.

    In the browser the zip is built from the browser's storage (the learner's edits included) and
    offered as a download link the page follows once; locally it is ``<copy>.zip`` beside the copy.
    """
    root = copy_root(start)
    data, count = zip_copy(root)
    name = f"{root.name}-05.zip"
    if not IN_A_TAB:
        target = root.parent / name
        target.write_bytes(data)
        print(f"已打包 {count} 个文件：{target}（{len(data) / 1024:.0f} KB）")
        return target
    from IPython.display import display

    size = f"{len(data) / 1024:.0f} KB"
    link = (
        f'<a class="pi-course-download" download="{html.escape(name)}" '
        f'href="data:application/zip;base64,{base64.b64encode(data).decode()}">'
        f"下载 {html.escape(name)}</a>"
    )
    # Trusted output (the cell just ran) follows the link once; a reopened notebook shows only the link.
    script = (
        "<script>(() => { const a = document.currentScript.parentElement.querySelector"
        "('a.pi-course-download'); if (a && !a.dataset.clicked) { a.dataset.clicked = '1'; a.click(); } })()"
        "</script>"
    )
    said = f"练习副本 {root.name}/ 的 {count} 个文件（{size}），你改过的文件也在里面"
    bundle = {
        "text/html": f"<div>{link}：{html.escape(said)}。没有自动开始下载，就点这个链接。{script}</div>",
        "text/plain": f"{name}：{said}（下载链接只在浏览器里显示）",
    }
    display(bundle, raw=True)  # type: ignore[no-untyped-call]
    return None
