"""Two pictures for the notebooks: drawn as SVG, shown as the PNG rendered from it (any frontend).

JupyterLab renders neither inline SVG in HTML nor ``image/svg+xml`` from an untrusted notebook
(a fresh clone, a practice copy); it does render PNG. So each diagram is displayed as a bundle of
``image/png`` (rendered from the SVG by ``tools/render_diagrams.py`` and shipped in ``images/``)
and a text picture for any other frontend. The SVG goes in only when no PNG is shipped: where
trusted, JupyterLab prefers it, draws it as an ``<img>`` of its full width with no ``max-width``,
and cuts the overview's right edge off in a narrow output area; the PNG scales down. The SVG is
a standalone image with no background: dark text on light boxes, the rest (arrows, labels) in
mid tones legible on the light and the dark theme alike. Each PNG records the SHA-256 of the
SVG it was drawn from, so a test can tell when it is stale.
"""

from __future__ import annotations

import base64
import hashlib
import struct
import zlib
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import Any

IMAGES = Path(__file__).with_name("images")
SOURCE_KEY = b"pi-course-svg-sha256"  # the PNG text chunk naming the SVG it was drawn from

_FONT = "font-family:var(--jp-ui-font-family, sans-serif)"
_MONO = "font-family:var(--jp-code-font-family, monospace)"
_TEXT = "fill:var(--jp-ui-font-color1, #1f1f1f)"
_MUTED = "fill:var(--jp-ui-font-color2, #808080)"
_BOX = "fill:var(--jp-layout-color2, #f2f2f2);stroke:var(--jp-border-color1, #999);stroke-width:1.5"
_OUT = "var(--jp-brand-color1, #1976d2)"
_BACK = "var(--jp-warn-color1, #e65100)"


def _fallback(colour: str) -> str:
    """The colour after the comma in ``var(--name, fallback)``: for views that strip styles."""
    return colour.rsplit(",", 1)[-1].strip(" )")


@dataclass(frozen=True)
class Diagram:
    name: str
    svg: str
    text: str
    width: int  # CSS pixels; the PNG holds twice as many, for sharp text on high-density screens

    @property
    def png_path(self) -> Path:
        return IMAGES / f"{self.name}.png"

    @property
    def svg_digest(self) -> str:
        return hashlib.sha256(self.svg.encode("utf-8")).hexdigest()

    def _repr_mimebundle_(
        self, include: Any = None, exclude: Any = None
    ) -> tuple[dict[str, str], dict[str, Any]]:
        data = {"text/plain": self.text}
        metadata: dict[str, Any] = {}
        if self.png_path.exists():  # drawn in trusted and untrusted notebooks, scaled to fit
            data["image/png"] = base64.b64encode(self.png_path.read_bytes()).decode("ascii")
            metadata["image/png"] = {"width": self.width}
        else:
            data["image/svg+xml"] = self.svg
        return data, metadata

    def __repr__(self) -> str:
        return self.text


def with_source_digest(png: bytes, digest: str) -> bytes:
    """``png`` with a text chunk naming the SVG it was drawn from (inserted after the header)."""
    body = SOURCE_KEY + b"\0" + digest.encode("ascii")
    chunk = struct.pack(">I", len(body)) + b"tEXt" + body
    chunk += struct.pack(">I", zlib.crc32(b"tEXt" + body) & 0xFFFFFFFF)
    header_end = 8 + 12 + struct.unpack(">I", png[8:12])[0]
    return png[:header_end] + chunk + png[header_end:]


def _svg(width: int, height: int, title: str, body: list[str]) -> str:
    markers = "".join(
        f'<marker id="pi-arrow-{name}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="11" '
        f'markerHeight="11" markerUnits="userSpaceOnUse" orient="auto-start-reverse">'
        f'<path d="M0,0 L10,5 L0,10 z" fill="{_fallback(colour)}" style="fill:{colour}"/>'
        "</marker>"
        for name, colour in (("out", _OUT), ("back", _BACK))
    )
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}" '
        f'style="max-width:100%;height:auto"><defs>{markers}</defs>'
        # No background: the output area's own shows through (no white block in a dark theme);
        # dark text sits on the light boxes, the rest is a mid tone legible on white and on black.
        f"{''.join(body)}</svg>"
    )


