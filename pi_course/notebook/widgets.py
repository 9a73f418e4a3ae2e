"""Steppers for the notebooks: the adapter's state machine and the SSE line buffer, one step at a time.

Two widgets, both built the same way:

* :class:`PartialStepper` — ``PartialStepper(chunks, events, title)``: the ProviderChunks fed to an
  adapter and the ModelEvents it emitted. Each step shows the chunk read (with its Provider
  ``index``), the event emitted, the ``tool_buffers`` view (Provider index → id, name, raw
  arguments, content_index) and the partial's content with the changed slot highlighted. The view
  is derived from the chunks and the events only, never from an adapter's internals, so a
  learner's adapter — or a deliberately broken one — can be shown too (``slots=`` adds a content
  slot no event reported, as 05-5's experiment records it).
  ``await PartialStepper.replay(chunks, title)`` runs the chunks through an adapter and records
  which chunk each event answered.
* :class:`SSEBufferStepper` — ``SSEBufferStepper(reads, title)``: network reads (``bytes``) fed to
  the real :class:`~pi_course.sse.SSEDecoder`; each step shows the read, the line buffer after the
  append (line ends as ``↵``, the blank line as a 空行 badge, where the read ended), the complete
  lines taken out, the payloads dispatched and what stays in the buffer.
  ``SSEBufferStepper.mainline()`` steps through the mainline in ten reads.

Every step is rendered to HTML up front and put in a ``Stack``; Play and the slider are linked to it
in the browser (``jslink``), so stepping needs no kernel once the widget state is saved; every page
has the same size and layout, so stepping moves nothing around it. Displaying a stepper produces two
outputs: a compact static HTML table with a row per step (what GitHub, nbviewer, ``nbconvert --to
html`` and a practice copy's 预期输出 show; its ``text/plain`` lists every step deterministically
for nbval) and the live widget. When the live widget renders, its stylesheet hides
the static table of the same output area, so JupyterLab shows the stepper once. Colours come from
JupyterLab's theme variables, with fallbacks for pages without them.
"""

from __future__ import annotations

import codecs
import html
import re
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import ipywidgets as widgets
from IPython.display import display

from ..chapter.wire import mainline_sse_reads

# --- styles -------------------------------------------------------------------------------------

#: Shared by the live pages and the static table. Every colour is a JupyterLab theme variable with
#: a fallback; highlights mix a theme colour into the page background and keep the theme's own
#: text colour, so the contrast holds in light and dark themes alike.
#:
#: ``.pi-sv.pi-sv td`` outranks JupyterLab's ``:not(.jp-RenderedMarkdown).jp-RenderedHTMLCommon td``
#: (right-aligned, middle) where the static table is rendered HTML.
#:
#: Layout: every table has a fixed layout (``<colgroup>`` widths, long strings wrap inside their
#: cell), so a highlighted row never widens a column. A live page is a two-column grid whose
#: columns are fractions of the output's width (one column below 640 px, decided by the width
#: alone); each section of the detail column overlays hidden copies of its tallest variants
#: (``pi-sizers``), so the page keeps one height and every heading stays put while stepping.
STYLE = """
.pi-sv { color: var(--jp-ui-font-color1, #222); font-size: var(--jp-ui-font-size1, 13px);
  line-height: 1.45; }
.pi-sv .pi-title { font-weight: 600; font-size: var(--jp-content-font-size2, 15px);
  color: var(--jp-ui-font-color0, #000); margin: 2px 0 6px; }
.pi-sv table { border-collapse: collapse; margin: 2px 0 8px; table-layout: fixed; width: 100%; }
.pi-sv.pi-sv th, .pi-sv.pi-sv td { border: 1px solid var(--jp-border-color2, #ccc); padding: 2px 6px;
  text-align: left; vertical-align: top; color: var(--jp-ui-font-color1, #222); overflow-wrap: anywhere;
  line-height: 1.45; }
.pi-sv th { background: var(--jp-layout-color2, #eee); color: var(--jp-ui-font-color0, #000);
  font-weight: 600; }
.pi-sv.pi-sv th { overflow-wrap: normal; }  /* headers break between words, never inside one */
.pi-sv code, .pi-sv .pi-mono { font-family: var(--jp-code-font-family, monospace);
  font-size: var(--jp-code-font-size, 13px); }
.pi-sv .pi-str { border: 1px solid var(--jp-border-color1, #aaa); border-radius: 3px; padding: 0 3px;
  white-space: pre-wrap; overflow-wrap: anywhere; background: var(--jp-layout-color1, #fff);
  color: var(--jp-content-font-color0, #000); -webkit-box-decoration-break: clone;
  box-decoration-break: clone; }
.pi-sv.pi-live { container-type: inline-size; }
.pi-sv .pi-page { display: grid; grid-template-columns: minmax(0, 2fr) minmax(0, 3fr);
  gap: 4px 16px; align-items: start; }
@container (max-width: 640px) { .pi-sv .pi-page { grid-template-columns: minmax(0, 1fr); } }
.pi-sv .pi-slot, .pi-sv .pi-sizers { display: grid; }
.pi-sv .pi-slot > *, .pi-sv .pi-sizers > * { grid-area: 1 / 1; min-width: 0; }
.pi-sv .pi-sizers { visibility: hidden; }
.pi-sv h4 { margin: 6px 0 2px; font-size: var(--jp-ui-font-size1, 13px); font-weight: 600;
  color: var(--jp-ui-font-color0, #000); }
.pi-sv p { margin: 2px 0 4px; }
.pi-sv ol { margin: 2px 0 4px; padding-left: 2em; }
.pi-sv .pi-note { color: var(--jp-ui-font-color2, #555); font-style: italic; }
.pi-sv tr.pi-current > td { background: var(--jp-layout-color2, #e3eefa);
  background: color-mix(in srgb, var(--jp-brand-color1, #1976d2) 24%, var(--jp-layout-color0, #fff));
  color: var(--jp-ui-font-color0, #000); }
.pi-sv tr.pi-current > td:first-child { box-shadow: inset 4px 0 0 var(--jp-brand-color1, #1976d2);
  font-weight: 600; }
.pi-sv .pi-changed, .pi-sv tr.pi-changed > td { background: var(--jp-layout-color2, #fde3c4);
  background: color-mix(in srgb, var(--jp-warn-color1, #f57c00) 30%, var(--jp-layout-color0, #fff));
  color: var(--jp-ui-font-color0, #000); }
.pi-sv .pi-missing, .pi-sv tr.pi-missing > td { background: var(--jp-layout-color2, #f9d0d0);
  background: color-mix(in srgb, var(--jp-error-color1, #d32f2f) 30%, var(--jp-layout-color0, #fff));
  color: var(--jp-ui-font-color0, #000); font-weight: 600; }
.pi-sv .pi-badge { display: inline-block; border-radius: 3px; padding: 0 4px; margin: 0 2px;
  font-size: 0.85em; font-weight: 600; white-space: nowrap; border: 1px solid; }
.pi-sv .pi-raw { border-style: dashed; border-color: var(--jp-warn-color0, #e65100);
  color: var(--jp-ui-font-color0, #000); }
.pi-sv .pi-parsed { border-color: var(--jp-success-color0, #1b5e20);
  color: var(--jp-ui-font-color0, #000);
  background: color-mix(in srgb, var(--jp-success-color1, #388e3c) 22%, var(--jp-layout-color0, #fff)); }
.pi-sv .pi-index { border-color: var(--jp-brand-color0, #0d47a1); color: var(--jp-ui-font-color0, #000); }
.pi-sv .pi-nl { color: var(--jp-brand-color1, #1976d2); font-weight: 700; }
.pi-sv .pi-blank { border-color: var(--jp-brand-color0, #0d47a1); color: var(--jp-ui-font-color0, #000);
  background: color-mix(in srgb, var(--jp-brand-color1, #1976d2) 20%, var(--jp-layout-color0, #fff)); }
.pi-sv .pi-readend { border-color: var(--jp-warn-color0, #e65100); color: var(--jp-ui-font-color0, #000);
  background: color-mix(in srgb, var(--jp-warn-color1, #f57c00) 24%, var(--jp-layout-color0, #fff));
  white-space: normal; }
.pi-sv .pi-new { text-decoration: underline; text-decoration-color: var(--jp-warn-color1, #f57c00);
  text-decoration-thickness: 2px; text-underline-offset: 3px; }
.pi-sv .pi-empty { border-color: var(--jp-border-color1, #999); color: var(--jp-ui-font-color1, #222);
  font-style: italic; }
.pi-sv .pi-buffer { display: block; font-family: var(--jp-code-font-family, monospace);
  font-size: var(--jp-code-font-size, 13px); white-space: pre-wrap; overflow-wrap: anywhere;
  border: 1px solid var(--jp-border-color1, #aaa); border-radius: 3px; padding: 1px 6px;
  margin: 1px 0; background: var(--jp-layout-color1, #fff); color: var(--jp-content-font-color0, #000); }
.pi-sv .pi-nowrap, .pi-sv .pi-steps td:first-child { white-space: nowrap; }
"""

