"""The chapter's reference lesson modules, loaded beside the tree's own: what ``check`` compares with.

The twin is an in-memory package, :data:`TWIN`, holding the reference ``outbound``, ``adapter``,
``sse`` and ``transport`` (:func:`reference_files`: the target the tree carries, else the marked
modules of the package the tooling loads from). Its ``protocol``, ``seam``, ``stream_rules`` and
``payload_reading`` *are* the tree's own modules, so the learner's pieces and the reference's
exchange the same types and can be composed: the learner's adapter over the reference's reader.
"""

from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from .starters import TARGET_FOLDER, lab_regions, reference_sources

TWIN = "pi_course._reference_twin"
SHARED = ("protocol", "seam", "stream_rules", "payload_reading")  # given code: one copy for both
LESSON = ("outbound", "sse", "adapter", "transport")  # in import order: adapter needs outbound


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
    if loaded is not None and all(f"{TWIN}.{name}" in sys.modules for name in LESSON):
        return _twin_of(loaded)
    package = ModuleType(TWIN, "The chapter's reference lesson modules (pi_course.course.twin).")
    package.__path__ = []
    package.__package__ = TWIN
    sys.modules[TWIN] = package
    for name in SHARED:
        shared = importlib.import_module(f"pi_course.{name}")
        sys.modules[f"{TWIN}.{name}"] = shared
        setattr(package, name, shared)
    sources = reference_files()
    for name in LESSON:
        module = ModuleType(f"{TWIN}.{name}")
        module.__package__ = TWIN
        module.__file__ = f"<reference pi_course/{name}.py>"
        sys.modules[module.__name__] = module
        code = compile(sources[f"{name}.py"], module.__file__, "exec")
        exec(code, module.__dict__)
        setattr(package, name, module)
    return _twin_of(package)


def reference_files() -> dict[str, str]:
    """The reference's LAB-marked modules by file name, from the first place that has them.

    The target the tree under test carries (a practice copy's, or the tree ``grade`` assembles);
    else the marked modules of the package this tooling belongs to: the reference itself, or in a
    browser tab the installed wheel's (``check`` there tests a copy in memory without its tooling).
    """
    lesson_package = sys.modules.get("pi_course") or importlib.import_module("pi_course")
    tooling_package = Path(__file__).resolve().parents[1]
    for package in (Path(str(lesson_package.__file__)).parent, tooling_package):
        target = package / TARGET_FOLDER
        if target.is_dir():
            return {path.name: path.read_text(encoding="utf-8") for path in sorted(target.glob("*.py"))}
    marked = {path.name: path.read_text(encoding="utf-8") for path in sorted(tooling_package.glob("*.py"))}
    found = {name: text for name, text in marked.items() if lab_regions(text)}
    return found if found else reference_sources()


def _twin_of(package: ModuleType) -> Twin:
    return Twin(*(getattr(package, name) for name in ("outbound", "adapter", "sse", "transport")))
