"""Import layering: the lesson at the bottom, given code beside it, tooling above, no cycles.

Every ``import`` in ``pi_course`` (module level or inside a function) is read with ``ast``, and
each module's layer may import only the layers listed for it in ``MAY_IMPORT``:

* lesson modules (protocol, outbound, adapter, sse, transport, scripted, migration): the lesson
  and given code, the standard library and httpx;
* ``given``: the lesson's protocol, the standard library and jiter (the payload parser, optional),
  and ``pi_course_here`` (whether this is a browser tab, said there once), never tooling;
* ``chapter/`` (the chapter's facts): the lesson and given code only, and ``pi_course_here``;
* ``pi_course_here`` (the top-level module a notebook's first cell imports before any
  ``pi_course`` is chosen, and the browser tab's finder): the standard library only;
* tooling, in one direction: ``provider`` ← ``course`` ← ``notebook``. Notebooks call ``check``
  and show events; the course's command line serves the provider; the provider knows neither.

Inside ``course/`` the subpackages stand in one direction too (``COURSE_MAY_IMPORT``): the small
shared modules at its top (exit statuses, the edition, OS errors said in Chinese, the parser, one
event's line) ← ``copies/`` ← ``running/`` ← ``checker/`` ← ``grade/`` ← the doors (``check.py``,
``cli.py``, ``chat.py``). Making a copy never runs a check; running a process never judges one.

The package's ``__init__`` (the public facade) and ``__main__`` sit on top and are not checked.
No module may reach itself through imports, inside a layer or across layers (:func:`cycles`): a
lazy import inside a function counts, since it only hides the circle from Python, not from a reader.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Callable
from pathlib import Path

PACKAGE = Path(__file__).parents[2] / "pi_course"

LESSON_MODULES = ("protocol", "outbound", "adapter", "sse", "transport", "seam", "scripted", "migration")
STDLIB = "stdlib"
HERE = "pi_course_here"  # below every layer of the package: it must import without one
OUTSIDE = {STDLIB, "httpx", "jiter", "third-party"}  # what tooling may use from outside the package
MAY_IMPORT: dict[str, set[str]] = {
    "lesson": {"lesson", "given", STDLIB, "httpx"},
    "given": {"lesson", "given", STDLIB, "jiter", HERE},
    "chapter": {"lesson", "given", "chapter", HERE, STDLIB},
    "provider": {"lesson", "given", "chapter", "provider", HERE, *OUTSIDE},
    "course": {"lesson", "given", "chapter", "provider", "course", HERE, *OUTSIDE},
    "notebook": {"lesson", "given", "chapter", "provider", "course", "notebook", HERE, *OUTSIDE},
}
# A violation that is known and owned elsewhere, with why it is still there. Each must still occur
# (the test fails once it is fixed, so that the entry is removed with it).
KNOWN: dict[tuple[str, str], str] = {}

# course/'s wings: the subpackages by job, the small shared modules at its top ("shared"), and the
# doors on top of them all. A wing not named here is a new one: add it.
COURSE_SHARED = ("edition", "exits", "oserrors", "parser", "describe")
COURSE_DOORS = ("check", "cli", "chat")
COURSE_MAY_IMPORT: dict[str, set[str]] = {
    "shared": {"shared"},
    "copies": {"shared", "copies"},
    "running": {"shared", "copies", "running"},
    "checker": {"shared", "copies", "running", "checker"},
    "grade": {"shared", "copies", "running", "checker", "grade"},
    "doors": {"shared", "copies", "running", "checker", "grade", "doors"},
}


def layer_of(module: str) -> str | None:
    """The layer of a ``pi_course`` module; ``None`` for the facade and ``__main__``."""
    parts = module.split(".")
    if parts[0] != "pi_course" or len(parts) == 1 or parts[1] == "__main__":
        return None
    if parts[1] in LESSON_MODULES:
        return "lesson"
    if parts[1] in ("stream_rules", "payload_reading"):  # the given SSE helpers
        return "given"
    if parts[1] in ("chapter", "provider", "course", "notebook"):
        return parts[1]
    raise AssertionError(f"{module}: a module in no layer; add it to test_layers.py")


def target_layer(imported: str) -> str:
    top = imported.split(".")[0]
    if top == "pi_course":
        return layer_of(imported) or "facade"
    if top in sys.stdlib_module_names:
        return STDLIB
    if top == HERE:
        return HERE
    return top if top in ("httpx", "jiter") else "third-party"


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, root: Path) -> list[tuple[str, int]]:
    """Every module ``path`` imports, absolute, with its line (``from . import x`` names ``x``)."""
    name = module_name(path, root)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: list[tuple[str, int]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                source = ".".join([*base, node.module] if node.module else base)
            else:
                source = node.module or ""
            if node.module is None:  # from . import x: x is a module of the package
                found += [(f"{source}.{alias.name}", node.lineno) for alias in node.names]
            else:
                found.append((source, node.lineno))
    return found


def package_files(root: Path) -> list[Path]:
    """The package's own modules: not a wheel's packaged tests (``_course/``), nor a copy's target."""
    return [
        path
        for path in sorted(root.rglob("*.py"))
        if not any(
            part.startswith(("_", ".")) and part != "__init__.py" for part in path.relative_to(root).parts
        )
        and "target-05" not in path.parts
    ]