#: Only in the live widget: once it renders, the static table of the same output is redundant.
HIDE_STATIC = """
.jp-OutputArea:has(.pi-stepper) > .jp-OutputArea-child:has(.pi-static),
.output:has(.pi-stepper) > .output_area:has(.pi-static) { display: none; }
"""

CURRENT = "pi-current"
CHANGED = "pi-changed"
MISSING = "pi-missing"


def _esc(value: object) -> str:
    return html.escape(str(value), quote=False)


def _str_box(value: str) -> str:
    """A string as a bordered code box: its boundaries are visible without quote characters."""
    if not value:
        return '<span class="pi-badge pi-empty">空字符串</span>'
    return f'<code class="pi-str">{_esc(value)}</code>'


def _badge(label: str, kind: str) -> str:
    return f'<span class="pi-badge pi-{kind}">{_esc(label)}</span>'


def _style_tag(extra: str = "") -> str:
    return f"<style>{STYLE}{extra}</style>"


def _get(obj: object, name: str, default: Any = None) -> Any:
    return getattr(obj, name, default)


def _cols(*widths: str) -> str:
    """A ``<colgroup>``: fixed widths (``""`` takes the rest) keep a table's columns still."""
    cols = "".join(f'<col style="width:{width}">' if width else "<col>" for width in widths)
    return f"<colgroup>{cols}</colgroup>"


def _table(widths: Sequence[str], head: Sequence[str], rows: Sequence[str], css: str = "") -> str:
    cls = f' class="{css}"' if css else ""
    header = "<tr>" + "".join(f"<th>{cell}</th>" for cell in head) + "</tr>"
    return f"<table{cls}>{_cols(*widths)}{header}{''.join(rows)}</table>"


# --- live pages: one height for every step ------------------------------------------------------

_TAG = re.compile(r"<[^>]+>")
_BLOCK = re.compile(r"<(?:tr|li|br|div|p|h4)\b")

#: Sizers end with this comment, so a test (or a reader of the saved state) can strip them.
SIZERS_END = "<!--/pi-sizers-->"


def _weights(fragment: str) -> tuple[int, int]:
    """Rough size of an HTML fragment: (block elements, visible characters)."""
    return len(_BLOCK.findall(fragment)), len(html.unescape(_TAG.sub("", fragment)))


def _tallest(variants: Sequence[str]) -> list[int]:
    """The variants most likely to be the tallest at some width: most blocks, most text, both."""
    if not variants:
        return []
    weights = [_weights(variant) for variant in variants]
    picks = [
        max(range(len(variants)), key=lambda i: weights[i]),
        max(range(len(variants)), key=lambda i: (weights[i][1], weights[i][0])),
        max(range(len(variants)), key=lambda i: weights[i][0] * 60 + weights[i][1]),
    ]
    return list(dict.fromkeys(picks))


def _slot(variants: Sequence[str], index: int, tallest: Sequence[int]) -> str:
    """Section ``index`` of a page, overlaid with hidden copies of the tallest variants."""
    current = variants[index]
    extra = [variants[i] for i in tallest if variants[i] != current]
    copies = "".join(f"<div>{variant}</div>" for variant in dict.fromkeys(extra))
    sizers = f'<div class="pi-sizers" aria-hidden="true">{copies}</div>{SIZERS_END}' if copies else ""
    return f'<div class="pi-slot"><div class="pi-cur">{current}</div>{sizers}</div>'


def _live_pages(steps_cols: Sequence[str], sections: Sequence[Sequence[str]]) -> list[str]:
    """Pages from each step's list column and detail sections (the same number for every step)."""
    columns = list(zip(*sections, strict=True))  # section → its variant on every step
    tallest = [_tallest(variants) for variants in columns]
    pages = []
    for index, steps_col in enumerate(steps_cols):
        detail = "".join(_slot(columns[k], index, tallest[k]) for k in range(len(columns)))
        pages.append(
            f'<div class="pi-page"><div class="pi-steps-col">{steps_col}</div>'
            f'<div class="pi-detail-col">{detail}</div></div>'
        )
    return pages


def _aligned(fragment: str) -> str:
    """Inline layout for the static tables: an untrusted notebook drops ``<style>`` but keeps these."""
    fragment = fragment.replace("<table", '<table style="table-layout:fixed;width:100%"')
    return re.sub(r"<(td|th)\b", r'<\1 style="text-align:left;vertical-align:top"', fragment)


# --- the stepper widget -------------------------------------------------------------------------

#: Below the static table (and in a practice copy's 预期输出, which shows it): true wherever it shows.
LIVE_NOTE = (
    "可以播放、拖动的步进器要在这一格运行成功后才出现（打开保存过的笔记本时，需先信任它）；"
    "上面的表格已列出每一步。"
)


