"""Learner solutions written from the chapter text, kept as test data (not package code).

Each folder is one learner. Its files are named like the lesson modules (``protocol.py``,
``outbound.py``, ``adapter.py``, ``sse.py``, ``transport.py``, ``__init__.py``) and hold only what
that learner wrote, applied to a fresh practice copy the way a learner edits the starter:

* a top-level function named like a stub of the starter (a function whose body is the
  starter's ``raise NotImplementedError("Lab …")`` or ``# starter: Lab …`` line, method or
  not) gives that stub its body; the starter's signature and docstring stay;
* a top-level class named like one of the starter's top-level classes is merged into it member by
  member: a method named like a stub of that class gives the stub its body, another member named
  like one of the class's replaces it, a new method is added at the class's end; so a learner's
  class holds only what they wrote. A class whose header (bases, decorators) differs, or that
  adds anything but methods (a dataclass's fields), replaces the starter's class whole;
* everything else (imports, helpers, constants) is appended to the module.

So a learner's code keeps working when the reference's given code changes; only a renamed or
removed stub breaks it. :func:`mistake` derives a typical mistake from a learner's code by a
textual replacement that must match exactly once.
"""

from __future__ import annotations

import ast
import hashlib
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

LEARNERS = Path(__file__).parent
NAMES = tuple(
    sorted(path.name for path in LEARNERS.iterdir() if path.is_dir() and not path.name.startswith("_"))
)
STUB_MARKERS = ('raise NotImplementedError("Lab ', "# starter: Lab ")


def _span(node: ast.stmt) -> tuple[int, int]:
    """0-based first line (decorators included) and end line (exclusive) of a statement."""
    decorators = getattr(node, "decorator_list", [])
    first = min([node.lineno, *(d.lineno for d in decorators)])
    assert node.end_lineno is not None
    return first - 1, node.end_lineno


def _body(node: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.stmt]:
    body = node.body
    has_docstring = isinstance(body[0], ast.Expr) and isinstance(
        getattr(body[0], "value", None), ast.Constant
    )
    return body[1:] if has_docstring and len(body) > 1 else body


def merge(starter: str, learner: str) -> str:
    """The starter module with the learner's code applied (see the module docstring)."""
    lines = starter.splitlines(keepends=True)
    tree = ast.parse(starter)
    stubs: dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            start, end = _span(node)
            if any(marker in "".join(lines[start:end]) for marker in STUB_MARKERS):
                stubs.setdefault(node.name, []).append(node)
    classes = {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}

    own = learner.splitlines(keepends=True)
    replacements: list[tuple[int, int, str]] = []
    appended: list[str] = []
    for node in ast.parse(learner).body:
        start, end = _span(node)
        source = "".join(own[start:end])
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name in stubs:
            [target] = stubs.pop(node.name)  # a learner's body for a name that is two stubs is ambiguous
            body = _body(node)
            text = textwrap.dedent("".join(own[body[0].lineno - 1 : node.end_lineno]))
            indent = " " * _body(target)[0].col_offset
            target_body = _body(target)
            replacements.append(
                (target_body[0].lineno - 1, target.end_lineno or 0, textwrap.indent(text, indent))
            )
        elif isinstance(node, ast.ClassDef) and node.name in classes:
            target = classes[node.name]
            members = _members_merged(lines, target, own, node)
            if members is None:
                replacements.append((*_span(target), source))
            else:
                replacements.extend(members)
                for member in node.body:
                    if isinstance(member, ast.FunctionDef | ast.AsyncFunctionDef):
                        stubs.pop(member.name, None)
        elif isinstance(node, ast.ImportFrom) and node.module == "__future__":
            continue
        else:
            appended.append(source)
    for start, end, text in sorted(replacements, reverse=True):
        lines[start:end] = [text]
    merged = "".join(lines)
    if appended:
        merged += "\n\n# --- the learner's own helpers and imports\n\n" + "\n\n".join(appended)
    return merged


def _member_name(node: ast.stmt) -> str | None:
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return node.name
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return node.target.id
    if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
        return node.targets[0].id
    return None


