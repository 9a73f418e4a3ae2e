"""Each step's last results, kept in the practice copy so a check re-runs only what changed.

A step's entry holds the test cases its run left (:class:`.results.Case`: focused tests, beyond
checks, rule checks, comparisons), under a key made of the content of every file the step depends
on (the copy's ``pi_course/`` and ``tests/`` less the lesson files of later steps), the course's
version, the running check code and the Python. A comparison with the reference that runs one
lesson file's code (:data:`COMPARISONS`) is kept apart, keyed by that file and the lesson files it
imports (:func:`lesson_closure`): an edit of ``sse.py`` does not run the HTTP transport's again.
An entry is signed with a key kept outside the copy (in the user's cache folder), so a forged,
corrupt or stale entry is just not found: it can only cost the time of running it again. ``grade``
and ``check --path`` never read it.
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import hmac
import importlib.metadata
import json
import os
import secrets
import sys
from collections.abc import Iterable
from pathlib import Path

from ...chapter.steps import LESSON_FILES, STEPS, Step
from ..copies.locate import CACHE_FILE
from ..copies.starters import reference_sources
from .results import Case

REFERENCE_FILE = CACHE_FILE.with_name("reference.json")  # the reference's side of comparisons (refcache)
FORMAT = 2
# The comparisons of tests/test_05_compare.py that run one lesson file's code: test → (its step, the
# file, the lesson module whose names it swaps for the reference's with ``alone()``, if any).
COMPARISONS: dict[str, tuple[str, str, str | None]] = {
    "test_compare_adapter_with_the_reference": ("5.2", "adapter.py", "outbound"),
    "test_compare_adapter_on_the_recordings": ("5.2", "adapter.py", "outbound"),
    "test_compare_sse_decoder_with_the_reference": ("5.3", "sse.py", None),
    "test_compare_payload_validation_with_the_reference": ("5.3", "sse.py", None),
    "test_compare_chunk_reader_with_the_reference": ("5.3", "sse.py", None),
    "test_compare_transport_over_http_with_the_reference": ("5.3", "transport.py", "sse"),
    "test_compare_transport_requests_and_errors_with_the_reference": ("5.4", "transport.py", None),
}
BASE_TYPES = "protocol.py"  # the lesson file every piece builds its values from
_RUNNING = Path(__file__).resolve().parent  # the check code doing the run (its plugin included)
_SKIPPED = {"__pycache__", ".hypothesis", ".pytest_cache"}


def signing_key() -> bytes | None:
    """The user's own key, outside every copy; ``None`` when it cannot be kept (no cache then)."""
    home = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "pi_course"
    path = home / "check-key"
    with contextlib.suppress(OSError, ValueError):
        if not path.is_file():
            home.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w", encoding="ascii") as file:
                file.write(secrets.token_hex(32))
        key = path.read_text(encoding="ascii").strip()
        return bytes.fromhex(key) if len(key) == 64 else None
    return None


def _course_version() -> str:
    try:
        return importlib.metadata.version("pi-course")
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def _files(folder: Path) -> Iterable[Path]:
    for path in sorted(folder.rglob("*")):
        if path.is_file() and not _SKIPPED.intersection(path.parts) and path.suffix != ".pyc":
            yield path


def _digests(root: Path) -> dict[str, str]:
    """Every file the tests can read, by its path in the copy."""
    found = {}
    running = () if _RUNNING.is_relative_to(root.resolve()) else (_RUNNING,)  # the installed check code
    for folder in (root / "pi_course", root / "tests", *running):
        for path in _files(folder):
            with contextlib.suppress(OSError):
                shown = (
                    str(path.relative_to(root))
                    if folder != _RUNNING
                    else f"<running>/{path.relative_to(folder)}"
                )
                found[shown] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def group(number: str, test: str | None = None) -> str:
    """An entry's name: a step's (its tests but the comparisons kept apart), or one comparison's."""
    return number if test is None else f"{number}/{test}"


def entries(steps: tuple[Step, ...], *, apart: bool = True) -> list[str]:
    """The entries holding ``steps``' results: each step's, then (``apart``) its comparisons kept apart."""
    numbers = [step.number for step in steps]
    kept_apart = [group(number, test) for test, (number, _, _) in COMPARISONS.items() if number in numbers]
    return [group(number) for number in numbers] + (kept_apart if apart else [])