class _Stepper(widgets.VBox):  # type: ignore[misc]
    """Play + slider + a Stack of pre-rendered pages, linked in the browser."""

    kind = "stepper"
    unit = "步"

    def __init__(
        self, title: str, pages: Sequence[str], lines: Sequence[str], static: str, *, first: int = 0
    ) -> None:
        # The slider shows the numbers the pages use (steps from 0, reads from 1); the Stack is
        # indexed from 0, so numbering from 1 puts an unused empty page in front.
        last = first + max(len(pages) - 1, 0)
        label = "步" if first == 0 else "读取"
        self.play = widgets.Play(value=first, min=first, max=last, step=1, interval=900, description="播放")
        self.slider = widgets.IntSlider(value=first, min=first, max=last, description=label)
        full = widgets.Layout(width="100%")
        children = [widgets.HTML("") for _ in range(first)]
        children += [widgets.HTML(f'<div class="pi-sv pi-live">{page}</div>', layout=full) for page in pages]
        self.stack = widgets.Stack(children, selected_index=first, layout=full)
        self.pages = children[first:]
        # Linked in the browser: stepping works from saved widget state, with no kernel.
        self.links = [
            widgets.jslink((self.play, "value"), (self.slider, "value")),
            widgets.jslink((self.slider, "value"), (self.stack, "selected_index")),
        ]
        heading = widgets.HTML(
            f'{_style_tag(HIDE_STATIC)}<div class="pi-sv"><div class="pi-title">{_esc(title)}</div></div>',
            layout=full,
        )
        super().__init__([heading, widgets.HBox([self.play, self.slider]), self.stack], layout=full)
        self.add_class("pi-stepper")
        self.add_class(f"pi-{self.kind}")
        self.title = title
        self.count = len(pages)
        self.lines = list(lines)
        self.static_html = (
            f'{_style_tag()}<div class="pi-sv pi-static pi-static-{self.kind}">'
            f'<div class="pi-title">{_esc(title)} · {self.count} {self.unit}</div>{_aligned(static)}</div>'
        )

    def __repr__(self) -> str:
        return "\n".join([f"{self.title} · {self.count} {self.unit}", *self.lines])

    def _repr_html_(self) -> str:
        return self.static_html

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        """The live widget alone (``_ipython_display_`` adds the static table as its own output)."""
        bundle: dict[str, Any] = super()._repr_mimebundle_(**kwargs)
        bundle["text/plain"] = f"{type(self).__name__}「{self.title}」· {self.count} {self.unit}。{LIVE_NOTE}"
        return bundle

    def _ipython_display_(self) -> None:
        # Two outputs: nbconvert (and GitHub) pick the widget view whenever the widget state is
        # saved, so a static table inside the widget's own bundle would never be shown there.
        display({"text/html": self.static_html, "text/plain": repr(self)}, raw=True)  # type: ignore[no-untyped-call]
        display(self._repr_mimebundle_(), raw=True)  # type: ignore[no-untyped-call]


# --- PartialStepper -----------------------------------------------------------------------------


@dataclass
class _Buffer:
    """The tool_buffers view of one Provider index, derived from chunks and events."""

    provider_index: int
    id: str = ""
    name: str = ""
    raw_arguments: str = ""
    content_index: int | None = None
    parsed: bool = False
    arguments: object = None
    slot_from_outside: bool = False  # content_index came from ``slots``, not from an event


@dataclass
class PartialStep:
    """One step: the chunk read (if any), the event emitted (if any) and the state after it."""

    number: int
    chunk_number: int | None  # 1-based; None before the first chunk and after the stream ended
    chunk: object | None
    event: Any | None
    after_end: bool
    repeat_chunk: bool = False
    buffers: list[_Buffer] = field(default_factory=list)
    touched_buffer: int | None = None  # Provider index whose buffer this step changed
    text_content_index: int | None = None
    finish: object | None = None
    content: tuple[Any, ...] = ()
    parsed_slots: frozenset[int] = frozenset()
    changed_slot: int | None = None
    new_slots: frozenset[int] = frozenset()  # slots content did not have before this step
    chunk_ids: frozenset[str] = frozenset()  # tool-call ids the chunks have sent so far


_END = -2  # position of an event emitted after the transport ended


def pair_events(chunks: Sequence[object], events: Sequence[Any]) -> list[int]:
    """For each event, the 0-based index of the chunk the adapter had read when it emitted it.

    ``-1`` means before any chunk, ``len(chunks)`` after the transport ended. Inferred from the
    order alone: each delta event answers the next chunk of its kind (a chunk skipped on the way,
    such as ``finish``, produced no event); ``toolcall_end`` and ``done`` come after the stream;
    an ``error`` answers the next unread chunk if there is one. :meth:`PartialStepper.replay`
    records the real positions instead.
    """
    positions: list[int] = []
    nxt = 0  # the next chunk not yet paired
    for event in events:
        kind = _get(event, "type")
        if kind == "start":
            positions.append(-1)
        elif kind in ("text_delta", "toolcall_delta"):
            want = "text" if kind == "text_delta" else "tool"
            probe = nxt
            while probe < len(chunks) and _get(chunks[probe], "type") != want:
                probe += 1
            if probe < len(chunks):
                positions.append(probe)
                nxt = probe + 1
            else:
                positions.append(max(nxt - 1, -1))
        elif kind == "error" and nxt < len(chunks):
            positions.append(nxt)
            nxt += 1
        else:
            positions.append(len(chunks))
            nxt = len(chunks)
    return positions


def _event_content(event: Any) -> tuple[Any, ...] | None:
    kind = _get(event, "type")
    message = _get(event, "message") if kind == "done" else _get(event, "error") if kind == "error" else None
    holder = message if message is not None else _get(event, "partial")
    content = _get(holder, "content")
    return tuple(content) if content is not None else None


def build_partial_steps(
    chunks: Sequence[object],
    events: Sequence[Any],
    positions: Sequence[int],
    slots: Mapping[int, int] | None = None,
) -> tuple[list[PartialStep], list[int]]:
    """Steps (chunks read with no event get their own step) and the chunks never read.

    ``slots`` (Provider index → content slot) fills in a buffer's content_index that no event
    reported — an adapter that fails on its first write to the slot emits none.
    """
    count = len(chunks)
    raw: list[tuple[int | None, Any | None, bool, bool]] = []  # (chunk index, event, after_end, repeat)
    shown = -1
    for event, position in zip(events, positions, strict=True):
        if position < 0 and position != _END:
            raw.append((None, event, False, False))
            continue
        stop = count if position in (_END, count) or position > count else position
        for index in range(shown + 1, stop):
            raw.append((index, None, False, False))
        shown = max(shown, stop - 1)
        if stop == count:
            raw.append((None, event, True, False))
        else:
            raw.append((position, event, False, position <= shown))
            shown = max(shown, position)
    unread = list(range(shown + 1, count))

    steps: list[PartialStep] = []
    buffers: dict[int, _Buffer] = {}
    text_index: int | None = None
    finish: object | None = None
    content: tuple[Any, ...] = ()
    parsed: set[int] = set()
    ids: set[str] = set()
    outside = dict(slots or {})
    for number, (chunk_index, event, after_end, repeat) in enumerate(raw):
        chunk = None if chunk_index is None else chunks[chunk_index]
        touched: int | None = None
        kind = _get(event, "type")
        slot = (
            _get(event, "content_index") if kind in ("text_delta", "toolcall_delta", "toolcall_end") else None
        )
        if chunk is not None and not repeat:
            if _get(chunk, "type") == "finish":
                finish = chunk
            elif _get(chunk, "type") == "tool":
                provider_index = _get(chunk, "index")
                buffer = buffers.setdefault(provider_index, _Buffer(provider_index))
                buffer.id = _get(chunk, "id") or buffer.id
                buffer.name = _get(chunk, "name") or buffer.name
                buffer.raw_arguments += _get(chunk, "arguments_delta") or ""
                if _get(chunk, "id"):
                    ids.add(_get(chunk, "id"))
                touched = provider_index
                if kind == "toolcall_delta" and (buffer.content_index is None or buffer.slot_from_outside):
                    buffer.content_index, buffer.slot_from_outside = slot, False
                elif buffer.content_index is None and provider_index in outside:
                    buffer.content_index, buffer.slot_from_outside = outside[provider_index], True
        if kind == "text_delta" and text_index is None:
            text_index = slot
        if kind == "toolcall_end" and isinstance(slot, int):
            parsed.add(slot)
            for buffer in buffers.values():
                if buffer.content_index == slot:
                    buffer.parsed, buffer.arguments = True, _get(_get(event, "tool_call"), "arguments")
                    touched = buffer.provider_index
        before = len(content)
        new_content = _event_content(event) if event is not None else None
        if new_content is not None:
            content = new_content
        changed = slot if isinstance(slot, int) else None
        if kind == "error" and touched is not None:
            # The stream failed on this tool chunk: if its slot is beyond content, show that.
            wanted = buffers[touched].content_index
            if wanted is not None and wanted >= len(content):
                changed = wanted
        steps.append(
            PartialStep(
                number=number,
                chunk_number=None if chunk_index is None else chunk_index + 1,
                chunk=chunk,
                event=event,
                after_end=after_end,
                repeat_chunk=repeat,
                buffers=[_Buffer(**vars(b)) for b in buffers.values()],
                touched_buffer=touched,
                text_content_index=text_index,
                finish=finish,
                content=content,
                parsed_slots=frozenset(parsed),
                changed_slot=changed,
                new_slots=frozenset(range(before, len(content))),
                chunk_ids=frozenset(ids),
            )
        )
    return steps, unread


