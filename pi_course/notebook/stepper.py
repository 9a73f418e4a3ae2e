"""The stepper shell: Play, ◀, a slider, ▶ and a Stack of pre-rendered pages, linked in the browser.

Every page is rendered up front; Play, the slider and the Stack are linked in the browser
(``jslink``), and ◀/▶ and the arrow keys press the slider's own keys, so stepping needs no kernel
once the widget state is saved. Displaying a stepper produces two outputs: a compact static HTML
table (what GitHub, nbviewer, ``nbconvert --to html`` and a practice copy's 预期输出 show; its
``text/plain`` lists every step for nbval) and the live widget, whose stylesheet hides the static
table of the same output area, so JupyterLab shows the stepper once.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

import ipywidgets as widgets
from IPython.display import display

from .markup import aligned, esc, style_tag

#: Only in the live widget: once it renders, the static table of the same output is redundant.
#: The ◀/▶ buttons take JupyterLab's button colours.
LIVE_STYLE = """
.jp-OutputArea:has(.pi-stepper) > .jp-OutputArea-child:has(.pi-static),
.output:has(.pi-stepper) > .output_area:has(.pi-static) { display: none; }
.pi-stepper .pi-nav { min-width: 30px; height: 28px; padding: 0 8px; margin: 0 2px; cursor: pointer;
  border: 1px solid var(--jp-border-color1, #aaa); border-radius: 2px;
  background: var(--jp-layout-color2, #eee); color: var(--jp-ui-font-color1, #222);
  font-size: var(--jp-ui-font-size1, 13px); }
.pi-stepper .pi-nav:hover { background: var(--jp-layout-color3, #ddd); }
.pi-stepper.jupyter-widgets-disconnected::before,
.pi-stepper .jupyter-widgets-disconnected::before { display: none; }  /* it steps without a kernel */
.pi-stepper .pi-live:focus { outline: 1px dashed var(--jp-brand-color1, #1976d2); outline-offset: 2px; }
"""

#: In the static table's own output, for JupyterLab. A notebook saved again without re-running a
#: stepper it reopened loses that stepper's widget state (JupyterLab keeps only live widgets), and
#: the widget's output would read "Error displaying widget: model not found" under the table: it
#: says instead how the stepper comes back. (Loading, the same node is empty or has children.)
MISSING_NOTE = "步进器没有随笔记本保存下来：再运行这一格，就能播放、拖动；上面的表格已列出每一步。"
_MISSING = (
    ".jp-OutputArea-child:has(.pi-static) + .jp-OutputArea-child .jupyter-widgets:not(:empty):not(:has(*))"
)
MISSING_STYLE = (
    f"{_MISSING} {{ font-size: 0; visibility: hidden; }}"
    f'{_MISSING}::before {{ content: "{MISSING_NOTE}"; visibility: visible; '
    "font-size: var(--jp-content-font-size1, 14px); color: var(--jp-ui-font-color2, #555); }"
)

#: Below the static table (and in a practice copy's 预期输出, which shows it): true wherever it shows.
LIVE_NOTE = (
    "可以播放、拖动的步进器要在这一格运行成功后才出现（打开保存过的笔记本时，需先信任它）；"
    "上面的表格已列出每一步。"
)

_KEYS = "['ArrowLeft','ArrowRight','Home','End','PageUp','PageDown']"
# Press a key on this stepper's slider handle (noUiSlider listens for keydown there).
_PRESS = (
    "const h=this.closest('.pi-stepper')?.querySelector('.noUi-handle');"
    "if(h){{h.dispatchEvent(new KeyboardEvent('keydown',{{key:{key},bubbles:true}}));{after}}}"
)


def _nav_button(key: str, label: str, title: str) -> widgets.HTML:
    """◀ or ▶: presses the slider's arrow key, then leaves the focus on the handle for more keys."""
    script = _PRESS.format(key=f"'{key}'", after="h.focus({preventScroll:true});")
    return widgets.HTML(
        f'<button type="button" class="pi-nav" title="{title}" aria-label="{title}" '
        f'onclick="{html.escape(script)}">{label}</button>'
    )


def _page(page: str) -> str:
    """A live page: focusable, so the arrow keys step the slider once the page was clicked.

    The key moves the focus to the handle: the next page replaces this one, the handle stays.
    """
    script = (
        f"if({_KEYS}.includes(event.key)){{event.preventDefault();event.stopPropagation();"
        + _PRESS.format(key="event.key", after="h.focus({preventScroll:true});")
        + "}"
    )
    return f'<div class="pi-sv pi-live" tabindex="0" onkeydown="{html.escape(script)}">{page}</div>'


class Stepper(widgets.VBox):  # type: ignore[misc]
    """Play, ◀, slider, ▶ and a Stack of pages; ``lines`` and ``static`` are what shows without it."""

    kind = "stepper"
    unit = "步"

    def __init__(
        self,
        title: str,
        pages: Sequence[str],
        lines: Sequence[str],
        static: str,
        *,
        first: int = 0,
        notice: str = "",
    ) -> None:
        # The slider shows the numbers the pages use (steps from 0, reads from 1); the Stack is
        # indexed from 0, so numbering from 1 puts an unused empty page in front.
        last = first + max(len(pages) - 1, 0)
        label = "步" if first == 0 else "读取"
        self.play = widgets.Play(value=first, min=first, max=last, step=1, interval=900, description="播放")
        self.slider = widgets.IntSlider(
            value=first, min=first, max=last, description=label, layout=widgets.Layout(flex="1 1 auto")
        )
        self.back = _nav_button("ArrowLeft", "◀", "上一步（←）")
        self.forward = _nav_button("ArrowRight", "▶", "下一步（→）")
        full = widgets.Layout(width="100%")
        children = [widgets.HTML("") for _ in range(first)]
        children += [widgets.HTML(_page(page), layout=full) for page in pages]
        if not pages:
            children.append(widgets.HTML(f'<div class="pi-sv">{notice}</div>', layout=full))
        self.stack = widgets.Stack(children, selected_index=first, layout=full)
        self.pages = children[first:] if pages else []
        # Linked in the browser: stepping works from saved widget state, with no kernel.
        self.links = [
            widgets.jslink((self.play, "value"), (self.slider, "value")),
            widgets.jslink((self.slider, "value"), (self.stack, "selected_index")),
        ]
        heading = widgets.HTML(
            f'{style_tag(LIVE_STYLE)}<div class="pi-sv"><div class="pi-title">{esc(title)}</div></div>',
            layout=full,
        )
        controls = widgets.HBox(
            [self.play, self.back, self.slider, self.forward],
            layout=widgets.Layout(width="100%", align_items="center", display="flex" if pages else "none"),
        )
        super().__init__([heading, controls, self.stack], layout=full)
        self.add_class("pi-stepper")
        self.add_class(f"pi-{self.kind}")
        self.title = title
        self.count = len(pages)
        self.lines = list(lines)
        self.static_html = (
            f'{style_tag(MISSING_STYLE)}<div class="pi-sv pi-static pi-static-{self.kind}">'
            f'<div class="pi-title">{esc(title)} · {self.count} {self.unit}</div>{aligned(static)}</div>'
        )

    def __repr__(self) -> str:
        return "\n".join([f"{self.title} · {self.count} {self.unit}", *self.lines])

    def _repr_html_(self) -> str:
        return self.static_html

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        """The live widget alone (``_ipython_display_`` adds the static table as its own output)."""
        bundle: dict[str, Any] = super()._repr_mimebundle_(**kwargs)
        live = f"{type(self).__name__}「{self.title}」· {self.count} {self.unit}。{LIVE_NOTE}"
        bundle["text/plain"] = live if self.count else repr(self)  # no pages: the notice is all
        return bundle

    def _ipython_display_(self) -> None:
        # Two outputs: nbconvert (and GitHub) pick the widget view whenever the widget state is
        # saved, so a static table inside the widget's own bundle would never be shown there.
        display({"text/html": self.static_html, "text/plain": repr(self)}, raw=True)  # type: ignore[no-untyped-call]
        display(self._repr_mimebundle_(), raw=True)  # type: ignore[no-untyped-call]