def _box(x: int, y: int, w: int, h: int, lines: list[str], mono_from: int = 1) -> str:
    parts = [
        f'<rect x="{x}" y="{y}" width="{w}" height="{h}" rx="8" fill="#f2f2f2" stroke="#999" style="{_BOX}"/>'
    ]
    top = y + h / 2 - (len(lines) - 1) * 10 + 5
    for number, line in enumerate(lines):
        style = (
            f"{_TEXT};{_MONO};font-size:13px" if number >= mono_from else f"{_TEXT};{_FONT};font-size:14px"
        )
        weight = ";font-weight:bold" if number < mono_from else ""
        parts.append(
            f'<text x="{x + w / 2}" y="{top + number * 20}" text-anchor="middle" fill="#1f1f1f" '
            f'style="{style}{weight}">'
            f"{escape(line)}</text>"
        )
    return "".join(parts)


def _arrow(
    x1: float, y1: float, x2: float, y2: float, kind: str, label: str = "", below: bool = False
) -> str:
    """An arrow; ``label`` may hold two lines ("05-1\\n出站转换"), set above it (or below)."""
    colour = _OUT if kind == "out" else _BACK
    parts = [
        f'<line x1="{x1}" y1="{y1}" x2="{x2}" y2="{y2}" stroke="{_fallback(colour)}" stroke-width="2.5" '
        f'style="stroke:{colour};stroke-width:2.5" '
        f'marker-end="url(#pi-arrow-{kind})"/>'
    ]
    lines = label.split("\n") if label else []
    for number, text in enumerate(lines):
        offset = 20 + 16 * number if below else -10 - 16 * (len(lines) - 1 - number)
        weight = ";font-weight:bold" if text.startswith("05-") else ""
        parts.append(
            f'<text x="{(x1 + x2) / 2}" y="{(y1 + y2) / 2 + offset}" text-anchor="middle" '
            f'fill="#808080" style="{_MUTED};{_FONT};font-size:12px{weight}">{escape(text)}</text>'
        )
    return "".join(parts)


def _heading(x: int, y: int, text: str, colour: str) -> str:
    style = f"{_FONT};font-size:15px;font-weight:bold;fill:{colour}"
    return f'<text x="{x}" y="{y}" fill="{_fallback(colour)}" style="{style}">{escape(text)}</text>'


def overview() -> Diagram:
    """Both directions of the chapter's call: outbound on top, the reply coming back below."""
    w, h, top, bottom, bw, bh = 1000, 300, 50, 200, 150, 64
    xs = [20, 240, 460, 680]
    px = 890
    body = [
        _heading(20, 28, "发送方向 →", _OUT),
        _heading(20, h - 12, "← 返回方向", _BACK),
        _box(xs[0], top, bw, bh, ["AgentContext", "“读取 README.md”"]),
        _box(xs[1], top, bw, bh, ["ProviderRequest", "messages + tools"]),
        _box(xs[2], top, bw, bh, ["HTTP 请求", "POST + Bearer key"]),
        _box(px, top, 90, bottom + bh - top, ["Provider", "", "call-1", "index 0"], mono_from=2),
        _box(xs[3], bottom, bw, bh, ["SSE 字节流", "data: {…}"]),
        _box(xs[2], bottom, bw, bh, ["ProviderChunk", "tool · index 0"]),
        _box(xs[1], bottom, bw, bh, ["ModelEvent", "content_index 0"]),
        _box(xs[0], bottom, bw, bh, ["AssistantMessage", "toolCall call-1"]),
        _arrow(xs[0] + bw, top + bh / 2, xs[1], top + bh / 2, "out", "05-1\n出站转换"),
        _arrow(xs[1] + bw, top + bh / 2, xs[2], top + bh / 2, "out", "05-4\n请求形状"),
        _arrow(xs[2] + bw, top + bh / 2, px, top + bh / 2, "out", "05-4\ntransport 发出"),
        _arrow(px, bottom + bh / 2, xs[3] + bw, bottom + bh / 2, "back", "读取", below=True),
        _arrow(xs[3], bottom + bh / 2, xs[2] + bw, bottom + bh / 2, "back", "05-3\n分帧+检查", below=True),
        _arrow(xs[2], bottom + bh / 2, xs[1] + bw, bottom + bh / 2, "back", "05-2\nadapter", below=True),
        _arrow(xs[1], bottom + bh / 2, xs[0] + bw, bottom + bh / 2, "back", "累积", below=True),
        f'<text x="450" y="{(top + bh + bottom) / 2 + 5}" text-anchor="middle" fill="#808080" '
        f'style="{_MUTED};{_FONT};font-size:13px">'
        "transport：HTTP、SSE、外部 JSON　｜　adapter：只读 ProviderChunk</text>",
    ]
    text = "\n".join(
        [
            "发送方向 →",
            "AgentContext(读取 README.md) ─05-1─▶ ProviderRequest ─05-4─▶ HTTP 请求 ─▶ Provider",
            "                                                                       │",
            "AssistantMessage(call-1) ◀─ ModelEvent(content_index 0) ◀─05-2─ ProviderChunk(index 0)"
            " ◀─05-3─ SSE 字节流",
            "← 返回方向",
        ]
    )
    return Diagram("overview", _svg(w, h, "第 05 章全景：发送方向与返回方向", body), text, w)