# rendering ------------------------------------------------------------------------------------


def _chunk_html(chunk: object, number: int | None) -> str:
    prefix = f"chunk {number} · " if number is not None else ""
    kind = _get(chunk, "type")
    if kind == "tool":
        index = _get(chunk, "index")
        parts = [f"<b>tool</b> {_badge(f'Provider index {index}', 'index')}"]
        if _get(chunk, "id") is not None:
            parts.append(f"id {_str_box(_get(chunk, 'id'))}")
        if _get(chunk, "name") is not None:
            parts.append(f"name {_str_box(_get(chunk, 'name'))}")
        if _get(chunk, "arguments_delta") is not None:
            parts.append(f"arguments_delta {_badge('原文', 'raw')}{_str_box(_get(chunk, 'arguments_delta'))}")
        return prefix + " · ".join(parts)
    if kind == "text":
        return f"{prefix}<b>text</b> delta {_str_box(_get(chunk, 'delta', ''))}"
    if kind == "finish":
        usage = _get(chunk, "usage")
        tail = "" if usage is None else f" · usage {_esc(_usage_text(usage))}"
        return f"{prefix}<b>finish</b> reason {_str_box(_get(chunk, 'reason', ''))}{tail}"
    return f"{prefix}<b>{_esc(type(chunk).__name__)}</b> {_esc(chunk)}"


def _usage_text(usage: object) -> str:
    return f"input {_get(usage, 'input', 0)}, output {_get(usage, 'output', 0)}"


def _chunk_text(chunk: object) -> str:
    kind = _get(chunk, "type")
    if kind == "tool":
        fields = [f"tool index={_get(chunk, 'index')}"]
        for name in ("id", "name", "arguments_delta"):
            if _get(chunk, name) is not None:
                fields.append(f"{name}={_get(chunk, name)!r}")
        return " ".join(fields)
    if kind == "text":
        return f"text delta={_get(chunk, 'delta')!r}"
    if kind == "finish":
        usage = _get(chunk, "usage")
        return f"finish {_get(chunk, 'reason')}" + ("" if usage is None else f" ({_usage_text(usage)})")
    return f"{type(chunk).__name__}: {chunk}"


def _event_html(event: Any) -> str:
    kind = _get(event, "type")
    if event is None:
        return '<span class="pi-note">没有事件</span>'
    slot = _get(event, "content_index")
    head = f"<b>{_esc(kind)}</b>"
    if kind in ("text_delta", "toolcall_delta"):
        raw = _badge("原文", "raw") if kind == "toolcall_delta" else ""
        return f"{head} content_index <b>{_esc(slot)}</b> · delta {raw}{_str_box(_get(event, 'delta', ''))}"
    if kind == "toolcall_end":
        call = _get(event, "tool_call")
        return (
            f"{head} content_index <b>{_esc(slot)}</b> · {_esc(_get(call, 'name'))} "
            f"{_badge('已解析', 'parsed')}<code>{_esc(_value_text(_get(call, 'arguments')))}</code>"
        )
    if kind == "done":
        return f"{head} reason {_str_box(_get(event, 'reason', ''))}"
    if kind == "error":
        message = _get(_get(event, "error"), "error_message")
        return f"{head} reason {_str_box(_get(event, 'reason', ''))} · {_str_box(message or '')}"
    return head


def _value_text(value: object) -> str:
    return repr(value)


def _event_text(event: Any) -> str:
    if event is None:
        return "（没有事件）"
    kind = _get(event, "type")
    if kind in ("text_delta", "toolcall_delta"):
        return f"{kind} content_index={_get(event, 'content_index')} delta={_get(event, 'delta')!r}"
    if kind == "toolcall_end":
        call = _get(event, "tool_call")
        arguments = _value_text(_get(call, "arguments"))
        return f"toolcall_end content_index={_get(event, 'content_index')} 已解析 {arguments}"
    if kind == "done":
        return f"done {_get(event, 'reason')}"
    if kind == "error":
        return f"error {_get(event, 'reason')}: {_get(_get(event, 'error'), 'error_message')}"
    return str(kind)


#: Beside a toolCall whose id no chunk sent: the adapter made it up (a placeholder, say).
MADE_UP_ID = "没有哪个 chunk 发过这个 id：是 adapter 自己起的"


def _made_up_id(block: Any, step: PartialStep) -> bool:
    ident = _get(block, "id")
    return bool(ident) and ident not in step.chunk_ids


def _is_parsed(arguments: Any, slot: int, step: PartialStep) -> bool:
    """A tool call's arguments are shown parsed only after its toolcall_end, and only if not text."""
    return slot in step.parsed_slots and not isinstance(arguments, str)


def _slot_value_html(block: Any, slot: int, step: PartialStep) -> tuple[str, str]:
    kind = _get(block, "type")
    if kind == "text":
        return "text", _str_box(_get(block, "text", ""))
    if kind == "toolCall":
        made_up = f' <span class="pi-note">（{MADE_UP_ID}）</span>' if _made_up_id(block, step) else ""
        head = f"id {_str_box(_get(block, 'id', ''))}{made_up} · name {_str_box(_get(block, 'name', ''))}"
        raw = _get(block, "raw_arguments")
        arguments = _get(block, "arguments")
        if _is_parsed(arguments, slot, step):
            body = (
                f"arguments {_badge('已解析 · ' + type(arguments).__name__, 'parsed')}"
                f"<code>{_esc(_value_text(arguments))}</code>"
            )
            if raw is not None:
                body += f"<br>raw_arguments {_badge('原文', 'raw')}{_str_box(raw)}"
        else:
            shown = raw if raw is not None else arguments if isinstance(arguments, str) else ""
            body = f"arguments {_badge('原文 · 流式中，尚未解析', 'raw')}{_str_box(str(shown))}"
        return "toolCall", f"{head}<br>{body}"
    return _esc(kind), _esc(block)


