"""Which lesson files a comparison kept apart runs (pi_course/course/checker/stepcache.py): finer keys, never unsound ones."""

from __future__ import annotations

import ast
import re
import shutil
from pathlib import Path

import pytest

from pi_course.chapter.steps import LESSON_FILES
from pi_course.course.checker import stepcache
from pi_course.course.copies.starters import starter_sources

TESTS = Path(__file__).resolve().parents[1]
COMPARE = TESTS / "test_05_compare.py"
LEARNERS = TESTS / "workflow" / "learners"
EVERY = set(LESSON_FILES)


def tree_with(tmp_path: Path, files: dict[str, str]) -> Path:
    package = tmp_path / "pi_course"
    package.mkdir()
    for name in LESSON_FILES:
        (package / name).write_text(files.get(name, starter_sources().get(name, "")), encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize(
    "learner", sorted(path.name for path in LEARNERS.iterdir() if (path / "transport.py").exists())
)
def test_a_learners_http_transport_comparison_does_not_run_their_decoder(
    tmp_path: Path, learner: str
) -> None:
    root = tree_with(tmp_path, {})
    shutil.copyfile(LEARNERS / learner / "transport.py", root / "pi_course" / "transport.py")
    assert stepcache.lesson_closure(root, "transport.py", "sse") == {"protocol.py", "transport.py"}
    assert stepcache.lesson_closure(root, "transport.py") == {"protocol.py", "transport.py", "sse.py"}


UNSURE = {
    "the module itself": "from . import sse\n\ndef f():\n    return sse.iter_sse_events\n",
    "a name the reference lacks": "from .sse import my_own_helper\n\ndef f():\n    return my_own_helper()\n",
    "kept at import": "from .sse import iter_sse_events\n\nREADER = iter_sse_events\n",
    "a default argument": "from .sse import iter_sse_events\n\ndef f(read=iter_sse_events):\n    return read\n",
    "imported in a function": "def f():\n    from .sse import iter_sse_events\n    return iter_sse_events\n",
    "bound again": "from .sse import iter_sse_events\n\ndef f():\n    global iter_sse_events\n    iter_sse_events = None\n",
    "importlib": "import importlib\n\ndef f():\n    return importlib.import_module('pi_course.sse')\n",
    "the package": "from pi_course import iter_sse_events\n\ndef f():\n    return iter_sse_events\n",
    "not Python": "def f(:\n",
}


@pytest.mark.parametrize("case", UNSURE)
def test_a_use_the_swap_may_not_reach_keeps_the_decoder_in_the_key(tmp_path: Path, case: str) -> None:
    root = tree_with(tmp_path, {"transport.py": UNSURE[case]})
    assert "sse.py" in stepcache.lesson_closure(root, "transport.py", "sse")


def test_an_edit_of_the_decoder_leaves_the_http_comparisons_key_and_changes_the_decoders(
    tmp_path: Path,
) -> None:
    root = tree_with(
        tmp_path, {"transport.py": (LEARNERS / "ada" / "transport.py").read_text(encoding="utf-8")}
    )
    (root / "tests").mkdir()
    before = stepcache.step_keys(root)
    sse = root / "pi_course" / "sse.py"
    sse.write_text(sse.read_text(encoding="utf-8") + "\n# an edit\n", encoding="utf-8")
    after = stepcache.step_keys(root)
    same = {name for name in before if before[name] == after[name]}
    assert same == {
        "5.1",
        "5.2",
        "5.2/test_compare_adapter_with_the_reference",
        "5.2/test_compare_adapter_on_the_recordings",
        "5.3/test_compare_transport_over_http_with_the_reference",
    }


def _definitions(tree: ast.Module) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    functions = {  # module level, or under `if st is not None:` (a nested function is its parent's text)
        node.name: node
        for statement in tree.body
        for node in (statement.body if isinstance(statement, ast.If) else [statement])
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    }
    return functions


def _called(definitions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef]) -> dict[str, set[str]]:
    """Each function of the test file: the names it calls (itself or its nested functions)."""
    return {
        name: {
            call.func.id
            for call in ast.walk(node)
            if isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
        }
        for name, node in definitions.items()
    }


def _mines_and_alones(source: str, tree: ast.Module, test: str) -> tuple[set[str], set[tuple[str, str]]]:
    definitions = _definitions(tree)
    calls = _called(definitions)
    reached, queue = {test}, [test]
    while queue:
        for callee in calls.get(queue.pop(), ()):
            if callee in calls and callee not in reached:
                reached.add(callee)
                queue.append(callee)
    text = "\n".join(ast.get_source_segment(source, definitions[name]) or "" for name in reached)
    mines = set(re.findall(r'mine\("(\w+)"\)', text))
    alones = set(re.findall(r'alone\("(\w+)", "(\w+)"', text))
    return mines, alones


@pytest.mark.parametrize("test", stepcache.COMPARISONS)
def test_a_comparison_kept_apart_runs_only_the_lesson_file_it_is_kept_by(test: str) -> None:
    """The table holds the compare file's tests: each at its step, calling only its own lesson
    module's code (``mine``), its swapped module only through ``alone``. An edit of the compare file
    that calls another lesson module from one of them fails here, not in a stale kept result."""
    source = COMPARE.read_text(encoding="utf-8")
    tree = ast.parse(source)
    number, file, swapped = stepcache.COMPARISONS[test]
    definition = next(node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == test)
    steps = [
        ast.literal_eval(d.args[0]) for d in definition.decorator_list if isinstance(d, ast.Call) and d.args
    ]
    assert steps == [number]
    mines, alones = _mines_and_alones(source, tree, test)
    module = file.removesuffix(".py")
    assert mines <= {module, "protocol"} and module in mines
    if swapped is not None:
        assert (module, swapped) in alones