def _is_docstring(node: ast.stmt) -> bool:
    return isinstance(node, ast.Expr) and isinstance(getattr(node, "value", None), ast.Constant)


def _header(node: ast.ClassDef) -> str:
    return ast.dump(ast.ClassDef(node.name, node.bases, node.keywords, [], node.decorator_list))


def _members_merged(
    lines: list[str], target: ast.ClassDef, own: list[str], node: ast.ClassDef
) -> list[tuple[int, int, str]] | None:
    """The replacements that merge the learner's class ``node`` into the starter's ``target`` member
    by member (see the module docstring); None when it must replace the class whole."""
    if _header(node) != _header(target):
        return None
    theirs = {_member_name(member): member for member in target.body}
    replacements: list[tuple[int, int, str]] = []
    added: list[str] = []
    for member in node.body:
        if _is_docstring(member):
            continue
        name = _member_name(member)
        start, end = _span(member)
        text = textwrap.dedent("".join(own[start:end]))
        starter = theirs.get(name) if name is not None else None
        if starter is None:
            if not isinstance(member, ast.FunctionDef | ast.AsyncFunctionDef):
                return None  # a new field or attribute: the class's layout is the learner's
            added.append(text)
            continue
        first, last = _span(starter)
        indent = " " * starter.col_offset
        stub = any(marker in "".join(lines[first:last]) for marker in STUB_MARKERS)
        if stub and isinstance(member, ast.FunctionDef | ast.AsyncFunctionDef):
            assert isinstance(starter, ast.FunctionDef | ast.AsyncFunctionDef)
            body = _body(member)
            text = textwrap.dedent("".join(own[body[0].lineno - 1 : member.end_lineno]))
            first = _body(starter)[0].lineno - 1
            indent = " " * _body(starter)[0].col_offset
        replacements.append((first, last, textwrap.indent(text, indent)))
    if added:
        end = target.end_lineno or 0
        indent = " " * target.body[0].col_offset
        replacements.append((end, end, "".join("\n" + textwrap.indent(text, indent) for text in added)))
    return replacements


def apply(copy: Path, learner: str) -> None:
    """Write learner ``learner``'s code into the practice copy at ``copy``."""
    for path in sorted((LEARNERS / learner).glob("*.py")):
        target = copy / "pi_course" / path.name
        target.write_text(
            merge(target.read_text(encoding="utf-8"), path.read_text(encoding="utf-8")), encoding="utf-8"
        )


def new_copy(folder: Path, cwd: Path) -> Path:
    """A fresh practice copy at ``folder``, made as a learner makes one (``python -m pi_course practice``)."""
    made = subprocess.run(
        [sys.executable, "-m", "pi_course", "practice", "05", str(folder)],
        cwd=cwd,
        capture_output=True,
        text=True,
    )
    assert made.returncode == 0, made.stderr
    return folder


def copy_of(starter: Path, copy: Path, learner: str | None) -> Path:
    """A copy of the practice copy ``starter`` at ``copy``, with ``learner``'s code when one is named."""
    shutil.copytree(starter, copy)
    if learner is not None:
        apply(copy, learner)
    return copy


def mistake(copy: Path, module: str, correct: str, wrong: str) -> None:
    """Turn the learner's ``correct`` text in ``pi_course/<module>`` into ``wrong`` (exactly once)."""
    target = copy / "pi_course" / module
    source = target.read_text(encoding="utf-8")
    assert source.count(correct) == 1, f"{correct!r} occurs {source.count(correct)} times in {module}"
    target.write_text(source.replace(correct, wrong), encoding="utf-8")


def tree_digest(folder: Path) -> dict[str, tuple[str, int, int]]:
    """Every entry under ``folder``: content hash (or link target), mode and modification time."""
    digest = {}
    for path in sorted(folder.rglob("*")):
        info = path.lstat()
        if path.is_symlink():
            content = "link:" + os.readlink(path)
        elif path.is_file():
            content = hashlib.sha256(path.read_bytes()).hexdigest()
        else:
            content = "dir"
        digest[path.relative_to(folder).as_posix()] = (content, info.st_mode, info.st_mtime_ns)
    return digest