#: The mainline's first ``data:`` line as two network reads, cut inside the id (tail of each read).
_READS = ((1, '…"id":"call-'), (2, '1",…}\\n\\n'))
_READS_NOTE = "← 同一行 data:，切在 id 中间"
_READ_BOX = (
    "fill:var(--jp-layout-color2, #f2f2f2);stroke:var(--jp-ui-font-color2, #555);"
    "stroke-width:1.5;stroke-dasharray:5 3"
)


def _reads(x: float, middle: float) -> str:
    """Each read in a dashed box of its own, so the cut between them is visible."""
    parts = []
    for number, data in _READS:
        parts.append(
            f'<text x="{x}" y="{middle + 5}" fill="#808080" style="{_MUTED};{_FONT};font-size:13px">'
            f"read #{number}</text>"
        )
        x += 60
        width = 8 * len(data) + 24  # 13px monospace: under 8px a character
        parts.append(
            f'<rect x="{x}" y="{middle - 15}" width="{width}" height="30" rx="4" fill="#f2f2f2" '
            f'stroke="#555" stroke-dasharray="5 3" style="{_READ_BOX}"/>'
            f'<text x="{x + 12}" y="{middle + 5}" fill="#1f1f1f" style="{_TEXT};{_MONO};font-size:13px">'
            f"{escape(data)}</text>"
        )
        x += width + 28
    parts.append(
        f'<text x="{x}" y="{middle + 5}" fill="#808080" style="{_MUTED};{_FONT};font-size:13px">'
        f"{escape(_READS_NOTE)}</text>"
    )
    return "".join(parts)


def sse_layers() -> Diagram:
    """The layering of 05-3: network reads → text lines → SSE payload → ProviderChunk."""
    w, h, bw, bh, gap = 980, 430, 190, 64, 46
    layers = [
        (
            "网络读取",
            "bytes，切在哪都行",
            "   ".join(f"read #{n} [{data}]" for n, data in _READS) + "  " + _READS_NOTE,
        ),
        ("文本行", "遇到 \\n 才取出一行", 'data: {"choices":[…]}   以及一个空行 ""'),
        ("SSE payload", "空行结束一组 data", '{"choices":[{"index":0,"delta":{"tool_calls":[…]}}]}'),
        ("ProviderChunk", "检查过的小对象", "ToolChunk(index=0, id='call-1', name='read', …)"),
    ]
    steps = ["增量 UTF-8 解码，追加进 buffer", "data: 行攒起来，空行时分发", "json.loads + 逐层字段检查"]
    body = []
    for number, (name, note, example) in enumerate(layers):
        y = 20 + number * (bh + gap)
        body.append(_box(20, y, bw, bh, [name, note]))
        if number == 0:  # the reads, each boxed: the cut between them is the point
            body.append(_reads(40 + bw, y + bh / 2))
        else:
            width = 8 * len(example) + 24  # a light box under the dark monospace text, as the reads have
            body.append(
                f'<rect x="{40 + bw}" y="{y + bh / 2 - 15}" width="{width}" height="30" rx="4" '
                f'fill="#f2f2f2" style="{_BOX}"/>'
                f'<text x="{52 + bw}" y="{y + bh / 2 + 5}" fill="#1f1f1f" '
                f'style="{_TEXT};{_MONO};font-size:13px">{escape(example)}</text>'
            )
        if number < len(steps):
            body.append(_arrow(20 + bw / 2, y + bh, 20 + bw / 2, y + bh + gap, "back"))
            body.append(
                f'<text x="{30 + bw / 2}" y="{y + bh + gap / 2 + 5}" fill="#808080" '
                f'style="{_MUTED};{_FONT};font-size:13px">'
                f"{escape(steps[number])}</text>"
            )
    text = "\n".join(
        line
        for number, (name, note, example) in enumerate(layers)
        for line in [f"{name:<14} {example}"]
        + ([f"   │ {steps[number]}", "   ▼"] if number < len(steps) else [])
    )
    return Diagram(
        "sse_layers", _svg(w, h, "SSE 的分层：网络读取、文本行、payload、ProviderChunk", body), text, w
    )