def violations(
    root: Path = PACKAGE,
    part_of: Callable[[str], str | None] = layer_of,
    target_of: Callable[[str], str | None] = target_layer,
    may_import: dict[str, set[str]] = MAY_IMPORT,
) -> list[tuple[str, str, str]]:
    """(importing module, imported module, where) for every import its part may not make.

    ``part_of`` places an importing module (``None``: not checked), ``target_of`` an imported one
    (``None``: outside what these rules cover); by default the layers of the whole package.
    """
    found = []
    for path in package_files(root):
        name = module_name(path, root)
        part = part_of(name)
        if part is None:
            continue
        for imported, line in imports_of(path, root):
            target = target_of(imported)
            if target is not None and target not in may_import[part]:
                found.append((name, imported, f"{path.relative_to(root.parent)}:{line}"))
    return found


def test_every_layer_imports_only_what_it_may() -> None:
    found = violations()
    unexpected = [v for v in found if (v[0], v[1]) not in KNOWN]
    assert unexpected == [], "\n".join(f"{where}: {a} imports {b}" for a, b, where in unexpected)
    still = {(a, b) for a, b, _ in found}
    assert [known for known in KNOWN if known not in still] == [], "fixed: remove it from KNOWN"


def course_wing(module: str) -> str | None:
    """The wing of a ``pi_course.course`` module (``None``: not in ``course/``, or its ``__init__``)."""
    parts = module.split(".")
    if parts[:2] != ["pi_course", "course"] or len(parts) == 2:
        return None
    if parts[2] in ("copies", "running", "checker", "grade"):
        return parts[2]
    if parts[2] in COURSE_SHARED:
        return "shared"
    if parts[2] in COURSE_DOORS:
        return "doors"
    raise AssertionError(f"{module}: a course module in no wing; add it to test_layers.py")


def course_violations(root: Path = PACKAGE) -> list[tuple[str, str, str]]:
    """(importing module, imported module, where) for every import a course wing may not make."""
    return violations(root, course_wing, course_wing, COURSE_MAY_IMPORT)


def test_every_course_wing_imports_only_the_wings_below_it() -> None:
    found = course_violations()
    assert found == [], "\n".join(f"{where}: {a} imports {b}" for a, b, where in found)


def test_the_course_wings_stand_in_one_direction() -> None:
    order = ["shared", "copies", "running", "checker", "grade", "doors"]
    assert list(COURSE_MAY_IMPORT) == order
    for index, wing in enumerate(order):
        assert COURSE_MAY_IMPORT[wing] == set(order[: index + 1]), wing


