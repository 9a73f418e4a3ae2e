"""Steppers for the notebooks: partial snapshots and the SSE line buffer, one step at a time.

Every step is rendered to HTML up front and put in a ``Stack``; Play and the slider are linked to
it in the browser (``jslink``), so stepping needs no kernel once the widget state is saved. The
``text/plain`` form lists every step, deterministically, so nbval checks the real content.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import ipywidgets as widgets

from ..sse import SSEDecoder, SSEEvent
from ..types import AssistantContent, ModelEvent, TextContent

_CELL = "border:1px solid #ccc;padding:2px 8px;text-align:left;font-family:monospace"
_CHANGED = "background:#fff3b0"


def _code(value: str) -> str:
    return f"<code>{html.escape(value)}</code>"


def _block_text(block: AssistantContent) -> str:
    if isinstance(block, TextContent):
        return f"text {block.text!r}"
    arguments = block.raw_arguments if isinstance(block.arguments, str) else block.arguments
    return f"toolCall {block.id} {block.name} {arguments!r}"


def content_table(content: Sequence[AssistantContent], changed: int | None = None) -> str:
    """The partial's content as an HTML table; the slot this event changed is highlighted."""
    if not content:
        return "<p><i>content 为空</i></p>"
    rows = []
    for index, block in enumerate(content):
        style = f"{_CELL};{_CHANGED}" if index == changed else _CELL
        if isinstance(block, TextContent):
            kind, value = "text", block.text
        else:
            arguments = block.arguments if isinstance(block.arguments, str) else repr(block.arguments)
            kind, value = "toolCall", f"{block.id} · {block.name} · {arguments}"
        rows.append(
            f'<tr><td style="{style}">{index}</td><td style="{style}">{kind}</td>'
            f'<td style="{style}">{html.escape(value)}</td></tr>'
        )
    head = (
        f'<tr><th style="{_CELL}">slot</th><th style="{_CELL}">type</th><th style="{_CELL}">value</th></tr>'
    )
    return f'<table style="border-collapse:collapse"><tr>{head}</tr>{"".join(rows)}</table>'


def _event_parts(event: ModelEvent) -> tuple[str, int | None, str, Sequence[AssistantContent]]:
    """(type, content_index, delta or detail, content) for any event."""
    match event.type:
        case "text_delta" | "toolcall_delta":
            return event.type, event.content_index, repr(event.delta), event.partial.content
        case "toolcall_end":
            call = event.tool_call
            return event.type, event.content_index, f"{call.name}({call.arguments!r})", event.partial.content
        case "start":
            return "start", None, "", event.partial.content
        case "done":
            return "done", None, event.reason, event.message.content
        case _:
            return "error", None, f"{event.reason}: {event.error.error_message}", event.error.content


class _Stepper(widgets.VBox):  # type: ignore[misc]
    def __init__(self, title: str, pages: Sequence[str], lines: Sequence[str]) -> None:
        last = max(len(pages) - 1, 0)
        self.play = widgets.Play(value=0, min=0, max=last, step=1, interval=900, description="Play")
        self.slider = widgets.IntSlider(value=0, min=0, max=last, description="step")
        self.stack = widgets.Stack([widgets.HTML(page) for page in pages], selected_index=0)
        # Linked in the browser: stepping works from saved widget state, with no kernel.
        self.links = [
            widgets.jslink((self.play, "value"), (self.slider, "value")),
            widgets.jslink((self.slider, "value"), (self.stack, "selected_index")),
        ]
        heading = widgets.HTML(f"<b>{html.escape(title)}</b>")
        super().__init__([heading, widgets.HBox([self.play, self.slider]), self.stack])
        self.title = title
        self.lines = list(lines)

    def __repr__(self) -> str:
        return "\n".join([f"{self.title} · {len(self.lines)} steps", *self.lines])

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        bundle: dict[str, Any] = super()._repr_mimebundle_(**kwargs)
        bundle["text/plain"] = repr(self)  # ipywidgets cuts its own at 110 characters
        return bundle


class PartialStepper(_Stepper):
    """Step through a stream's events: type, ``content_index``, delta and the partial's content."""

    def __init__(self, events: Sequence[ModelEvent], title: str = "partial snapshots") -> None:
        pages, lines = [], []
        for step, event in enumerate(events):
            kind, index, detail, content = _event_parts(event)
            slot = "—" if index is None else f"#{index}"
            pages.append(
                f"<p>step {step}: <b>{kind}</b> · content_index {slot} · {_code(detail)}</p>"
                + content_table(content, index)
            )
            blocks = " | ".join(_block_text(block) for block in content) or "(empty)"
            lines.append(f"{step:>2} {kind:<14} {slot:<3} {detail:<24} → {blocks}")
        super().__init__(title, pages, lines)


@dataclass(frozen=True)
class ReadStep:
    """One network read through the SSE decoder, as the chapter's line buffer sees it."""

    read: str
    buffer: str
    lines: tuple[str, ...]
    events: tuple[SSEEvent, ...]
    pending: str


def trace_reads(reads: Sequence[bytes]) -> list[ReadStep]:
    """Feed ``reads`` to a real :class:`SSEDecoder` and record what each read changed."""
    decoder = SSEDecoder()
    steps = []
    shown = 0  # characters of the pending text already listed as complete lines
    for chunk in reads:
        before = decoder.pending
        events = decoder.feed(chunk)
        buffer = before + chunk.decode("utf-8", "replace")
        complete = buffer[: buffer.rfind("\n") + 1]
        lines = tuple(complete[shown:].split("\n")[:-1])
        pending = decoder.pending
        shown = pending.rfind("\n") + 1
        steps.append(ReadStep(chunk.decode("utf-8", "replace"), buffer, lines, tuple(events), pending))
    return steps


class SSEBufferStepper(_Stepper):
    """Step through network reads: the buffer after appending, lines taken out, payloads sent."""

    def __init__(self, reads: Sequence[bytes], title: str = "SSE line buffer") -> None:
        pages, lines = [], []
        for number, step in enumerate(trace_reads(reads), start=1):
            taken = (
                "".join(f"<li>{_code(line)}</li>" for line in step.lines) or "<li><i>没有完整的行</i></li>"
            )
            sent = "".join(f"<li>{_code(event.data)}</li>" for event in step.events) or "<li><i>无</i></li>"
            pages.append(
                f"<p>read #{number}: {_code(step.read)}</p>"
                f"<p>append 后的 buffer：{_code(step.buffer)}</p>"
                f"<p>取出的完整行：</p><ul>{taken}</ul>"
                f"<p>分发的 payload：</p><ul>{sent}</ul>"
                f"<p>留在 buffer 中：{_code(step.pending)}</p>"
            )
            lines.append(
                f"read #{number}: {len(step.read)} chars · lines taken {list(step.lines)!r} · "
                f"payloads {[event.data for event in step.events]!r} · pending {step.pending!r}"
            )
        super().__init__(title, pages, lines)
