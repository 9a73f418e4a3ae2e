"""The browser edition in one wing: ``pi_course_here`` alone says whether this is a browser tab and,
through its ``CopyFinder``, where a copy's modules load from; ``chapter/`` only holds facts.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).parents[2]
WING = ROOT / "pi_course_here.py"


def sources() -> list[Path]:
    return [WING, *sorted((ROOT / "pi_course").rglob("*.py"))]


def test_only_the_wing_asks_the_platform_whether_this_is_a_tab() -> None:
    asking = [
        path.relative_to(ROOT).as_posix() for path in sources() if '"emscripten"' in path.read_text("utf-8")
    ]
    assert asking == ["pi_course_here.py"]


def test_no_subpackage_rewrites_where_its_modules_load_from() -> None:
    rewriting = []
    for init in (ROOT / "pi_course").glob("*/__init__.py"):
        for node in ast.walk(ast.parse(init.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Name) and node.id == "__path__" and isinstance(node.ctx, ast.Store):
                rewriting.append(init.relative_to(ROOT).as_posix())
    assert rewriting == []


def test_importing_the_chapters_facts_does_nothing_but_define_them() -> None:
    for module in sorted((ROOT / "pi_course" / "chapter").glob("*.py")):
        for statement in ast.parse(module.read_text(encoding="utf-8")).body:
            if isinstance(statement, ast.Expr):  # a bare call at module level: a side effect
                assert isinstance(statement.value, ast.Constant), f"{module.name}:{statement.lineno}"
            if isinstance(statement, ast.ImportFrom):
                assert statement.module != "pi_course_here", f"{module.name}: the wing is no fact"
