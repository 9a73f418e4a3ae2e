"""The inputs hypothesis draws for the comparisons with the reference, drawn once and replayed.

``tests/test_05_compare.py`` draws its inputs derandomized: the same inputs at every run, whatever
code is under test, up to the first one that fails. Drawing them cost most of a comparison's time
(2.9 of 3.3 CPU seconds), so they are drawn once when the course is built (``make drawn``: the
reference, which passes every input), kept in :data:`STORE`, and replayed. The first replayed input
that fails sends the comparison back to hypothesis, which draws the same inputs up to it and shrinks
it: the same verdict and the same message. A store drawn from another test file or hypothesis, or
holding a class whose constructor changed, is not used: hypothesis draws as before. The Python is
not part of it: hypothesis 6.155.7 draws these inputs the same on CPython 3.11, 3.12 and 3.13
(checked when this was decided), so every Python, the browser tab's included, replays them; and
where a drawing differed, a replayed input that fails and that hypothesis does not meet again
fails as it was kept (``on_generated``), so the verdict never depends on it.

Hypothesis also draws some values from the literals of the local code it finds imported (its "local
constants"): the learner's own code, and whichever modules a run happened to load, so a copy's inputs
depended on its code, on ``--step`` and on the edition (a browser tab never had them).
:func:`same_inputs_everywhere` leaves them out: every copy, run and edition draws the same inputs.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import importlib
import inspect
import json
import math
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

STORE = Path(__file__).with_name("drawn_inputs.json")
SWITCH = "PI_COURSE_DRAWN"  # "0": always draw; a path: draw, and keep what was drawn there (make drawn)
FORMAT = 1
TAG = "~"  # the key that marks an encoded value that JSON has no type for


class NotKept(Exception):
    """A value (or a store) that cannot stand for what hypothesis would draw: draw instead."""


def facts(test_file: Path) -> dict[str, str | int]:
    """What the kept inputs depend on besides the strategies' classes: the test file and hypothesis."""
    import hypothesis

    return {
        "format": FORMAT,
        "test_file": hashlib.sha256(test_file.read_bytes()).hexdigest(),
        "hypothesis": hypothesis.__version__,
    }


def site(depth: int = 2) -> str:
    """Which drawing this is: the calling test function and the line it draws from."""
    frame = sys._getframe(depth)
    return f"{frame.f_code.co_name}:{frame.f_lineno}"


@contextlib.contextmanager
def same_inputs_everywhere() -> Iterator[None]:
    """Hypothesis without its local constants while it draws (as in a browser tab, where it has none)."""
    try:
        from hypothesis.internal.conjecture import providers
        from hypothesis.internal.constants_ast import Constants

        saved = providers._get_local_constants
        cache = providers.CONSTANTS_CACHE.cache
    except (ImportError, AttributeError):  # another hypothesis: its facts differ, nothing kept is replayed
        yield
        return
    providers._get_local_constants = Constants
    cache.clear()
    try:
        yield
    finally:
        providers._get_local_constants = saved
        providers.CONSTANTS_CACHE.cache.clear()


# --- values as JSON ------------------------------------------------------------------------------


def _ref(cls: type) -> str:
    if "<locals>" in cls.__qualname__:
        raise NotKept(f"a local class: {cls.__qualname__}")
    return f"{cls.__module__}:{cls.__qualname__}"


def _signature(cls: type) -> list[list[str]] | None:
    """How the class is called: its parameters' names, kinds and defaults (None: a builtin's)."""
    try:
        parameters = inspect.signature(cls).parameters.values()
    except (TypeError, ValueError):
        return None
    return [[p.name, p.kind.name, repr(p.default)] for p in parameters]


def encode(value: object, classes: dict[str, Any]) -> Any:
    """``value`` as JSON data; ``classes`` gathers each class it names with its signature."""
    kind = type(value)
    if value is None or kind in (bool, int, str):
        return value
    if kind is float:
        return value if math.isfinite(value) else {TAG: "float", "repr": repr(value)}  # type: ignore[arg-type]
    if kind is list:
        return [encode(item, classes) for item in value]  # type: ignore[attr-defined]
    if kind is tuple:
        return {TAG: "tuple", "of": [encode(item, classes) for item in value]}  # type: ignore[attr-defined]
    if kind is dict:
        return {TAG: "dict", "of": [[encode(k, classes), encode(v, classes)] for k, v in value.items()]}  # type: ignore[attr-defined]
    if kind is bytes:
        return {TAG: "bytes", "hex": value.hex()}  # type: ignore[attr-defined]
    if isinstance(value, BaseException):
        if vars(value) or value.__cause__ or value.__context__ or value.__traceback__:
            raise NotKept(f"an exception with more than its args: {value!r}")
        ref = _ref(kind)
        classes[ref] = _signature(kind)
        return {TAG: "raise", "class": ref, "args": [encode(arg, classes) for arg in value.args]}
    if isinstance(value, tuple) and hasattr(kind, "_fields"):  # a NamedTuple
        ref = _ref(kind)
        classes[ref] = _signature(kind)
        named = zip(kind._fields, value, strict=True)
        return {TAG: "new", "class": ref, "with": [[name, encode(item, classes)] for name, item in named]}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = dataclasses.fields(value)
        if any(not field.init for field in fields):
            raise NotKept(f"a field its constructor does not take: {kind.__qualname__}")
        ref = _ref(kind)
        classes[ref] = _signature(kind)
        pairs = [[field.name, encode(getattr(value, field.name), classes)] for field in fields]
        return {TAG: "new", "class": ref, "with": pairs}
    raise NotKept(f"no encoding for {kind.__qualname__}")