def _slot_text(block: Any, slot: int, step: PartialStep) -> str:
    kind = _get(block, "type")
    if kind == "text":
        return f"[{slot}] text {_get(block, 'text')!r}"
    if kind == "toolCall":
        arguments = _get(block, "arguments")
        if _is_parsed(arguments, slot, step):
            state = f"已解析 {_value_text(arguments)}"
        else:
            raw = _get(block, "raw_arguments")
            state = f"原文 {(raw if raw is not None else arguments)!r}"
        made_up = "（id 不来自任何 chunk）" if _made_up_id(block, step) else ""
        return f"[{slot}] toolCall {_get(block, 'id')}{made_up} {_get(block, 'name')!r} {state}"
    return f"[{slot}] {kind}"


def _missing_reason(step: PartialStep) -> str:
    """Why the step points at a slot content does not have."""
    slot, have = step.changed_slot, len(step.content)
    if _get(step.event, "type") == "error" and step.touched_buffer is not None:
        index = step.touched_buffer
        return f"tool_buffers 给 index {index} 记的槽位是 {slot}，可 content 只有 {have} 个槽位"
    return f"事件指向槽位 {slot}，可 content 只有 {have} 个槽位"


def _missing(step: PartialStep) -> bool:
    return step.changed_slot is not None and step.changed_slot >= len(step.content)


def _content_html(step: PartialStep) -> str:
    rows = []
    for slot, block in enumerate(step.content):
        kind, value = _slot_value_html(block, slot, step)
        changed = slot == step.changed_slot or slot in step.new_slots
        cls = f' class="{CHANGED}"' if changed else ""
        mark = " ◀ 本步" if slot == step.changed_slot else " ◀ 新增" if changed else ""
        rows.append(f'<tr{cls}><td class="pi-nowrap">{slot}{mark}</td><td>{kind}</td><td>{value}</td></tr>')
    if _missing(step):
        rows.append(
            f'<tr class="{MISSING}"><td class="pi-nowrap">{step.changed_slot} ◀ 本步</td><td>—</td>'
            f"<td>content[{step.changed_slot}] 不存在：{_missing_reason(step)}</td></tr>"
        )
    if not rows:
        return '<p class="pi-note">content 为空（还没有槽位）</p>'
    return _table(("6.4em", "5.4em", ""), ("槽位", "type", "内容"), rows)


def _content_text(step: PartialStep) -> str:
    slots = [_slot_text(block, slot, step) for slot, block in enumerate(step.content)]
    if _missing(step):
        slots.append(f"[{step.changed_slot}] 不存在（content 只有 {len(step.content)} 个槽位）")
    return " | ".join(slots) or "（空）"


def _buffer_marks(step: PartialStep, buffer: _Buffer) -> tuple[str, str, str]:
    """The row's highlight class, its content slot and whether its arguments are parsed yet."""
    cls = f' class="{CHANGED}"' if buffer.provider_index == step.touched_buffer else ""
    slot = "—" if buffer.content_index is None else str(buffer.content_index)
    if buffer.slot_from_outside:
        slot += "*"
    return cls, slot, "已解析" if buffer.parsed else "流式中"


#: Under a tool_buffers table with a slot no event reported (``slots=``, e.g. 05-5's experiment).
OUTSIDE_NOTE = "* 没有哪个事件报告过这个槽位：它是 adapter 量 len(content) 得到的答案，由实验记下（slots）。"


def _buffers_html(step: PartialStep) -> str:
    if not step.buffers:
        return '<p class="pi-note">tool_buffers 为空</p>'
    rows = []
    for buffer in step.buffers:
        cls, slot, state = _buffer_marks(step, buffer)
        rows.append(
            f"<tr{cls}><td><b>{buffer.provider_index}</b></td><td>{_esc(buffer.id)}</td>"
            f"<td>{_esc(buffer.name)}</td><td>{_str_box(buffer.raw_arguments)}</td>"
            f'<td><b>{slot}</b></td><td class="pi-nowrap">{state}</td></tr>'
        )
    head = ("Provider index", "id", "name", "参数原文", "content<wbr>_index", "状态")
    note = (
        f'<p class="pi-note">{_esc(OUTSIDE_NOTE)}</p>'
        if any(b.slot_from_outside for b in step.buffers)
        else ""
    )
    return _table(("6.2em", "16%", "13%", "", "5.4em", "4.6em"), head, rows) + note


def _buffers_text(step: PartialStep) -> str:
    parts = []
    for buffer in step.buffers:
        slot = "?" if buffer.content_index is None else buffer.content_index
        parts.append(
            f"{buffer.provider_index}→({buffer.id}, {buffer.name}, {buffer.raw_arguments!r}, #{slot})"
        )
    return "{" + ", ".join(parts) + "}"


def _chunk_cell(step: PartialStep) -> str:
    if step.chunk is not None:
        again = '<span class="pi-note">（同一 chunk）</span> ' if step.repeat_chunk else ""
        return again + _chunk_html(step.chunk, step.chunk_number)
    if step.after_end:
        return '<span class="pi-note">transport 已结束</span>'
    return '<span class="pi-note">还没有读 chunk</span>'


def _step_list_html(steps: Sequence[PartialStep], current: int | None) -> str:
    rows = []
    for step in steps:
        cls = f' class="{CURRENT}"' if step.number == current else ""
        marker = "▶ " if step.number == current else ""
        rows.append(
            f"<tr{cls}><td>{marker}{step.number}</td><td>{_short_chunk(step)}</td>"
            f"<td>{_short_event(step.event)}</td></tr>"
        )
    return _table(("3.6em", "44%", ""), ("步", "读到的 chunk", "发出的事件"), rows, "pi-steps")


def _short_chunk(step: PartialStep) -> str:
    chunk = step.chunk
    if chunk is None:
        return "transport 已结束" if step.after_end else "—"
    kind = _get(chunk, "type")
    if kind == "tool":
        detail = f"tool · index <b>{_esc(_get(chunk, 'index'))}</b>"
    elif kind in ("text", "finish"):
        detail = _esc(kind) + ("" if kind == "text" else f" {_esc(_get(chunk, 'reason'))}")
    else:
        detail = _esc(type(chunk).__name__)
    return f"#{step.chunk_number} {detail}"


def _short_event(event: Any) -> str:
    if event is None:
        return '<span class="pi-note">无</span>'
    kind = _get(event, "type")
    if kind in ("text_delta", "toolcall_delta", "toolcall_end"):
        return f"{_esc(kind)} · content_index <b>{_esc(_get(event, 'content_index'))}</b>"
    if kind in ("done", "error"):
        return f"{_esc(kind)} · {_esc(_get(event, 'reason'))}"
    return _esc(kind)


def _finish_html(step: PartialStep) -> str:
    if step.finish is None:
        return "—（还没读到 finish）"
    usage = _get(step.finish, "usage")
    return _esc(_get(step.finish, "reason")) + ("" if usage is None else f" · {_esc(_usage_text(usage))}")


def _state_html(step: PartialStep) -> str:
    text_index = "—（还没有文本）" if step.text_content_index is None else str(step.text_content_index)
    return (
        f"<h4>tool_buffers（Provider index → buffer）</h4>{_buffers_html(step)}"
        f"<p>text_content_index：<b>{text_index}</b> · finish：<b>{_finish_html(step)}</b></p>"
    )


