"""Which lab functions of a copy are still in their starter form, read from the source alone.

A test that reaches a stub through the adapter only sees an ``error`` event saying
``Lab 5.x … 尚未实现``: it cannot tell which function is still a stub. The source can. Two forms:

- a *stub*: the body still raises the starter's ``NotImplementedError("Lab 5.x …")``;
- a *left-over yield*: the learner replaced the ``raise`` but kept the stub's last line, the bare
  ``yield`` that only made the stub a generator. After real code it yields once more (a ``None``
  chunk, or ``generator didn't stop`` from ``@asynccontextmanager``). New copies put that line
  behind ``if False:``, harmless when kept; copies made earlier still have the bare form.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ...chapter.steps import LESSON_FILES


@dataclass(frozen=True)
class StarterForm:
    """One lab function still (partly) in its starter form."""

    kind: Literal["stub", "left-over yield"]
    file: str  # relative to the copy: ``pi_course/sse.py``
    function: str  # ``_finish_reason`` or ``SSEDecoder.feed``
    message: str  # the stub's ``NotImplementedError`` text ("" for a left-over yield)

    @property
    def shown(self) -> str:
        return f"{self.function}()"


def _stub_message(body: list[ast.stmt]) -> str | None:
    for statement in body:
        if (
            isinstance(statement, ast.Raise)
            and isinstance(statement.exc, ast.Call)
            and isinstance(statement.exc.func, ast.Name)
            and statement.exc.func.id == "NotImplementedError"
            and statement.exc.args
            and isinstance(statement.exc.args[0], ast.Constant)
            and isinstance(statement.exc.args[0].value, str)
            and statement.exc.args[0].value.startswith("Lab 5.")
        ):
            return statement.exc.args[0].value
    return None


def _ends_in_bare_yield(body: list[ast.stmt]) -> bool:
    last = body[-1]
    return isinstance(last, ast.Expr) and isinstance(last.value, ast.Yield) and last.value.value is None


def _functions(tree: ast.Module) -> list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    found: list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            found.append((node.name, node))
        elif isinstance(node, ast.ClassDef):
            found += [
                (f"{node.name}.{item.name}", item)
                for item in node.body
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)
            ]
    return found


def defined_functions(root: Path) -> dict[str, frozenset[str]]:
    """Each lesson module's functions and methods (``_events``, ``SSEDecoder.feed``), by copy path.

    Advice names a place in the learner's own file: where a hint names the reference's function
    and the learner's design has none of that name, it says so instead of sending them looking.
    """
    found: dict[str, frozenset[str]] = {}
    for name in LESSON_FILES:
        try:
            tree = ast.parse((root / "pi_course" / name).read_text(encoding="utf-8"))
        except (OSError, SyntaxError, ValueError):
            continue
        found[f"pi_course/{name}"] = frozenset(qualname for qualname, _ in _functions(tree))
    return found


def starter_forms(root: Path) -> tuple[StarterForm, ...]:
    """The stubs and left-over yields in the copy's lesson modules (files that do not parse: none)."""
    found: list[StarterForm] = []
    for name in LESSON_FILES:
        path = root / "pi_course" / name
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (OSError, SyntaxError, ValueError):
            continue
        for qualname, function in _functions(tree):
            message = _stub_message(function.body)
            if message is not None:
                found.append(StarterForm("stub", f"pi_course/{name}", qualname, message))
            elif len(function.body) > 1 and _ends_in_bare_yield(function.body):
                found.append(StarterForm("left-over yield", f"pi_course/{name}", qualname, ""))
    return tuple(found)
