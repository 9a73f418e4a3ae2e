"""The chapter's reference lesson modules, loaded beside the tree's own: what ``check`` compares with.

The twin is an in-memory package, :data:`TWIN`, holding the reference ``outbound``, ``adapter``,
``sse`` and ``transport`` (:func:`~.starters.reference_sources`: the target the tree carries,
else the marked modules of the package itself or of the one the tooling loads from). Its
``protocol``, ``seam``, ``stream_rules`` and ``payload_reading`` *are* the tree's own modules, so
the learner's pieces and the reference's exchange the same types and can be composed.
"""

from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass
from types import ModuleType

from .starters import reference_sources

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


def reference_twin() -> Twin:
    """The reference lesson modules over this tree's given modules (loaded once per process)."""
    loaded = sys.modules.get(TWIN)
    if loaded is not None and all(f"{TWIN}.{name}" in sys.modules for name in TWINNED):
        return _twin_of(loaded)
    package = ModuleType(TWIN, "The chapter's reference lesson modules (pi_course.course.twin).")
    package.__path__ = []
    package.__package__ = TWIN
    sys.modules[TWIN] = package
    for name in SHARED:
        shared = importlib.import_module(f"pi_course.{name}")
        sys.modules[f"{TWIN}.{name}"] = shared
        setattr(package, name, shared)
    sources = reference_sources()
    for name in TWINNED:
        module = ModuleType(f"{TWIN}.{name}")
        module.__package__ = TWIN
        module.__file__ = f"<reference pi_course/{name}.py>"
        sys.modules[module.__name__] = module
        code = compile(sources[f"{name}.py"], module.__file__, "exec")
        exec(code, module.__dict__)
        setattr(package, name, module)
    return _twin_of(package)


def _twin_of(package: ModuleType) -> Twin:
    return Twin(*(getattr(package, name) for name in ("outbound", "adapter", "sse", "transport")))
