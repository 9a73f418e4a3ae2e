"""SSEBufferStepper's views: each item of a :class:`~.sse_model.ReadStep` as HTML and as plain text.

One renderer per item and format; the live pages (compact: the buffer once, with this read's text
underlined, then the payloads and what stays), the static table and the text lines (for nbval) are
assembled from them at the end.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..chapter import steps as chapter_steps
from .markup import CURRENT, MISSING, badge, esc, folded_table, live_pages, note, table
from .sse_model import DecoderFailure, ReadStep


def _hex(data: bytes) -> str:
    return " ".join(f"{byte:02X}" for byte in data)


def marked_html(text: str, *, line_start: bool = True) -> str:
    """Text with visible line ends: ``↵`` after each line, a 空行 badge for the blank line.

    ``line_start=False``: ``text`` continues a line, so a ``\n`` first ends that line.
    """
    out: list[str] = []
    for char in text:
        if char == "\n":
            blank = badge("空行", "blank") if line_start else ""
            out.append(f'{blank}<span class="pi-nl">↵</span>\n')
            line_start = True
        else:
            out.append(esc(char))
            line_start = False
    return "".join(out)


def marked_text(text: str) -> str:
    return text.replace("\n", "↵")


# --- one read -----------------------------------------------------------------------------------


def read_html(step: ReadStep) -> str:
    """What this read appended: its text, and the bytes carried in or held back at its edges."""
    parts = []
    if step.carried and step.text:
        char = step.text[0]
        rest = step.data[: len(char.encode()) - len(step.carried)]
        parts.append(badge(f"{_hex(step.carried)}（上次暂存）+ {_hex(rest)} → {char}", "readend"))
    if step.carried_cr:
        parts.append(badge("上次暂存的 \\r + 这次的 \\n → 一个换行", "readend"))
    parts.append(marked_html(step.text, line_start=not step.before))
    if step.held:
        whole = f"「{step.cut_char}」的前 {len(step.held)} 个字节" if step.cut_char else "被切开的字符"
        parts.append(badge(f"{whole} {_hex(step.held)}：解码器暂存，等下一次读取", "readend"))
    if step.held_cr:
        parts.append(badge("\\r：暂存，等下一次读取（可能是 \\r\\n 的前一半）", "readend"))
    return "".join(parts)


def read_text(step: ReadStep) -> str:
    held = f" + 暂存字节 {_hex(step.held)}" if step.held else ""
    held += " + 暂存 \\r" if step.held_cr else ""
    carried = f"（先接上暂存字节 {_hex(step.carried)}）" if step.carried else ""
    carried += "（先接上暂存的 \\r）" if step.carried_cr else ""
    return f"{carried}: {marked_text(step.text)}{held}"


def read_end(step: ReadStep) -> str:
    """Where a read stopped: after a line end, inside a line, inside a character."""
    if step.held:
        return "字符中间"
    if step.held_cr:
        return "\\r"
    return "↵" if step.text.endswith("\n") else "行中间"


def buffer_html(step: ReadStep) -> str:
    """The buffer after the append: what the decoder kept before (plain) and this read (underlined)."""
    if not step.buffer and not step.held and not step.held_cr:
        return badge("缓冲区为空", "empty")
    end = badge(f"第 {step.number} 次读取到此为止", "readend")
    fresh = f'<span class="pi-new">{read_html(step)}</span>'
    return f'<div class="pi-buffer">{marked_html(step.before)}{fresh}{end}</div>'


def lines_html(step: ReadStep) -> str:
    """The complete lines taken out, counted by kind (the lines themselves are in the buffer above)."""
    if step.mismatch:
        return (
            f'<p class="{MISSING}">decoder.pending 不是缓冲区的结尾：解码器丢掉或多出了文字'
            f"（pending = {esc(repr(step.pending))}）</p>"
        )
    if not step.lines:
        return note("没有取出完整的行（还没有遇到 ↵）")
    blanks = sum(1 for line in step.lines if not line)
    data = sum(1 for line in step.lines if line.startswith("data:"))
    other = len(step.lines) - blanks - data
    kinds = [f"data 行 {data}"] if data else []
    kinds += [f"空行 {blanks}"] if blanks else []
    kinds += [f"其他 {other}"] if other else []
    waiting = f"；{len(step.waiting)} 行 data 还在等空行" if step.waiting else ""
    return f"<p>取出 {len(step.lines)} 行（{'、'.join(kinds)}）{waiting}</p>"


def lines_text(step: ReadStep) -> str:
    lines = " / ".join("[空行]" if not line else line + "↵" for line in step.lines) or "无"
    waiting = f" ‖ 等空行: {len(step.waiting)} 行" if step.waiting else ""
    return f"取出的行: {lines}{waiting}"


def _abridged(text: str, head: int = 48, tail: int = 24, limit: int = 100) -> str:
    """A string longer than ``limit`` as its start and end around a badge saying how much is left out."""
    if len(text) <= limit:
        return esc(text)
    return f"{esc(text[:head])}{badge(f'省略 {len(text) - head - tail} 字符', 'empty')}{esc(text[-tail:])}"


def payloads_html(step: ReadStep, *, abridge: bool = False) -> str:
    if not step.payloads:
        return note("没有分发事件（还没有空行结束一条事件）")
    shown = _abridged if abridge else esc
    items = "".join(f'<li><div class="pi-buffer">{shown(data)}</div></li>' for data in step.payloads)
    return f"<ol>{items}</ol>"


def payloads_text(step: ReadStep) -> str:
    return "payload: " + (" / ".join(data.replace("\n", "\\n") for data in step.payloads) or "无")


def pending_html(step: ReadStep) -> str:
    if not step.pending:
        return badge("缓冲区为空", "empty")
    return f'<div class="pi-buffer">{marked_html(step.pending)}</div>'


def pending_text(step: ReadStep) -> str:
    return "留下: " + (marked_text(step.pending) if step.pending else "缓冲区为空")


def failure_html(failure: DecoderFailure) -> str:
    return f'<p class="{MISSING}">{esc(failure_text(failure))}</p>'


def failure_text(failure: DecoderFailure) -> str:
    """One line: which practice step is missing, or what the decoder raised on which read."""
    if failure.step is not None:
        practice = chapter_steps.step(failure.step)
        where = f"SSEDecoder 在 {practice.files[0]} 里还是占位实现"
        return f"需要先完成实践 {practice.number}（{practice.label}）：{where}。"
    where = f"实践 5.3，{chapter_steps.step('5.3').files[0]}"
    return f"第 {failure.read} 次读取时 SSEDecoder 出错（{where}）：{failure.message}"


# --- assembled: live pages, the static table, the text lines -------------------------------------

SSE_LEGEND = (
    f'<span class="pi-nl">↵</span> 是换行符 \\n；{badge("空行", "blank")} 是空行，结束一条事件；'
    "下划线是本次读到的文字。"
)
READS_LEGEND = "止于：这次读取停在哪里；行：取出的完整行；事件：分发的 payload；留下：留在缓冲区的字符。"


def _response_row(step: ReadStep, columns: int) -> str:
    return f'<tr><td colspan="{columns}"><b>响应 {step.response}</b>（新的 buffer）</td></tr>'


def read_row_html(step: ReadStep, current: int | None) -> str:
    if current is not None and step.number > current:  # not read yet: the list grows as it steps
        blank = "".join(f"<td>{note('…', 'span')}</td>" for _ in range(5))
        return f'<tr class="pi-later"><td>{step.number}</td>{blank}</tr>'
    cls = f' class="{CURRENT}"' if step.number == current else ""
    marker = "▶ " if step.number == current else ""
    pending = "空" if not step.pending else f"{len(step.pending)} 字符"
    return (
        f"<tr{cls}><td>{marker}{step.number}</td><td>{len(step.data)}</td><td>{read_end(step)}</td>"
        f"<td>{len(step.lines)}</td><td>{len(step.payloads)}</td><td>{pending}</td></tr>"
    )


def _listing(steps: Sequence[ReadStep], current: int | None) -> str:
    rows = []
    for index, step in enumerate(steps):
        if index == 0 or steps[index - 1].response != step.response:
            rows.append(_response_row(step, 6))
        rows.append(read_row_html(step, current))
    head = ("读取", "字节", "止于", "行", "事件", "留下")
    return table(("3.9em", "3.4em", "", "2.6em", "3.2em", "4.8em"), head, rows, "pi-steps")


def _detail(steps: Sequence[ReadStep], step: ReadStep) -> str:
    index = steps.index(step)
    fresh = index == 0 or steps[index - 1].response != step.response
    start = note(f"响应 {step.response} 的第一次读取：缓冲区从空开始。") if fresh else ""
    return (
        f"<h4>第 {step.number} 次读取（响应 {step.response}）· {len(step.data)} 字节"
        " · append 之后的缓冲区</h4>"
        f"{start}{buffer_html(step)}{lines_html(step)}"
        f"<h4>分发的 SSE payload（data）</h4>{payloads_html(step)}"
        f"<h4>留在缓冲区（decoder.pending：下一行的开头）</h4>{pending_html(step)}"
    )


def sse_pages(steps: Sequence[ReadStep], failure: DecoderFailure | None) -> list[str]:
    legend = note(f"{READS_LEGEND}{SSE_LEGEND}")
    stop = failure_html(failure) if failure is not None else ""
    heading = "<h4>读到这一次为止（后面的读取只列编号）</h4>"
    lists = [
        f"{heading}{_listing(steps, step.number)}{stop if step is steps[-1] else ''}{legend}"
        for step in steps
    ]
    sizer = f"{heading}{_listing(steps, None)}{stop}{legend}" if steps else ""
    # One slot for the whole detail column: its sections pack at the top (no gaps between them),
    # and the tallest read still fixes the page's height.
    return live_pages(lists, [[_detail(steps, step)] for step in steps], sizer)


def _after_read_html(step: ReadStep) -> str:
    """What one read left behind, summarised (the static table's last column)."""
    if step.pending and step.pending == step.buffer:
        pending = f"缓冲区里的 {len(step.pending)} 个字符全部留下（还没有 ↵）"
    elif step.pending:
        pending = f'<div class="pi-buffer">{_abridged(step.pending)}</div>'
    else:
        pending = badge("缓冲区为空", "empty")
    count = f"<div>分发 {len(step.payloads)} 条 payload：</div>" if step.payloads else ""
    return f"{lines_html(step)}{count}{payloads_html(step, abridge=True)}<div>留在缓冲区：{pending}</div>"


def sse_static(steps: Sequence[ReadStep], failure: DecoderFailure | None) -> str:
    rows = []
    for index, step in enumerate(steps):
        if index == 0 or steps[index - 1].response != step.response:
            rows.append(_response_row(step, 3))
        summary = note(f"{len(step.data)} 字节 · 止于{read_end(step)}", "span")
        rows.append(
            f'<tr class="pi-row"><td>{step.number}<br>{summary}</td>'
            f'<td><div class="pi-buffer pi-read">{read_html(step)}</div></td>'
            f"<td>{_after_read_html(step)}</td></tr>"
        )
    head = ("读取", "本次读到（↵ = \\n）", "读完之后：取出的行、分发的 payload（长的只留头尾）、留在缓冲区")
    stop = failure_html(failure) if failure is not None else ""
    return folded_table(("6.4em", "50%", ""), head, rows, "pi-static-table") + stop + note(SSE_LEGEND)


def sse_lines(steps: Sequence[ReadStep], failure: DecoderFailure | None) -> list[str]:
    lines = [
        f"read {step.number} (响应 {step.response}, {len(step.data)} 字节){read_text(step)} "
        f"‖ {lines_text(step)} ‖ {payloads_text(step)} ‖ {pending_text(step)}"
        for step in steps
    ]
    return lines + ([failure_text(failure)] if failure is not None else [])
