"""The reference's side of a comparison with the reference, kept in the practice copy between checks.

A comparison runs each input through the learner's piece and through the reference's. The
reference's side depends only on the reference, the copy's given code, the test file and the check
code: it is kept under a key made of exactly that (:func:`context_key`), so a check after an edit of
the learner's own code runs only the learner's side again. Of ``protocol.py``, a lesson file that
also holds given code, the key takes only the statements the comparison can reach
(:func:`reached_statements`): the learner's ``ToolDefinition`` and ``AgentContext`` are not read by
the HTTP transport, so editing them does not run the reference's transport again.

Entries are signed with :func:`.stepcache.signing_key`: a stale, corrupt or forged entry is just not
found and costs the time of running the reference again. Only ``check`` in a copy turns it on (the
runner sets :data:`.contract.REFERENCE_VARIABLE`); ``grade``, ``check --path`` and a browser tab
never read it.
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import hmac
import json
import math
import os
import re
import symtable
import sys
from pathlib import Path
from typing import Any

from ...chapter.steps import GIVEN_MODULES
from ..copies.locate import PACKAGE
from ..copies.starters import reference_sources
from .plugin_path.pi_course_check.contract import (
    PROGRESS_VARIABLE,
    REFERENCE_VARIABLE,
    STEPS_VARIABLE,
)
from .stepcache import signing_key

FORMAT = 1
PROTOCOL = "protocol.py"  # the lesson file that also holds the given types every piece builds on
_PER_RUN = {PROGRESS_VARIABLE, STEPS_VARIABLE, REFERENCE_VARIABLE}
_RUNNING = Path(__file__).resolve().parents[1]  # the course tooling: its twin, runner, starters, these keys
# Names and attributes through which code reaches a module's names without naming them (see _dynamic):
# code using any of them may read any name, so the whole of protocol.py goes into the key.
_DYNAMIC = {"globals", "__import__", "importlib", "sys", "__builtins__", "builtins"}
_DYNAMIC_ATTRIBUTES = {"__globals__", "__builtins__", "protocol", "modules"}


class Kept:
    """The kept reference observations of one comparison context: ``get``, ``put``, ``save``.

    The file is the signature of its body on the first line, then the body: JSON holding the
    context key and each input's observation (plain JSON data), by the digest of the input.
    """

    def __init__(self, path: Path | None, context: str) -> None:
        self.path = path
        self.context = context
        self.entries: dict[str, Any] = {}
        self.added = False
        self.secret = signing_key() if path is not None else None
        if self.secret is None or path is None:
            self.path = None
            return
        with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
            signature, _, body = path.read_bytes().partition(b"\n")
            if hmac.compare_digest(signature, _signature(self.secret, body).encode()):
                stored = json.loads(body)
                if stored["format"] == FORMAT and stored["context"] == context:
                    self.entries = dict(stored["entries"])

    def get(self, item: str) -> tuple[bool, Any]:
        """``(True, value)`` for a kept observation of ``item``; ``(False, None)`` when not kept."""
        digest = _digest(item)
        if digest not in self.entries:
            return False, None
        return True, self.entries[digest]

    def put(self, item: str, value: object) -> None:
        """Keep ``value`` (plain data) for ``item``; a value that does not come back the same is not kept."""
        if self.path is None or not _plain(value):  # a tuple, a NaN, a key that is not a string …
            return
        self.entries[_digest(item)] = value
        self.added = True

    def save(self) -> None:
        """Write what was added (atomically); a copy that is not writable keeps nothing."""
        if self.path is None or self.secret is None or not self.added:
            return
        body = json.dumps(
            {"format": FORMAT, "context": self.context, "entries": self.entries}, separators=(",", ":")
        ).encode("ascii")
        with contextlib.suppress(OSError):
            self.path.parent.mkdir(parents=True, exist_ok=True)
            partial = self.path.with_name(self.path.name + f".{os.getpid()}")
            partial.write_bytes(_signature(self.secret, body).encode() + b"\n" + body)
            partial.replace(self.path)
        self.added = False


def _plain(value: object) -> bool:
    """JSON data that comes back from its text the same, type for type (a float finite)."""
    if value is None or type(value) in (bool, int, str):
        return True
    if type(value) is float:
        return math.isfinite(value)
    if type(value) is list:
        return all(map(_plain, value))
    if type(value) is dict:
        return all(type(key) is str and _plain(item) for key, item in value.items())
    return False


def _digest(item: str) -> str:
    return hashlib.sha256(item.encode("utf-8", "surrogatepass")).hexdigest()


def _signature(secret: bytes, body: bytes) -> str:
    return hmac.new(secret, body, hashlib.sha256).hexdigest()


def opened(name: str, test_file: Path, entry: str, reference: tuple[str, ...]) -> Kept:
    """The kept observations of comparison ``name``, whose reference side is test function ``entry``
    running the reference modules ``reference`` (file names); none kept unless the runner set
    :data:`.contract.REFERENCE_VARIABLE`."""
    where = os.environ.get(REFERENCE_VARIABLE)
    if not where:
        return Kept(None, "")
    try:
        context = context_key(name, test_file, entry, reference)
    except (OSError, SyntaxError, ValueError, ImportError):
        return Kept(None, "")
    return Kept(Path(where).with_name(f"{Path(where).stem}-{name}.json"), context)


# --- what the reference's side depends on --------------------------------------------------------


def context_key(name: str, test_file: Path, entry: str, reference: tuple[str, ...]) -> str:
    """The digest of everything the reference's side of comparison ``name`` can depend on."""
    import httpx

    package = PACKAGE.resolve()
    sources = reference_sources()
    test_text = test_file.read_text(encoding="utf-8")
    test_tree = ast.parse(test_text)
    reached, statements = _reached(test_tree, test_text, entry)
    defs = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    importing = ast.Module([*(s for s in test_tree.body if not isinstance(s, defs)), *statements], [])
    roots = reached & imported_names(importing, "pi_course", level=0)
    roots |= {"*"} if any(map(_dynamic, statements)) else set()
    given = {}
    for module in (*GIVEN_MODULES, "__init__.py"):
        text = (package / module).read_text(encoding="utf-8")
        given[module] = hashlib.sha256(text.encode()).hexdigest()
        if module != "__init__.py":  # the lazy loader: it reads from protocol the names importers ask for
            roots |= protocol_names_read(ast.parse(text))
    for module in reference:
        roots |= protocol_names_read(ast.parse(sources[module]))
    here = sys.modules.get("pi_course_here")
    here_file = getattr(here, "__file__", None)
    facts = {
        "format": FORMAT,
        "name": name,
        "python": sys.version,
        "httpx": httpx.__version__,
        "test_file": hashlib.sha256(test_text.encode()).hexdigest(),
        "reference": {module: hashlib.sha256(sources[module].encode()).hexdigest() for module in reference},
        "given": given,
        "protocol": protocol_part((package / PROTOCOL).read_text(encoding="utf-8"), roots),
        "here": hashlib.sha256(Path(here_file).read_bytes()).hexdigest() if here_file else None,
        "running": _running_digest(),
        "settings": sorted(
            (key, value)
            for key, value in os.environ.items()
            if key.startswith("PI_COURSE_") and key not in _PER_RUN
        ),
    }
    return hashlib.sha256(json.dumps(facts, sort_keys=True).encode()).hexdigest()


