"""The HTML kit the steppers share: one stylesheet, escaping, badges, fixed tables, same-size pages.

Nothing here knows about chunks, events or reads; the views (:mod:`.partial_view`,
:mod:`.sse_view`) build their fragments from these pieces, and :mod:`.stepper` puts them in widgets.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence

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
@container (max-width: 640px) {
  .pi-sv .pi-page { grid-template-columns: minmax(0, 1fr); }
  /* One column: of the list of steps only its header and the current row, each cell one line. */
  .pi-sv .pi-steps-col > h4, .pi-sv .pi-steps tr:not(.pi-current):not(:first-child) { display: none; }
  .pi-sv .pi-steps td { white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
}
.pi-sv .pi-slot, .pi-sv .pi-sizers { display: grid; }
.pi-sv .pi-slot > *, .pi-sv .pi-sizers > * { grid-area: 1 / 1; min-width: 0; }
.pi-sv .pi-sizers, .pi-sv .pi-grow-sizer { visibility: hidden; }
.pi-sv .pi-grow { display: grid; }
.pi-sv .pi-grow > * { grid-area: 1 / 1; min-width: 0; }
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

CURRENT = "pi-current"
CHANGED = "pi-changed"
MISSING = "pi-missing"

#: Sizers end with this comment, so a test (or a reader of the saved state) can strip them.
SIZERS_END = "<!--/pi-sizers-->"


def esc(value: object) -> str:
    """Text as HTML (quotes stay as they are: they are part of what the course shows)."""
    return html.escape(str(value), quote=False)


def str_box(value: str) -> str:
    """A string as a bordered code box: its boundaries are visible without quote characters."""
    if not value:
        return '<span class="pi-badge pi-empty">空字符串</span>'
    return f'<code class="pi-str">{esc(value)}</code>'


def badge(label: str, kind: str) -> str:
    """A small labelled box; ``kind`` picks its colours (raw, parsed, index, blank, readend, empty)."""
    return f'<span class="pi-badge pi-{kind}">{esc(label)}</span>'


def note(text: str, tag: str = "p") -> str:
    """Grey italic text: an explanation, not data."""
    return f'<{tag} class="pi-note">{text}</{tag}>'


def style_tag(extra: str = "") -> str:
    return f"<style>{STYLE}{extra}</style>"


def table(widths: Sequence[str], head: Sequence[str], rows: Sequence[str], css: str = "") -> str:
    """A fixed-layout table: ``widths`` per column (``""`` takes the rest), so columns never move."""
    cols = "".join(f'<col style="width:{width}">' if width else "<col>" for width in widths)
    cls = f' class="{css}"' if css else ""
    header = "<tr>" + "".join(f"<th>{cell}</th>" for cell in head) + "</tr>"
    return f"<table{cls}><colgroup>{cols}</colgroup>{header}{''.join(rows)}</table>"


FOLD_AFTER = 4  # rows a static table shows before folding the rest (one viewport, untrusted too)


def folded_table(
    widths: Sequence[str], head: Sequence[str], rows: Sequence[str], css: str = "", shown: int = FOLD_AFTER
) -> str:
    """:func:`table` with the rows after the first ``shown`` folded in a ``<details>`` (the sanitizer
    of an untrusted notebook keeps it), so the table stays within one screen until opened."""
    if len(rows) <= shown + 1:  # folding one row saves nothing
        return table(widths, head, rows, css)
    rest = len(rows) - shown
    hidden = table(widths, head, rows[shown:], css)
    folded = f"<details><summary>其余 {rest} 行（点开）</summary>{hidden}</details>"
    return table(widths, head, rows[:shown], css) + folded


def aligned(fragment: str) -> str:
    """Inline layout for the static tables: an untrusted notebook drops ``<style>`` but keeps these."""
    fragment = fragment.replace("<table", '<table style="table-layout:fixed;width:100%"')
    # overflow-wrap: break-word is the value JupyterLab's sanitizer keeps; without it a long JSON
    # payload ran past the column's right edge and was cut off.
    cell = "text-align:left;vertical-align:top;overflow-wrap:break-word"
    return re.sub(r"<(td|th)\b", rf'<\1 style="{cell}"', fragment)


# --- live pages: one height for every step ------------------------------------------------------

_TAG = re.compile(r"<[^>]+>")
_BLOCK = re.compile(r"<(?:tr|li|br|div|p|h4)\b")


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


def live_pages(
    steps_cols: Sequence[str], sections: Sequence[Sequence[str]], steps_sizer: str = ""
) -> list[str]:
    """Pages from each step's list column and detail sections (the same number for every step).

    The list grows as the learner steps (a later step shows only its number); ``steps_sizer``,
    the list with every step filled in and none current, sits hidden under it and keeps its
    height, so nothing below the list moves.
    """
    columns = list(zip(*sections, strict=True))  # section → its variant on every step
    tallest = [_tallest(variants) for variants in columns]
    sizer = (
        f'<div class="pi-grow-sizer" aria-hidden="true">{steps_sizer}</div>{SIZERS_END}'
        if steps_sizer
        else ""
    )
    pages = []
    for index, steps_col in enumerate(steps_cols):
        detail = "".join(_slot(columns[k], index, tallest[k]) for k in range(len(columns)))
        pages.append(
            f'<div class="pi-page"><div class="pi-steps-col"><div class="pi-grow"><div>{steps_col}</div>'
            f'{sizer}</div></div><div class="pi-detail-col">{detail}</div></div>'
        )
    return pages
