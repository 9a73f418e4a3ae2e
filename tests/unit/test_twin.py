"""The reference twin (pi_course.course.twin): the reference's lesson modules over this tree's given code."""

from __future__ import annotations

import pi_course.adapter
import pi_course.protocol
import pi_course.seam
from pi_course.course.twin import TWIN, reference_twin


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