def _resolve(ref: str) -> type:
    module_name, _, qualname = ref.partition(":")
    module = sys.modules.get(module_name) or importlib.import_module(module_name)
    found: Any = module
    for part in qualname.split("."):
        found = getattr(found, part)
    if not isinstance(found, type):
        raise NotKept(f"not a class: {ref}")
    return found


def decode(tree: Any, classes: dict[str, type]) -> Any:
    """A fresh value from :func:`encode`'s data, its classes built by calling them as hypothesis did."""
    if isinstance(tree, list):
        return [decode(item, classes) for item in tree]
    if not isinstance(tree, dict):
        return tree
    tag = tree[TAG]
    if tag == "tuple":
        return tuple(decode(item, classes) for item in tree["of"])
    if tag == "dict":
        return {decode(k, classes): decode(v, classes) for k, v in tree["of"]}
    if tag == "bytes":
        return bytes.fromhex(tree["hex"])
    if tag == "float":
        return float(tree["repr"])
    if tag == "raise":
        return classes[tree["class"]](*(decode(arg, classes) for arg in tree["args"]))
    if tag == "new":
        return classes[tree["class"]](**{name: decode(item, classes) for name, item in tree["with"]})
    raise NotKept(f"unknown tag {tag!r}")


def _classes(signatures: dict[str, Any]) -> dict[str, type]:
    """The classes a drawing names, as the tree under test defines them now: each must be called
    the same way as when it was drawn (same parameters and defaults), else hypothesis draws."""
    found = {}
    for ref, signature in signatures.items():
        try:
            cls = _resolve(ref)
        except (ImportError, AttributeError) as error:
            raise NotKept(f"{ref}: {error}") from None
        if _signature(cls) != signature:
            raise NotKept(f"{ref} is called differently now")
        found[ref] = cls
    return found


# --- replaying and keeping -----------------------------------------------------------------------


@functools.cache
def _store(path: Path) -> dict[str, Any] | None:
    try:
        return dict(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError):
        return None


def replay(where: str, test_file: Path) -> list[Any] | None:
    """The inputs hypothesis draws at ``where``, fresh; None when they are not kept for this run."""
    if SWITCH in os.environ:
        return None
    store = _store(STORE)
    if store is None:
        return None
    try:
        if store.get("facts") != facts(test_file):
            return None
        drawing = store["drawings"][where]
        classes = _classes(drawing["classes"])
        return [decode(tree, classes) for tree in drawing["values"]]
    except (NotKept, KeyError, TypeError, ValueError, ImportError):
        return None


def keeping() -> Path | None:
    """Where this run keeps what hypothesis draws (``make drawn``), if it does."""
    value = os.environ.get(SWITCH, "")
    return Path(value) if value not in ("", "0") else None


def keep(where: str, test_file: Path, values: list[Any]) -> None:
    """Add the inputs drawn at ``where`` to the store being made; a value that does not come back
    the same from its encoding leaves this drawing out (hypothesis will draw it)."""
    path = keeping()
    if path is None:
        return
    try:
        store = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        store = {}
    if store.get("facts") != facts(test_file):
        store = {"facts": facts(test_file), "drawings": {}}
    try:
        signatures: dict[str, Any] = {}
        trees = [encode(value, signatures) for value in values]
        classes = _classes(signatures)
        if any(repr(decode(tree, classes)) != repr(value) for tree, value in zip(trees, values, strict=True)):
            raise NotKept("a value does not come back the same")
    except NotKept as why:
        store["drawings"].pop(where, None)
        print(f"drawn: {where} not kept ({why})", file=sys.stderr)
    else:
        store["drawings"][where] = {"classes": signatures, "values": trees}
    path.write_text(json.dumps(store, ensure_ascii=False, sort_keys=True) + "\n", encoding="utf-8")
