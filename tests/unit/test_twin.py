"""The reference twin (pi_course.course.checker.twin): the reference's lesson modules over this tree's given code."""

from __future__ import annotations

from pathlib import Path

import pytest

import pi_course.adapter
import pi_course.protocol
import pi_course.seam
from pi_course.course.checker.twin import TWIN, reference_twin


def test_the_twin_is_the_reference_over_the_trees_own_types() -> None:
    twin = reference_twin()
    assert twin.adapter is not pi_course.adapter and twin.adapter.__name__ == f"{TWIN}.adapter"
    # one set of types: the learner's pieces and the reference's exchange the same objects
    assert twin.adapter.AssistantMessage is pi_course.protocol.AssistantMessage
    assert twin.sse.TextChunk is pi_course.seam.TextChunk
    # the twin's pieces call each other, not the tree's lesson modules
    assert twin.adapter.build_request is twin.outbound.build_request
    assert twin.transport.iter_sse_events is twin.sse.iter_sse_events
    assert reference_twin().adapter is twin.adapter  # loaded once per process


def test_without_a_target_beside_the_lesson_the_tooling_packages_reference_is_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A browser tab's check tests a copy in memory that holds no tooling (nor its target): the
    reference then comes from the package the tooling loads from (the wheel there)."""
    from pi_course.course.copies import starters

    repository = starters.reference_sources()  # the repository's own marked modules
    in_memory = tmp_path / "pi_course"
    in_memory.mkdir()
    (in_memory / "outbound.py").write_text("def build_request(model, context): ...\n")  # a learner's
    monkeypatch.setattr(starters, "PACKAGE", in_memory)
    assert starters.reference_sources() == {
        name: text for name, text in repository.items() if "/" not in name
    }
    target = in_memory / "course" / "target-05"
    target.mkdir(parents=True)
    (target / "outbound.py").write_text("# the copy's target\n")
    assert starters.reference_sources() == {"outbound.py": "# the copy's target\n"}


def test_a_comparison_gets_its_markers_multiple_of_the_per_test_bound() -> None:
    from pi_course.course.checker.plugin_path.pi_course_check.plugin import BOUND_TIMES, CheckReporter

    class Item:
        def __init__(self, marker: pytest.MarkDecorator | None) -> None:
            self.marker = marker.mark if marker is not None else None

        def get_closest_marker(self, name: str) -> object:
            return self.marker if self.marker is not None and self.marker.name == name else None

    reporter = CheckReporter(5.0)
    assert reporter.bound(Item(None)) == 5.0  # type: ignore[arg-type]
    assert reporter.bound(Item(getattr(pytest.mark, BOUND_TIMES)(8))) == 40.0  # type: ignore[arg-type]
    source = (Path(__file__).parents[1] / "test_05_compare.py").read_text(encoding="utf-8")
    assert f"pytestmark = pytest.mark.{BOUND_TIMES}(8)" in source