def step_keys(root: Path, steps: tuple[Step, ...] = STEPS) -> dict[str, str]:
    """Each entry's key: what it depends on (lesson files it never runs left out), versions, settings."""
    digests = _digests(root)
    settings = sorted((name, value) for name, value in os.environ.items() if name.startswith("PI_COURSE_"))
    lessons = {f"pi_course/{name}" for name in LESSON_FILES}

    def key(name: str, left_out: set[str]) -> str:
        facts = {
            "format": FORMAT,
            "course": _course_version(),
            "python": sys.version,
            "settings": settings,
            "step": name,
            "files": {file: digest for file, digest in digests.items() if file not in left_out},
        }
        return hashlib.sha256(json.dumps(facts, sort_keys=True).encode()).hexdigest()

    keys = {}
    for index, step in enumerate(steps):
        own = {file for earlier in steps[: index + 1] for file in earlier.files}
        later = {file for other in steps[index + 1 :] for file in other.files} - own
        keys[group(step.number)] = key(step.number, later)
        for test, (number, file, swapped) in COMPARISONS.items():
            if number == step.number:
                runs = {f"pi_course/{name}" for name in lesson_closure(root, file, swapped)}
                keys[group(number, test)] = key(group(number, test), lessons - runs)
    return keys


def group_of(case: Case) -> str:
    """The entry a case is kept in."""
    return group(case.step, case.name if COMPARISONS.get(case.name, ("",))[0] == case.step else None)


# --- which lesson files a comparison runs ---------------------------------------------------------


def _imported(node: ast.AST) -> set[str]:
    """The lesson modules an import statement may load: the one it names, or all of them when it
    imports from the package itself (``from pi_course import x``, ``from . import x``)."""
    names = {name.removesuffix(".py") for name in LESSON_FILES}
    if isinstance(node, ast.Import):
        found: set[str] = set()
        for alias in node.names:
            parts = alias.name.split(".")
            if parts[0] == "pi_course":
                found |= {parts[1]} & names if len(parts) > 1 else names
        return found
    if isinstance(node, ast.ImportFrom):
        target = _from_module(node)
        if target is None:
            return set()
        return {target} & names if target else names
    return set()


def _from_module(node: ast.ImportFrom) -> str | None:
    """The package's module a ``from … import`` reads ("" for the package itself; None: outside it)."""
    module = node.module or ""
    if node.level == 1:
        return module.split(".")[0]
    if node.level == 0 and (module == "pi_course" or module.startswith("pi_course.")):
        return module.removeprefix("pi_course").lstrip(".").split(".")[0]
    return None


def _only_called_in_functions(tree: ast.Module, callee: str, taken: set[str]) -> bool:
    """``callee`` is used only through names imported from it at module level, each read only
    inside function bodies (so ``alone()``'s swap reaches every use) and never bound again."""
    uses_outside: list[ast.AST] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        if isinstance(node, ast.Name) and (
            node.id == callee or (node.id in taken and not (isinstance(node.ctx, ast.Load) and in_function))
        ):
            uses_outside.append(node)
        if isinstance(node, ast.Attribute) and node.attr == callee:
            uses_outside.append(node)
        if isinstance(node, (ast.Global, ast.Nonlocal)) and set(node.names) & taken:
            uses_outside.append(node)
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and f"pi_course.{callee}" in node.value
        ):
            uses_outside.append(node)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            outside: list[ast.AST] = [*node.args.defaults, *(d for d in node.args.kw_defaults if d)]
            outside += getattr(node, "decorator_list", [])
            for child in outside:
                visit(child, in_function)
            body: list[ast.AST] = [*node.body] if isinstance(node.body, list) else [node.body]
            for child in body:
                visit(child, True)
            return
        for child in ast.iter_child_nodes(node):
            visit(child, in_function)

    visit(tree, False)
    return not uses_outside


def _top_level_names(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {target.id for target in targets if isinstance(target, ast.Name)}
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}
    return names