def _unread_note(unread: Sequence[int]) -> str:
    if not unread:
        return ""
    names = ", ".join(f"#{i + 1}" for i in unread)
    return f'<p class="pi-note">没有读到的 chunk：{names}（流已经以 error 结束）</p>'


def _content_heading(step: PartialStep) -> str:
    where = "partial.content" if _get(step.event, "type") not in ("done", "error") else "最终 content"
    return f"<h4>{where}（改变的槽位高亮）</h4>"


def _partial_sections(step: PartialStep) -> list[str]:
    """The detail column of one step, in sections that line up across steps."""
    note = ""
    if step.event is None and step.chunk is not None:
        note = '<p class="pi-note">这个 chunk 没有产生事件：adapter 只是记下了它，partial 不变。</p>'
    return [
        f"<h4>第 {step.number} 步 · 读到的 ProviderChunk</h4><p>{_chunk_cell(step)}</p>",
        f"<h4>发出的事件</h4><p>{_event_html(step.event)}</p>{note}",
        _state_html(step),
        f"{_content_heading(step)}{_content_html(step)}",
    ]


def _partial_pages(steps: Sequence[PartialStep], unread: Sequence[int]) -> list[str]:
    lists = [
        f"<h4>全部步骤</h4>{_step_list_html(steps, step.number)}{_unread_note(unread)}" for step in steps
    ]
    return _live_pages(lists, [_partial_sections(step) for step in steps])


def _slot_line(step: PartialStep, slot: int, label: str) -> str:
    """One content slot in a line: text, or a tool call's name and arguments (its id if made up)."""
    block = step.content[slot]
    kind = _get(block, "type")
    if kind == "toolCall":
        made_up = (
            f" · id {_str_box(_get(block, 'id'))}（adapter 自己起的）" if _made_up_id(block, step) else ""
        )
        arguments = _get(block, "arguments")
        if _is_parsed(arguments, slot, step):
            state = f"{_badge('已解析', 'parsed')}<code>{_esc(_value_text(arguments))}</code>"
        else:
            raw = _get(block, "raw_arguments")
            state = f"{_badge('原文', 'raw')}{_str_box(str(raw if raw is not None else arguments))}"
        value = f"toolCall {_str_box(_get(block, 'name', ''))}{made_up} · {state}"
    else:
        value = f"{_esc(kind)} {_str_box(_get(block, 'text', ''))}" if kind == "text" else _esc(kind)
    return f'<div class="{CHANGED}">content[<b>{slot}</b>] {label} {value}</div>'


def _changes_html(step: PartialStep) -> str:
    """What one step changed, in a line or two (the static table's last column)."""
    parts = []
    buffers = {buffer.provider_index: buffer for buffer in step.buffers}
    buffer = buffers.get(step.touched_buffer) if step.touched_buffer is not None else None
    if buffer is not None:
        _, recorded, state = _buffer_marks(step, buffer)
        index = buffer.provider_index
        parts.append(f"<div>tool_buffers[<b>{index}</b>] → content_index <b>{recorded}</b> · {state}</div>")
    if _get(step.chunk, "type") == "finish" and not step.repeat_chunk:
        parts.append(f"<div>记下 finish：{_finish_html(step)}</div>")
    named = set() if step.changed_slot is None else {step.changed_slot}
    for slot in sorted(step.new_slots | named):
        if slot < len(step.content):
            parts.append(_slot_line(step, slot, "◀ 本步" if slot == step.changed_slot else "◀ 新增"))
    if _missing(step):
        parts.append(
            f'<div class="{MISSING}">content[{step.changed_slot}] 不存在：{_missing_reason(step)}</div>'
        )
    if _get(step.event, "type") in ("done", "error"):
        parts.append(f"<div>最终 content：{len(step.content)} 个槽位（见表格下方）</div>")
    return "".join(parts) or '<span class="pi-note">partial 不变</span>'


def _partial_static(steps: Sequence[PartialStep], unread: Sequence[int]) -> str:
    rows = []
    for step in steps:
        rows.append(
            f'<tr class="pi-row"><td>{step.number}</td><td>{_chunk_cell(step)}</td>'
            f"<td>{_event_html(step.event)}</td><td>{_changes_html(step)}</td></tr>"
        )
    head = ("步", "读到的 ProviderChunk", "发出的事件", "这一步改变了什么（◀ 改变的槽位）")
    table = _table(("3.2em", "31%", "29%", ""), head, rows, "pi-static-table")
    last = steps[-1]
    final = (
        f"<h4>第 {last.number} 步之后</h4>{_state_html(last)}{_content_heading(last)}{_content_html(last)}"
        if steps
        else ""
    )
    return table + _unread_note(unread) + final


def _partial_line(step: PartialStep) -> str:
    if step.chunk is not None:
        chunk = f"chunk {step.chunk_number}: {_chunk_text(step.chunk)}"
    else:
        chunk = "（transport 已结束）" if step.after_end else "（还没有读 chunk）"
    return (
        f"{step.number:>2} · {chunk} → {_event_text(step.event)} · "
        f"tool_buffers {_buffers_text(step)} · content {_content_text(step)}"
    )


class PartialStepper(_Stepper):
    """Step through an adapter run: chunk read, event emitted, tool_buffers, partial content.

    ``chunks`` are the ProviderChunks fed to the adapter, in order; ``events`` the ModelEvents it
    emitted. ``positions`` (optional) gives, per event, the 0-based index of the chunk the adapter
    had read when it emitted that event (``-1`` before any, ``len(chunks)`` after the transport
    ended); without it the pairing is inferred from the order (see :func:`pair_events`).
    ``slots`` (optional, Provider index → content slot) names slots no event reported, such as
    the one 05-5's experiment records for an adapter that fails on its first write (marked ``*``).
    Chunks and events are read by their ``type`` and field names only, so events from any copy of
    the course package (a learner's practice copy, a scratch copy with a broken adapter) work.
    """

    kind = "partial-stepper"

    def __init__(
        self,
        chunks: Sequence[object],
        events: Sequence[Any],
        title: str = "partial 快照",
        *,
        positions: Sequence[int] | None = None,
        slots: Mapping[int, int] | None = None,
    ) -> None:
        chunks, events = list(chunks), list(events)
        if positions is None:
            positions = pair_events(chunks, events)
        self.steps, self.unread = build_partial_steps(chunks, events, positions, slots)
        pages = _partial_pages(self.steps, self.unread)
        lines = [_partial_line(step) for step in self.steps]
        if self.unread:
            lines.append("没有读到的 chunk: " + ", ".join(f"#{i + 1}" for i in self.unread))
        super().__init__(title, pages, lines, _partial_static(self.steps, self.unread))

    @classmethod
    async def replay(
        cls,
        chunks: Sequence[object],
        title: str = "partial 快照",
        *,
        model: Callable[[Any], Any] | None = None,
    ) -> PartialStepper:
        """Run ``chunks`` through an adapter and record which chunk each event answered.

        ``model(transport)`` builds the adapter around the recording transport; by default the
        course's :class:`~pi_course.adapter.OpenAICompatibleModel` (the learner's own in a
        practice copy).
        """
        from ..protocol import AgentContext

        recorder = _RecordingTransport(list(chunks))
        if model is None:
            from ..adapter import OpenAICompatibleModel

            adapter: Any = OpenAICompatibleModel(provider="fixture", model="fixture", transport=recorder)
        else:
            adapter = model(recorder)
        events, positions = [], []
        async for event in adapter.stream(AgentContext(())):
            events.append(event)
            positions.append(recorder.position)
        return cls(recorder.chunks, events, title, positions=positions)


