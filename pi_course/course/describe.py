"""One plain-text line per model event: what ``python -m pi_course chat`` prints, and notebooks too.

It sits in ``course/`` (below ``notebook/``, which re-exports it) so that the command line never
imports the notebook helpers.
"""

from __future__ import annotations

from ..protocol import ModelEvent


def describe_event(event: ModelEvent) -> str:
    """One terminal line per event, for ``chat`` and for notebooks."""
    match event.type:
        case "start":
            return "start"
        case "text_delta" | "toolcall_delta":
            return f"{event.type:<14} #{event.content_index} {event.delta!r}"
        case "toolcall_end":
            call = event.tool_call
            return f"toolcall_end   #{event.content_index} {call.name}({call.raw_arguments}) id={call.id}"
        case "done":
            usage = event.message.usage
            return f"done           {event.reason} (tokens in {usage.input}, out {usage.output})"
        case _:
            return f"error          {event.reason}: {event.error.error_message}"