def test_a_course_wing_importing_upwards_is_caught(tmp_path: Path) -> None:
    """The checker itself: a copy that runs a check, a runner that grades, the doors below grade/."""
    course = tmp_path / "pi_course" / "course"
    for wing in ("copies", "running", "checker", "grade"):
        (course / wing).mkdir(parents=True)
        (course / wing / "__init__.py").write_text("", encoding="utf-8")
    (tmp_path / "pi_course" / "__init__.py").write_text("", encoding="utf-8")
    (course / "__init__.py").write_text("", encoding="utf-8")
    (course / "copies" / "practice.py").write_text(
        "from ..checker.stepcache import CACHE_FILE\n", encoding="utf-8"
    )
    (course / "running" / "sandbox.py").write_text("from ..copies.locate import PACKAGE\n", encoding="utf-8")
    (course / "checker" / "copyrun.py").write_text(
        "from ..running.sandbox import Sandbox\nfrom ..grade import runner\n", encoding="utf-8"
    )
    (course / "exits.py").write_text("def f():\n    from .check import check\n", encoding="utf-8")
    assert course_violations(tmp_path / "pi_course") == [
        ("pi_course.course.checker.copyrun", "pi_course.course.grade", "pi_course/course/checker/copyrun.py:2"),
        ("pi_course.course.copies.practice", "pi_course.course.checker.stepcache", "pi_course/course/copies/practice.py:1"),
        ("pi_course.course.exits", "pi_course.course.check", "pi_course/course/exits.py:2"),
    ]  # fmt: skip


def test_pi_course_here_imports_only_the_standard_library() -> None:
    """A first cell imports it while the ``pi_course`` it chooses is not importable yet."""
    here = PACKAGE.parent / f"{HERE}.py"
    imported = {name.split(".")[0] for name, _ in imports_of(here, PACKAGE.parent)}
    assert imported and imported <= set(sys.stdlib_module_names) | {"__future__"}, imported


def test_the_tooling_layers_form_no_cycle() -> None:
    tooling = ("provider", "course", "notebook")
    for lower, upper in ((tooling[0], tooling[1]), (tooling[0], tooling[2]), (tooling[1], tooling[2])):
        assert upper not in MAY_IMPORT[lower] and lower in MAY_IMPORT[upper]


def test_a_real_violation_is_caught(tmp_path: Path) -> None:
    """The checker itself: a course module importing notebook/, a lesson module importing tooling."""
    root = tmp_path / "pi_course"
    for folder in ("course", "notebook", "chapter"):
        (root / folder).mkdir(parents=True)
        (root / folder / "__init__.py").write_text("", encoding="utf-8")
    (root / "__init__.py").write_text("from .provider.connect import connect\n", encoding="utf-8")
    (root / "notebook" / "display.py").write_text(
        "from ..course.describe import describe_event\n", encoding="utf-8"
    )
    (root / "course" / "cli.py").write_text(
        "def chat():\n    from ..notebook.display import describe_event\n", encoding="utf-8"
    )
    (root / "sse.py").write_text("import json\nimport httpx\nfrom .course import check\n", encoding="utf-8")
    (root / "stream_rules.py").write_text("import httpx\nfrom . import protocol\n", encoding="utf-8")
    (root / "chapter" / "wire.py").write_text("from ..provider import server\n", encoding="utf-8")
    assert violations(root) == [
        ("pi_course.chapter.wire", "pi_course.provider", "pi_course/chapter/wire.py:1"),
        ("pi_course.course.cli", "pi_course.notebook.display", "pi_course/course/cli.py:2"),
        ("pi_course.sse", "pi_course.course", "pi_course/sse.py:3"),
        ("pi_course.stream_rules", "httpx", "pi_course/stream_rules.py:1"),
    ]