def _swapped_away(tree: ast.Module, callee: str) -> bool:
    """Every use of lesson module ``callee`` in this file is one ``alone()`` swaps for the reference's."""
    try:
        has = _top_level_names(ast.parse(reference_sources()[f"{callee}.py"]))
    except (KeyError, SyntaxError, OSError, ValueError):
        return False
    taken: set[str] = set()
    for node in ast.walk(tree):
        if callee not in _imported(node):
            continue
        top_level = any(node is statement for statement in tree.body)
        if not (isinstance(node, ast.ImportFrom) and top_level and _from_module(node) == callee):
            return False  # import pi_course.sse, from . import sse, an import inside a function …
        if any(alias.name == "*" or alias.name not in has for alias in node.names):
            return False
        taken |= {alias.asname or alias.name for alias in node.names}
    return _only_called_in_functions(tree, callee, taken)


def lesson_closure(root: Path, file: str, swapped: str | None = None) -> set[str]:
    """The lesson files whose code runs when ``file``'s does, ``swapped``'s left out where a
    comparison's ``alone()`` stands the reference's in for it; every lesson file when unsure."""
    every = set(LESSON_FILES)
    needed, queue = {BASE_TYPES, file}, [file]
    while queue:
        current = queue.pop()
        try:
            tree = ast.parse((root / "pi_course" / current).read_text(encoding="utf-8"))
        except (OSError, SyntaxError, ValueError):
            return every
        if any(
            isinstance(node, ast.Name) and node.id in ("__import__", "importlib") for node in ast.walk(tree)
        ):
            return every
        away = swapped if current == file and swapped and _swapped_away(tree, swapped) else None
        for node in ast.walk(tree):
            for module in _imported(node) - {away}:
                name = f"{module}.py"
                if name not in needed:
                    needed.add(name)
                    queue.append(name)
    return needed & every


def _signature(secret: bytes, number: str, key: str, cases: list[dict[str, object]]) -> str:
    body = json.dumps([number, key, cases], sort_keys=True, ensure_ascii=False)
    return hmac.new(secret, body.encode("utf-8"), hashlib.sha256).hexdigest()


def _row(case: Case) -> dict[str, object]:
    return {"file": case.file, "name": case.name, "passed": case.passed, "text": case.text,
            "properties": case.properties}  # fmt: skip


def _case(row: dict[str, object]) -> Case:
    file, name, passed, text, properties = (
        row[field] for field in ("file", "name", "passed", "text", "properties")
    )
    if not (isinstance(file, str) and isinstance(name, str) and isinstance(passed, bool)):
        raise ValueError("not a case")
    if not (text is None or isinstance(text, str)) or not isinstance(properties, dict):
        raise ValueError("not a case")
    return Case(file, name, passed, text, {str(k): str(v) for k, v in properties.items()})


def load(root: Path, keys: dict[str, str]) -> dict[str, list[Case]]:
    """The kept cases of each step whose entry matches its key and is signed; anything else: not found."""
    secret = signing_key()
    if secret is None:
        return {}
    try:
        entries = json.loads((root / CACHE_FILE).read_text(encoding="utf-8"))["steps"]
    except (OSError, ValueError, KeyError, TypeError):
        return {}
    found: dict[str, list[Case]] = {}
    for number, key in keys.items():
        with contextlib.suppress(KeyError, TypeError, ValueError, AttributeError):
            entry = entries[number]
            rows = entry["cases"]
            if entry["key"] != key or not hmac.compare_digest(
                str(entry["signature"]), _signature(secret, number, key, rows)
            ):
                continue
            found[number] = [_case(row) for row in rows]
    return found


def store(root: Path, keys: dict[str, str], results: dict[str, list[Case]]) -> None:
    """Keep these steps' cases beside the other steps' entries; a copy not writable keeps nothing."""
    secret = signing_key()
    if secret is None:
        return
    path = root / CACHE_FILE
    try:
        entries = json.loads(path.read_text(encoding="utf-8"))["steps"]
        if not isinstance(entries, dict):
            entries = {}
    except (OSError, ValueError, KeyError, TypeError):
        entries = {}
    for number, cases in results.items():
        rows = [_row(case) for case in cases]
        signature = _signature(secret, number, keys[number], rows)
        entries[number] = {"key": keys[number], "cases": rows, "signature": signature}
    with contextlib.suppress(OSError):
        path.parent.mkdir(exist_ok=True)
        partial = path.with_name(path.name + f".{os.getpid()}")
        partial.write_text(
            json.dumps({"format": FORMAT, "steps": entries}, ensure_ascii=False), encoding="utf-8"
        )
        partial.replace(path)
