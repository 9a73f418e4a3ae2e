"""The suite's markers are where they belong: ``make unit`` starts no Python process and no kernel,
``make test`` re-executes no notebook, and the browser tests stay out of both.

Read from the test files' syntax: a test starts Python (or a kernel, or a check run) when its body,
a fixture it asks for or a module-level helper it calls names one of the ``STARTS_PYTHON`` names.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

TESTS = Path(__file__).parents[1]
# Names that start a Python process, a notebook kernel or a whole check run (pytest in this process).
STARTS_PYTHON = frozenset(
    {"sys.executable", "run_tests", "inkernel", "NotebookClient", "ExecutePreprocessor", "KernelManager"}
)
RUNS_NOTEBOOKS = "--nbval"  # what re-executing a practice copy's notebooks passes to pytest
MARKERS = ("slow", "notebooks", "browser", "lite")


def names_in(node: ast.AST) -> set[str]:
    """Every name, attribute (``sys.executable`` and ``executable``) and string constant in ``node``.

    Docstrings left out: they may name what they do not do.
    """
    found: set[str] = set()
    docstrings = {
        id(child.value)
        for child in ast.walk(node)
        if isinstance(child, ast.Expr) and isinstance(child.value, ast.Constant)
    }
    for child in ast.walk(node):
        if isinstance(child, ast.Name):
            found.add(child.id)
        elif isinstance(child, ast.Attribute):
            found.add(child.attr)
            if isinstance(child.value, ast.Name):
                found.add(f"{child.value.id}.{child.attr}")
        elif isinstance(child, ast.Constant) and isinstance(child.value, str) and id(child) not in docstrings:
            found.add(child.value)
    return found


def marked_tests(source: str) -> Iterator[tuple[str, set[str], set[str]]]:
    """Each test function of a module: its name, its markers, and the names it reaches.

    A test reaches what its body names, and what the module-level functions (helpers, fixtures)
    it calls or asks for reach, transitively.
    """
    tree = ast.parse(source)
    functions = {
        node.name: node for node in tree.body if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    }
    module_marks: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == "pytestmark" for target in node.targets
        ):
            module_marks |= names_in(node.value)
    direct = {name: names_in(node) | {arg.arg for arg in node.args.args} for name, node in functions.items()}
    reached = {name: set(names) for name, names in direct.items()}
    changed = True
    while changed:
        changed = False
        for name, names in reached.items():
            more = set().union(*(reached[other] for other in names & functions.keys() if other != name))
            if not more <= names:
                names |= more
                changed = True
    for name, node in functions.items():
        if name.startswith("test_"):
            marks = module_marks.union(*(names_in(decorator) for decorator in node.decorator_list))
            yield name, marks & set(MARKERS), reached[name]


def mismatches(source: str, *, browser_file: bool = False) -> list[str]:
    """What is wrong with one test module's markers (empty when every marker is where it belongs)."""
    wrong = []
    for name, marks, reached in marked_tests(source):
        if browser_file and "browser" not in marks:
            wrong.append(f"{name}: a browser test without the browser marker")
        starts = reached & STARTS_PYTHON
        if starts and not marks:
            wrong.append(f"{name}: reaches {sorted(starts)} but is not marked slow")
        if any(name_.startswith(RUNS_NOTEBOOKS) for name_ in reached) and not marks & {
            "notebooks",
            "browser",
        }:
            wrong.append(f"{name}: re-executes notebooks but is not marked notebooks")
    return wrong


def test_every_test_file_has_its_markers_where_they_belong() -> None:
    files = sorted(path for path in TESTS.rglob("test_*.py") if "learners" not in path.parts)
    assert len(files) > 20
    wrong = [
        f"{path.relative_to(TESTS)}::{line}"
        for path in files
        for line in mismatches(path.read_text(encoding="utf-8"), browser_file=path.parent.name == "browser")
    ]
    assert wrong == []


UNMARKED = """
import subprocess, sys
import pytest

def cli(*args):
    return subprocess.run([sys.executable, "-m", "pi_course", *args])

@pytest.fixture
def copy(tmp_path):
    cli("practice", "05", str(tmp_path))
    return tmp_path

def test_through_a_fixture(copy):
    assert copy

@pytest.mark.slow
def test_marked(copy):
    assert copy

def test_notebooks_run(copy):
    subprocess.run(["pytest", "--nbval-lax", str(copy)])

@pytest.mark.slow
def test_notebooks_run_but_only_slow(copy):
    subprocess.run(["pytest", "--nbval-lax", str(copy)])

def test_pure():
    assert 1 + 1 == 2
"""


def test_the_reading_finds_an_unmarked_test_through_its_fixture_and_helpers() -> None:
    assert mismatches(UNMARKED) == [
        "test_through_a_fixture: reaches ['sys.executable'] but is not marked slow",
        "test_notebooks_run: reaches ['sys.executable'] but is not marked slow",
        "test_notebooks_run: re-executes notebooks but is not marked notebooks",
        "test_notebooks_run_but_only_slow: re-executes notebooks but is not marked notebooks",
    ]
    assert mismatches(
        "import pytest\npytestmark = pytest.mark.slow\ndef test_x():\n    pass\n", browser_file=True
    ) == ["test_x: a browser test without the browser marker"]