class _RecordingTransport:
    """A fixed transport that remembers how far the adapter has read."""

    def __init__(self, chunks: list[object]) -> None:
        self.chunks = chunks
        self.position = -1
        self.requests: list[object] = []

    async def stream(self, request: object, *, signal: object = None) -> AsyncIterator[Any]:
        self.requests.append(request)
        for index, chunk in enumerate(self.chunks):
            self.position = index
            if isinstance(chunk, BaseException):
                raise chunk
            yield chunk
        self.position = len(self.chunks)


# --- SSEBufferStepper ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ReadStep:
    """One network read through the line buffer, as the chapter draws it.

    The buffer holds only the start of a line whose ``\\n`` has not arrived; complete lines are
    taken out at once; ``data`` lines wait in ``collected`` until a blank line dispatches them.
    """

    number: int
    response: int  # 1-based response number (a new response starts with an empty buffer)
    data: bytes  # the bytes of this read
    carried: bytes  # bytes of a split character carried in from the previous read
    text: str  # the text this read appended to the buffer
    held: bytes  # bytes of a character this read cut, held back by the UTF-8 decoder
    before: str  # the buffer before the append
    lines: tuple[str, ...]  # complete lines taken out by this read ("" is the blank line)
    payloads: tuple[str, ...]  # data of the events the decoder dispatched on this read
    pending: str  # what stays in the buffer: the start of the next line
    collected: tuple[str, ...]  # data lines taken out but still waiting for their blank line
    cut_char: str = ""  # the character whose first bytes are ``held`` (known once the next read comes)

    @property
    def buffer(self) -> str:
        """The buffer right after the append."""
        return self.before + self.text


def trace_reads(reads: Sequence[bytes], *, response: int = 1, start: int = 1) -> list[ReadStep]:
    """Feed ``reads`` to the course's :class:`~pi_course.sse.SSEDecoder`, read by read.

    The payloads are what the decoder dispatched; the buffer, the lines and the collected data
    lines are the chapter's line-buffer model, computed here from the same bytes.
    """
    from ..sse import SSEDecoder

    decoder = SSEDecoder()
    utf8 = codecs.getincrementaldecoder("utf-8")("replace")
    steps = []
    before = ""
    collected: list[str] = []
    for number, chunk in enumerate(reads, start=start):
        carried = utf8.getstate()[0]
        text = utf8.decode(chunk).replace("\r\n", "\n").replace("\r", "\n")
        held = utf8.getstate()[0]
        events = decoder.feed(chunk)
        *lines, pending = (before + text).split("\n")
        for line in lines:
            if not line:
                collected = []
            elif line.startswith("data:"):
                collected.append(line)
        steps.append(
            ReadStep(
                number, response, bytes(chunk), carried, text, held, before, tuple(lines),
                tuple(event.data for event in events), pending, tuple(collected),
            )
        )  # fmt: skip
        before = pending
    for index, step in enumerate(steps[:-1]):
        following = steps[index + 1]
        if step.held and following.carried == step.held and following.text:
            steps[index] = replace(step, cut_char=following.text[0])
    return steps


def _marked(text: str, *, new_from: int | None = None) -> str:
    """Text with visible line ends: ``↵`` after each line, a 空行 badge for the blank line.

    Characters from ``new_from`` on (what this read appended) are underlined.
    """
    old_part: list[str] = []
    new_part: list[str] = []
    line_start = True
    for position, char in enumerate(text):
        out = new_part if new_from is not None and position >= new_from else old_part
        if char == "\n":
            badge = _badge("空行", "blank") if line_start else ""
            out.append(f'{badge}<span class="pi-nl">↵</span>\n')
            line_start = True
        else:
            out.append(_esc(char))
            line_start = False
    fresh = f'<span class="pi-new">{"".join(new_part)}</span>' if new_part else ""
    return "".join(old_part) + fresh


def _plain_marked(text: str) -> str:
    return text.replace("\n", "↵")


def _hex(data: bytes) -> str:
    return " ".join(f"{byte:02X}" for byte in data)


def _read_html(step: ReadStep) -> str:
    parts = []
    if step.carried and step.text:
        char = step.text[0]
        rest = step.data[: len(char.encode()) - len(step.carried)]
        joined = f"{_hex(step.carried)}（上次暂存）+ {_hex(rest)} → {char}"
        parts.append(_badge(joined, "readend"))
    parts.append(_marked(step.text))
    if step.held:
        whole = f"「{step.cut_char}」的前 {len(step.held)} 个字节" if step.cut_char else "被切开的字符"
        parts.append(_badge(f"{whole} {_hex(step.held)}：解码器暂存，等下一次读取", "readend"))
    return f'<div class="pi-buffer pi-read">{"".join(parts)}</div>'


def _buffer_html(step: ReadStep) -> str:
    if not step.buffer:
        return _badge("缓冲区为空", "empty")
    end = _badge(f"第 {step.number} 次读取到此为止", "readend")
    return f'<div class="pi-buffer">{_marked(step.buffer, new_from=len(step.before))}{end}</div>'


def _lines_html(step: ReadStep) -> str:
    if not step.lines:
        return '<p class="pi-note">没有完整的行（还没有遇到 ↵）</p>'
    items = []
    for line in step.lines:
        if line:
            items.append(f'<li><div class="pi-buffer">{_esc(line)}<span class="pi-nl">↵</span></div></li>')
        else:
            items.append(
                f'<li>{_badge("空行", "blank")}<span class="pi-nl">↵</span> → 结束一条 SSE 事件</li>'
            )
    return f"<ol>{''.join(items)}</ol>"


def _payloads_html(step: ReadStep) -> str:
    if not step.payloads:
        return '<p class="pi-note">无（还没有空行结束一条事件）</p>'
    items = "".join(f'<li><div class="pi-buffer">{_esc(data)}</div></li>' for data in step.payloads)
    return f"<ol>{items}</ol>"


def _collected_html(step: ReadStep) -> str:
    if not step.collected:
        return '<p class="pi-note">无</p>'
    items = "".join(f'<li><div class="pi-buffer">{_esc(line)}</div></li>' for line in step.collected)
    return f"<ol>{items}</ol>"


def _pending_html(step: ReadStep) -> str:
    if not step.pending:
        return _badge("缓冲区为空", "empty")
    return f'<div class="pi-buffer">{_marked(step.pending)}</div>'


def _read_end(step: ReadStep) -> str:
    """Where a read stopped: after a line end, inside a line, inside a character."""
    if step.held:
        return "字符中间"
    return "↵" if step.text.endswith("\n") else "行中间"


def _read_summary(step: ReadStep) -> str:
    return f"{len(step.data)} 字节 · 止于{_read_end(step)}"


def _response_row(step: ReadStep, columns: int) -> str:
    return f'<tr><td colspan="{columns}"><b>响应 {step.response}</b>（新的 buffer）</td></tr>'


