"""The chapter's reference lesson modules, loaded beside the tree's own: what ``check`` compares with.

The twin is an in-memory package, :data:`TWIN`, holding the reference ``outbound``, ``adapter``,
``sse`` and ``transport`` (:func:`~..copies.starters.reference_sources`: the target the tree carries,
else the marked modules of the package itself or of the one the tooling loads from). Its
``protocol``, ``seam``, ``stream_rules`` and ``payload_reading`` *are* the tree's own modules, so
the learner's pieces and the reference's exchange the same types and can be composed.
"""

from __future__ import annotations

import hashlib
import importlib
import sys
from dataclasses import dataclass
from types import ModuleType

from ...chapter.contract import Edit
from ..copies.starters import reference_sources

TWIN = "pi_course._reference_twin"
SHARED = ("protocol", "seam", "stream_rules", "payload_reading")  # given code: one copy for both
TWINNED = ("outbound", "sse", "adapter", "transport")  # the lesson modules a twin holds, in import order


@dataclass(frozen=True)
class Twin:
    """The reference's lesson modules, by name."""

    outbound: ModuleType
    adapter: ModuleType
    sse: ModuleType
    transport: ModuleType


def reference_twin(edits: tuple[Edit, ...] = ()) -> Twin:
    """The reference lesson modules over this tree's given modules (loaded once per process).

    ``edits``: the reference taking another choice the chapter allows (:mod:`~pi_course.chapter.contract`);
    ValueError when an edit's text is not in its file exactly once.
    """
    package_name = TWIN if not edits else f"{TWIN}_{_digest(edits)}"
    loaded = sys.modules.get(package_name)
    if loaded is not None and all(f"{package_name}.{name}" in sys.modules for name in TWINNED):
        return _twin_of(loaded)
    sources = edited(reference_sources(), edits)
    package = ModuleType(
        package_name, "The chapter's reference lesson modules (pi_course.course.checker.twin)."
    )
    package.__path__ = []
    package.__package__ = package_name
    sys.modules[package_name] = package
    for name in SHARED:
        shared = importlib.import_module(f"pi_course.{name}")
        sys.modules[f"{package_name}.{name}"] = shared
        setattr(package, name, shared)
    for name in TWINNED:
        module = ModuleType(f"{package_name}.{name}")
        module.__package__ = package_name
        module.__file__ = f"<reference pi_course/{name}.py>"
        sys.modules[module.__name__] = module
        code = compile(sources[f"{name}.py"], module.__file__, "exec")
        exec(code, module.__dict__)
        setattr(package, name, module)
    return _twin_of(package)


def edited(sources: dict[str, str], edits: tuple[Edit, ...]) -> dict[str, str]:
    """``sources`` (file name → text) with each edit applied in turn, each to a text found exactly once."""
    changed = dict(sources)
    for edit in edits:
        text = changed[edit.file]
        if text.count(edit.reference) != 1:
            raise ValueError(
                f"{edit.file}: {edit.reference[:60]!r} occurs {text.count(edit.reference)} times"
            )
        changed[edit.file] = text.replace(edit.reference, edit.allowed)
    return changed


def _digest(edits: tuple[Edit, ...]) -> str:
    return hashlib.sha256(repr(edits).encode()).hexdigest()[:12]


def _twin_of(package: ModuleType) -> Twin:
    return Twin(*(getattr(package, name) for name in ("outbound", "adapter", "sse", "transport")))