def _running_digest() -> str:
    digest = hashlib.sha256()
    for path in sorted(_RUNNING.rglob("*.py")):
        if "__pycache__" not in path.parts:
            digest.update(str(path.relative_to(_RUNNING)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def _bound(node: ast.stmt) -> set[str]:
    """The module-level names a top-level statement may bind (a def's or class's body binds its own)."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    found: set[str] = set()
    queue: list[ast.AST] = [node]
    while queue:
        child = queue.pop()
        if isinstance(child, ast.Name) and isinstance(child.ctx, (ast.Store, ast.Del)):
            found.add(child.id)
        elif isinstance(child, (ast.Import, ast.ImportFrom)):
            found |= {(alias.asname or alias.name).split(".")[0] for alias in child.names}
        elif isinstance(child, (ast.Global, ast.Nonlocal)):
            found |= set(child.names)
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.add(child.name)
            made_here = [*child.decorator_list]  # what runs where the def stands; its body runs later
            if isinstance(child, ast.ClassDef):
                made_here += [*child.bases, *(keyword.value for keyword in child.keywords)]
            else:
                made_here += [*child.args.defaults, *(d for d in child.args.kw_defaults if d is not None)]
            queue += made_here
            queue += [g for g in ast.walk(child) if isinstance(g, ast.Global)]
            continue
        if isinstance(child, ast.Lambda):
            continue
        queue += ast.iter_child_nodes(child)
    return found


def _names(node: ast.AST) -> set[str]:
    return {child.id for child in ast.walk(node) if isinstance(child, ast.Name)}


_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda, *_COMPREHENSIONS)
_TABLE_NAMES = {ast.ListComp: "listcomp", ast.SetComp: "setcomp", ast.DictComp: "dictcomp",
                ast.GeneratorExp: "genexpr", ast.Lambda: "lambda"}  # fmt: skip


class Reads:
    """Which module-level names each top-level statement of a module reads (its scopes' globals)."""

    def __init__(self, tree: ast.Module, source: str) -> None:
        self.postponed = _postponed(tree)
        self.tables: dict[tuple[str, int], list[symtable.SymbolTable]] = {}
        for table in symtable.symtable(source, "<module>", "exec").get_children():
            self.tables.setdefault((table.get_name(), table.get_lineno()), []).append(table)

    def of(self, statement: ast.stmt) -> set[str]:
        """The names ``statement`` reads from the module, when it runs and when what it makes is called."""
        found: set[str] = set()
        queue: list[ast.AST] = [statement]
        while queue:
            node = queue.pop()
            if isinstance(node, _SCOPES):
                found |= self._scope(node)
                queue += _made_here(node)
                continue
            if isinstance(node, ast.Name):
                found.add(node.id)
            if isinstance(node, ast.AnnAssign):
                found |= _leading_word(node.annotation)
                queue += [child for child in (node.target, node.value) if child is not None]
                if not self.postponed:
                    queue.append(node.annotation)
                continue
            queue += ast.iter_child_nodes(node)
        return found

    def _scope(self, node: ast.AST) -> set[str]:
        name = str(_TABLE_NAMES.get(type(node)) or getattr(node, "name", ""))
        lineno = int(getattr(node, "lineno", 0))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.decorator_list:
            lineno = node.decorator_list[0].lineno  # symtable's line for a decorated def
        tables = self.tables.get((name, lineno), [])
        if len(tables) != 1:  # not found, or two on one line: every name in it
            return _names(node)
        found = _global_reads(tables[0])
        if isinstance(node, ast.ClassDef):  # dataclass reads each field annotation's first word
            for member in node.body:
                if isinstance(member, ast.AnnAssign):
                    found |= _leading_word(member.annotation)
        if not self.postponed:
            found |= _names(node)
        return found


def _global_reads(table: symtable.SymbolTable) -> set[str]:
    found = {
        symbol.get_name() for symbol in table.get_symbols() if symbol.is_global() and symbol.is_referenced()
    }
    for child in table.get_children():
        found |= _global_reads(child)
    return found


def _made_here(node: ast.AST) -> list[ast.AST]:
    """The parts of a def, class, lambda or comprehension evaluated where it stands."""
    if isinstance(node, ast.ClassDef):
        return [*node.decorator_list, *node.bases, *(keyword.value for keyword in node.keywords)]
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        decorators = node.decorator_list if not isinstance(node, ast.Lambda) else []
        return [*decorators, *node.args.defaults, *(d for d in node.args.kw_defaults if d is not None)]
    if isinstance(node, _COMPREHENSIONS):
        return [node.generators[0].iter]
    return []


def _leading_word(annotation: ast.expr) -> set[str]:
    """The first word of an annotation's text: the name dataclasses looks up for ClassVar/InitVar."""
    found = re.match(r"\s*(\w+)", ast.unparse(annotation))
    return {found[1]} if found else set()


def _dynamic(node: ast.AST) -> bool:
    """Code that may reach a module's names without naming them (its globals, the module itself)."""
    for child in ast.walk(node):
        if isinstance(child, ast.Name) and child.id in _DYNAMIC:
            return True
        if isinstance(child, ast.Attribute) and child.attr in _DYNAMIC_ATTRIBUTES:
            return True
        if isinstance(child, ast.Constant) and child.value in _DYNAMIC_ATTRIBUTES:
            return True
        if isinstance(child, ast.Call) and isinstance(child.func, ast.Name):
            called, given = child.func.id, len(child.args) + len(child.keywords)
            if (called in ("vars", "locals", "dir") and given == 0) or (
                called in ("exec", "eval") and given < 2
            ):
                return True
    return False


def reached_names(tree: ast.Module, source: str, entry: str) -> set[str]:
    """Every module-level name read by function ``entry`` of a module and by what it reaches there."""
    return _reached(tree, source, entry)[0]


def _reached(tree: ast.Module, source: str, entry: str) -> tuple[set[str], list[ast.stmt]]:
    """:func:`reached_names`, and the top-level statements that bind them."""
    reads = Reads(tree, source)
    binding: dict[str, list[int]] = {}
    for index, statement in enumerate(tree.body):
        for name in _bound(statement):
            binding.setdefault(name, []).append(index)
    reached, queue, visited = {entry}, [entry], set()
    while queue:
        for index in binding.get(queue.pop(), []):
            if index not in visited:
                visited.add(index)
                for found in reads.of(tree.body[index]) - reached:
                    reached.add(found)
                    queue.append(found)
    return reached, [tree.body[index] for index in sorted(visited)]


def imported_names(tree: ast.Module, package: str, *, level: int) -> set[str]:
    """The names a module imports with ``from <package> import …`` (relative: ``level``)."""
    return {
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module == package and node.level == level
        for alias in node.names
    }


def protocol_names_read(tree: ast.Module) -> set[str]:
    """The names of protocol.py a lesson or given module imports; ``{"*"}``: it may read any."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level <= 1:
            names = {alias.asname or alias.name for alias in node.names}
            module = (node.module or "", node.level)
            if module in (("protocol", 1), ("pi_course.protocol", 0), ("pi_course", 0)):
                found |= names  # the package's names: protocol's among them
            if module in (("", 1), ("pi_course", 0)) and {alias.name for alias in node.names} & {"protocol"}:
                found.add("*")  # from . import protocol
        if isinstance(node, ast.Import) and any(alias.name.startswith("pi_course") for alias in node.names):
            found.add("*")
    if _dynamic(tree):
        found.add("*")
    return found


# --- which statements of protocol.py a comparison can reach ---------------------------------------


def protocol_part(source: str, roots: set[str]) -> str:
    """protocol.py as far as code reading ``roots`` can tell: the reached statements, compared as syntax."""
    kept = reached_statements(source, roots)
    return "\n".join(ast.dump(statement) for statement in kept)


def reached_statements(source: str, roots: set[str]) -> list[ast.stmt]:
    """The top-level statements that can change what ``roots`` are: each that binds a name read
    (from the roots on), each that may do anything else when it runs; all of them when unsure.

    A statement is left out only when it binds names nothing kept reads and running it runs no
    code but ``dataclasses``' (:func:`_inert`): so the module's values for the kept names are the
    same with it and without it.
    """
    tree = ast.parse(source)
    body = tree.body
    if "*" in roots or not _postponed(tree) or not _plain_dataclasses(tree):
        return body
    reads = Reads(tree, source)
    names = [reads.of(statement) for statement in body]
    needed = set(roots)
    kept = [not _inert(statement) for statement in body]
    changed = True
    while changed:
        changed = False
        for index, statement in enumerate(body):
            if not kept[index] and _bound(statement) & needed:
                kept[index] = True
            if kept[index] and not names[index] <= needed:
                needed |= names[index]
                changed = True
        if any(_reads_dynamically(statement) for index, statement in enumerate(body) if kept[index]):
            return body
    return [statement for index, statement in enumerate(body) if kept[index]]


def _postponed(tree: ast.Module) -> bool:
    """``from __future__ import annotations``: annotations are never evaluated when a class is made."""
    return any(
        isinstance(node, ast.ImportFrom)
        and node.module == "__future__"
        and any(alias.name == "annotations" for alias in node.names)
        for node in tree.body
    )


def _plain_dataclasses(tree: ast.Module) -> bool:
    """``dataclass`` and ``field`` are bound only by ``from dataclasses import …``, never again."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Global) and {"dataclass", "field"} & set(node.names):
            return False
    for statement in tree.body:
        if isinstance(statement, ast.ImportFrom) and statement.module == "dataclasses":
            if any(alias.asname in ("dataclass", "field") for alias in statement.names):
                return False
            if any(alias.name in ("dataclass", "field") and alias.asname for alias in statement.names):
                return False
            continue
        if {"dataclass", "field"} & _bound(statement):
            return False
    return True


def _reads_dynamically(statement: ast.stmt) -> bool:
    """Dynamic access (:func:`_dynamic`), or an import inside a def or class: it may load anything."""
    nested = any(
        isinstance(node, (ast.Import, ast.ImportFrom)) and node is not statement
        for node in ast.walk(statement)
    )
    return nested or _dynamic(statement)


def _constant(node: ast.expr | None) -> bool:
    return node is None or isinstance(node, ast.Constant)


def _inert_function(node: ast.stmt) -> bool:
    """A def with no decorators and constant defaults: making it runs nothing."""
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or node.decorator_list:
        return False
    return all(_constant(default) for default in [*node.args.defaults, *node.args.kw_defaults])


def _field_call(node: ast.expr | None) -> bool:
    """``field(...)`` with constant arguments, or a name as its ``default_factory`` (called later)."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "field"):
        return False
    return not node.args and all(
        _constant(keyword.value) or (keyword.arg == "default_factory" and isinstance(keyword.value, ast.Name))
        for keyword in node.keywords
    )


def _dataclass_decorator(node: ast.expr) -> bool:
    if isinstance(node, ast.Name):
        return node.id == "dataclass"
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "dataclass"
        and not node.args
        and all(_constant(keyword.value) for keyword in node.keywords)
    )


def _inert(node: ast.stmt) -> bool:
    """Running this top-level statement binds its names and runs no other code (``dataclass`` aside)."""
    if isinstance(node, ast.Pass) or (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)):
        return True
    if isinstance(node, ast.Assign):
        return all(isinstance(target, ast.Name) for target in node.targets) and _constant(node.value)
    if isinstance(node, ast.AnnAssign):
        return isinstance(node.target, ast.Name) and _constant(node.value)
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return _inert_function(node)
    if isinstance(node, ast.ClassDef):
        if node.bases or node.keywords or not all(map(_dataclass_decorator, node.decorator_list)):
            return False
        return all(_inert_member(member) for member in node.body)
    return False


def _inert_member(node: ast.stmt) -> bool:
    if isinstance(node, ast.AnnAssign):
        return isinstance(node.target, ast.Name) and (_constant(node.value) or _field_call(node.value))
    if isinstance(node, ast.ClassDef):
        return False
    return _inert(node)