def _reads_list_html(steps: Sequence[ReadStep], current: int | None) -> str:
    rows = []
    response = 0
    for step in steps:
        if step.response != response:
            response = step.response
            rows.append(_response_row(step, 6))
        cls = f' class="{CURRENT}"' if step.number == current else ""
        marker = "▶ " if step.number == current else ""
        pending = "空" if not step.pending else f"{len(step.pending)} 字符"
        rows.append(
            f"<tr{cls}><td>{marker}{step.number}</td><td>{len(step.data)}</td><td>{_read_end(step)}</td>"
            f"<td>{len(step.lines)}</td><td>{len(step.payloads)}</td><td>{pending}</td></tr>"
        )
    head = ("读取", "字节", "止于", "行", "事件", "留下")
    return _table(("3.4em", "3.4em", "", "2.6em", "3.2em", "4.8em"), head, rows, "pi-steps")


#: Under the static table and (with the list's columns) under the list of reads on every page.
SSE_LEGEND = (
    f'<span class="pi-nl">↵</span> 是换行符 \\n；{_badge("空行", "blank")} 是空行，结束一条事件；'
    "下划线是本次读到的文字。"
)
READS_LEGEND = "止于：这次读取停在哪里；行：取出的完整行；事件：分发的 payload；留下：留在缓冲区的字符。"


def _sse_sections(steps: Sequence[ReadStep], step: ReadStep) -> list[str]:
    """The detail column of one read, in sections that line up across reads."""
    fresh = (
        f'<p class="pi-note">响应 {step.response} 的第一次读取：缓冲区从空开始。</p>'
        if step.number == 1 or steps[step.number - 2].response != step.response
        else ""
    )
    heading = f"第 {step.number} 次读取（响应 {step.response}）· {len(step.data)} 字节"
    return [
        f"<h4>{heading}</h4>{fresh}{_read_html(step)}",
        f"<h4>append 之后的缓冲区</h4>{_buffer_html(step)}",
        f"<h4>取出的完整行</h4>{_lines_html(step)}",
        f"<h4>等待空行的 data 行</h4>{_collected_html(step)}",
        f"<h4>分发的 SSE payload（data）</h4>{_payloads_html(step)}",
        f"<h4>留在缓冲区（下一行的开头）</h4>{_pending_html(step)}",
    ]


def _sse_pages(steps: Sequence[ReadStep]) -> list[str]:
    legend = f'<p class="pi-note">{READS_LEGEND}{SSE_LEGEND}</p>'
    lists = [f"<h4>全部读取</h4>{_reads_list_html(steps, step.number)}{legend}" for step in steps]
    # One slot for the whole detail column: its sections pack at the top (no gaps between them),
    # and the tallest read still fixes the page's height.
    return _live_pages(lists, [["".join(_sse_sections(steps, step))] for step in steps])


def _abridged(text: str, head: int = 48, tail: int = 24, limit: int = 100) -> str:
    """A string longer than ``limit`` as its start and end around a badge saying how much is left out."""
    if len(text) <= limit:
        return _esc(text)
    left_out = _badge(f"省略 {len(text) - head - tail} 字符", "empty")
    return f"{_esc(text[:head])}{left_out}{_esc(text[-tail:])}"


def _after_read_html(step: ReadStep) -> str:
    """What one read left behind, summarised (the static table's last column)."""
    if step.lines:
        blanks = sum(1 for line in step.lines if not line)
        data = sum(1 for line in step.lines if line.startswith("data:"))
        other = len(step.lines) - blanks - data
        kinds = [f"data 行 {data}"] if data else []
        kinds += [f"空行 {blanks}"] if blanks else []
        kinds += [f"其他 {other}"] if other else []
        lines = f"取出 {len(step.lines)} 行（{'、'.join(kinds)}）"
    else:
        lines = "没有完整的行"
    parts = [f"<div>{lines}</div>"]
    if step.collected:
        parts.append(f"<div>{len(step.collected)} 行 data 还在等空行</div>")
    if step.payloads:
        items = "".join(f'<li><div class="pi-buffer">{_abridged(data)}</div></li>' for data in step.payloads)
        parts.append(f"<div>分发 {len(step.payloads)} 条 payload：</div><ol>{items}</ol>")
    else:
        parts.append('<div class="pi-note">没有分发事件</div>')
    if not step.pending:
        pending = _badge("缓冲区为空", "empty")
    elif step.pending == step.buffer:
        pending = f"缓冲区里的 {len(step.pending)} 个字符全部留下（还没有 ↵）"
    else:
        pending = f'<div class="pi-buffer">{_abridged(step.pending)}</div>'
    parts.append(f"<div>留在缓冲区：{pending}</div>")
    return "".join(parts)


def _sse_static(steps: Sequence[ReadStep]) -> str:
    rows = []
    response = 0
    for step in steps:
        if step.response != response:
            response = step.response
            rows.append(_response_row(step, 3))
        rows.append(
            f'<tr class="pi-row"><td>{step.number}<br><span class="pi-note">{_read_summary(step)}</span></td>'
            f"<td>{_read_html(step)}</td><td>{_after_read_html(step)}</td></tr>"
        )
    head = ("读取", "本次读到（↵ = \\n）", "读完之后：取出的行、分发的 payload（长的只留头尾）、留在缓冲区")
    legend = f'<p class="pi-note">{SSE_LEGEND}</p>'
    return _table(("6.4em", "50%", ""), head, rows, "pi-static-table") + legend


def _sse_line(step: ReadStep) -> str:
    held = f" + 暂存字节 {_hex(step.held)}" if step.held else ""
    carried = f"（先接上暂存字节 {_hex(step.carried)}）" if step.carried else ""
    lines = " / ".join("[空行]" if not line else line + "↵" for line in step.lines) or "无"
    payloads = " / ".join(step.payloads) or "无"
    collected = f" ‖ 等空行: {len(step.collected)} 行" if step.collected else ""
    pending = _plain_marked(step.pending) if step.pending else "缓冲区为空"
    return (
        f"read {step.number} (响应 {step.response}, {len(step.data)} 字节){carried}: "
        f"{_plain_marked(step.text)}{held} ‖ 取出的行: {lines}{collected} ‖ payload: {payloads} "
        f"‖ 留下: {pending}"
    )


class SSEBufferStepper(_Stepper):
    """Step through network reads: the read, the buffer after the append, lines, payloads, the rest.

    ``reads`` are the ``bytes`` of one response body in the order the network delivered them.
    ``SSEBufferStepper.mainline()`` uses :func:`mainline_sse_reads` (two responses, ten reads).
    """

    kind = "sse-stepper"
    unit = "次读取"

    def __init__(self, reads: Sequence[bytes], title: str = "SSE 行缓冲区") -> None:
        self._setup([list(reads)], title)

    @classmethod
    def mainline(cls, title: str = "主线的 SSE 字节流：十次读取") -> SSEBufferStepper:
        """The mainline's two responses in ten reads (see :func:`mainline_sse_reads`)."""
        stepper = cls.__new__(cls)
        stepper._setup(mainline_sse_reads(), title)
        return stepper

    def _setup(self, responses: Sequence[Sequence[bytes]], title: str) -> None:
        self.reads: list[ReadStep] = []
        for number, reads in enumerate(responses, start=1):
            self.reads += trace_reads(reads, response=number, start=len(self.reads) + 1)
        lines = [_sse_line(step) for step in self.reads]
        _Stepper.__init__(self, title, _sse_pages(self.reads), lines, _sse_static(self.reads), first=1)