def import_graph(root: Path = PACKAGE) -> dict[str, set[str]]:
    """Each module of the package and the modules of the package it imports, anywhere in its code."""
    files = {module_name(path, root): path for path in package_files(root)}
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        targets = set()
        for imported, _ in imports_of(path, root):
            # `from .x import name` names a module; `from . import x` may name a module or an attribute.
            while imported and imported not in files:
                imported = imported.rpartition(".")[0]
            if imported and imported != name:
                targets.add(imported)
        graph[name] = targets
    return graph


def cycles(root: Path = PACKAGE) -> list[list[str]]:
    """Every import circle, each as the modules in order (the first repeated at the end), found once."""
    graph = import_graph(root)
    found: list[list[str]] = []
    seen: set[frozenset[str]] = set()

    def walk(module: str, path: list[str]) -> None:
        for target in sorted(graph.get(module, ())):
            if target in path:
                circle = path[path.index(target) :]
                if frozenset(circle) not in seen:
                    seen.add(frozenset(circle))
                    found.append([*circle, target])
            elif target not in done:
                walk(target, [*path, target])
        done.add(module)

    done: set[str] = set()
    for module in sorted(graph):
        if module not in done:
            walk(module, [module])
    return found


def test_no_module_reaches_itself_through_imports() -> None:
    assert cycles() == [], "\n".join(" → ".join(circle) for circle in cycles())


def test_a_circle_hidden_in_a_function_is_found(tmp_path: Path) -> None:
    """The checker itself: a circle inside one layer, closed by an import inside a function."""
    course = tmp_path / "pi_course" / "course"
    (course / "checker").mkdir(parents=True)
    (tmp_path / "pi_course" / "__init__.py").write_text("", encoding="utf-8")
    (course / "__init__.py").write_text("", encoding="utf-8")
    (course / "checker" / "__init__.py").write_text("", encoding="utf-8")
    (course / "checker" / "advice.py").write_text("from .testrun import Report\n", encoding="utf-8")
    (course / "checker" / "testrun.py").write_text("from . import import_failure\n", encoding="utf-8")
    (course / "checker" / "import_failure.py").write_text(
        "def hook():\n    from ..check import teller\n", encoding="utf-8"
    )
    (course / "check.py").write_text("from .checker.advice import hints\nimport json\n", encoding="utf-8")
    (course / "checker" / "facts.py").write_text("from .testrun import Report\n", encoding="utf-8")
    assert cycles(tmp_path / "pi_course") == [
        ["pi_course.course.check", "pi_course.course.checker.advice", "pi_course.course.checker.testrun",
         "pi_course.course.checker.import_failure", "pi_course.course.check"],
    ]  # fmt: skip


# --- the lesson's own imports ----------------------------------------------------------------------

# What practice 5.1–5.4 write, and all they may import from the package besides each other.
LESSON = ("protocol", "outbound", "adapter", "sse", "transport")
LESSON_USES = {
    "pi_course.seam": "the transport ↔ adapter contract",
    "pi_course.stream_rules": "the given SSE helpers: text, fields, size bound, abort race",
    "pi_course.payload_reading": "the given SSE helper that reads each payload before the validator",
}


def package_imports(module: str) -> set[str]:
    path = PACKAGE / f"{module}.py"
    return {name for name, _ in imports_of(path, PACKAGE) if name.split(".")[0] == "pi_course"}


def test_the_lesson_imports_only_the_protocol_the_seam_and_the_given_sse_helpers() -> None:
    lesson = {f"pi_course.{module}" for module in LESSON}
    used = set().union(*(package_imports(module) for module in LESSON)) - lesson
    assert used == set(LESSON_USES)
    # The adapter reads chunks only: no SSE, no payload reading, no HTTP.
    assert package_imports("adapter") == {"pi_course.protocol", "pi_course.outbound", "pi_course.seam"}
    assert package_imports("seam") == {"pi_course.protocol"}
