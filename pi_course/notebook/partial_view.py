"""PartialStepper's views: each item of a :class:`~.partial_model.PartialStep` as HTML and as plain text.

One renderer per item and format (``*_html`` / ``*_text``); the live pages, the static table and
the deterministic text lines (for nbval) are assembled from them at the end of this module.
"""

from __future__ import annotations

from collections.abc import Sequence

from .markup import CHANGED, CURRENT, MISSING, badge, esc, folded_table, live_pages, note, str_box, table
from .partial_model import (
    Block,
    ChunkRecord,
    EventRecord,
    FinishRead,
    OtherRead,
    PartialStep,
    TextBlock,
    TextRead,
    ToolBufferState,
    ToolCallBlock,
    ToolRead,
)

#: Beside a toolCall whose id no chunk sent: the adapter made it up (a placeholder, say).
MADE_UP_ID = "没有哪个 chunk 发过这个 id：是 adapter 自己起的"

#: Under a tool_buffers table with a slot no event reported (``slots=``, e.g. 05-5's experiment).
OUTSIDE_NOTE = (
    "* 没有哪个事件报告过这个槽位：它是从这一次运行里量出来的（adapter 量 content 长度时得到的值）。"
)


# --- chunk --------------------------------------------------------------------------------------


def _usage_text(usage: tuple[int, int] | None) -> str:
    return "" if usage is None else f"input {usage[0]}, output {usage[1]}"


def chunk_html(chunk: ChunkRecord) -> str:
    match chunk:
        case ToolRead():
            parts = [f"<b>tool</b> {badge(f'Provider index {chunk.index}', 'index')}"]
            if chunk.id is not None:
                parts.append(f"id {str_box(chunk.id)}")
            if chunk.name is not None:
                parts.append(f"name {str_box(chunk.name)}")
            if chunk.arguments_delta is not None:
                parts.append(f"arguments_delta {badge('原文', 'raw')}{str_box(chunk.arguments_delta)}")
            return " · ".join(parts)
        case TextRead():
            return f"<b>text</b> delta {str_box(chunk.delta)}"
        case FinishRead():
            usage = f" · usage {esc(_usage_text(chunk.usage))}" if chunk.usage else ""
            return f"<b>finish</b> reason {str_box(chunk.reason)}{usage}"
    return f"<b>{esc(chunk.label)}</b> {esc(chunk.text)}"


def chunk_text(chunk: ChunkRecord) -> str:
    match chunk:
        case ToolRead():
            fields = [f"tool index={chunk.index}"]
            for name, value in (
                ("id", chunk.id),
                ("name", chunk.name),
                ("arguments_delta", chunk.arguments_delta),
            ):
                if value is not None:
                    fields.append(f"{name}={value!r}")
            return " ".join(fields)
        case TextRead():
            return f"text delta={chunk.delta!r}"
        case FinishRead():
            return f"finish {chunk.reason}" + (f" ({_usage_text(chunk.usage)})" if chunk.usage else "")
    return f"{chunk.label}: {chunk.text}"


def chunk_cell_html(step: PartialStep) -> str:
    """The chunk a step read, numbered; or why there is none."""
    if step.chunk is not None:
        again = note("（同一 chunk）", "span") + " " if step.repeat_chunk else ""
        return f"{again}chunk {step.chunk_number} · {chunk_html(step.chunk)}"
    return note("transport 已结束" if step.after_end else "还没有读 chunk", "span")


def chunk_cell_text(step: PartialStep) -> str:
    if step.chunk is not None:
        return f"chunk {step.chunk_number}: {chunk_text(step.chunk)}"
    return "（transport 已结束）" if step.after_end else "（还没有读 chunk）"


# --- event --------------------------------------------------------------------------------------


def event_html(event: EventRecord | None) -> str:
    if event is None:
        return note("没有事件", "span")
    head = f"<b>{esc(event.kind)}</b>"
    if event.kind in ("text_delta", "toolcall_delta"):
        raw = badge("原文", "raw") if event.kind == "toolcall_delta" else ""
        slot = f"content_index <b>{esc(event.content_index)}</b>"
        return f"{head} {slot} · delta {raw}{str_box(event.delta or '')}"
    if event.kind == "toolcall_end":
        return (
            f"{head} content_index <b>{esc(event.content_index)}</b> · {esc(event.tool_name)} "
            f"{badge('已解析', 'parsed')}<code>{esc(repr(event.arguments))}</code>"
        )
    if event.kind == "done":
        return f"{head} reason {str_box(event.reason or '')}"
    if event.kind == "error":
        return f"{head} reason {str_box(event.reason or '')} · {str_box(event.error_message or '')}"
    return head


def event_text(event: EventRecord | None) -> str:
    if event is None:
        return "（没有事件）"
    if event.kind in ("text_delta", "toolcall_delta"):
        return f"{event.kind} content_index={event.content_index} delta={event.delta!r}"
    if event.kind == "toolcall_end":
        return f"toolcall_end content_index={event.content_index} 已解析 {event.arguments!r}"
    if event.kind == "done":
        return f"done {event.reason}"
    if event.kind == "error":
        return f"error {event.reason}: {event.error_message}"
    return event.kind


# --- one content slot ---------------------------------------------------------------------------


def slot_html(step: PartialStep, slot: int) -> str:
    """One content block: its type, then its value (a tool call's arguments: raw or parsed)."""
    block: Block = step.content[slot]
    match block:
        case TextBlock():
            return f"text {str_box(block.text)}"
        case ToolCallBlock():
            made_up = note(f"（{MADE_UP_ID}）", "span") if step.made_up_id(block) else ""
            head = f"toolCall · id {str_box(block.id)}{made_up} · name {str_box(block.name)}"
            if step.is_parsed(slot):
                body = (
                    f"arguments {badge('已解析 · ' + type(block.arguments).__name__, 'parsed')}"
                    f"<code>{esc(repr(block.arguments))}</code>"
                )
                if block.raw_arguments is not None:
                    body += f"<br>raw_arguments {badge('原文', 'raw')}{str_box(block.raw_arguments)}"
            else:
                raw = block.raw_arguments
                shown = (
                    raw if raw is not None else block.arguments if isinstance(block.arguments, str) else ""
                )
                body = f"arguments {badge('原文 · 流式中，尚未解析', 'raw')}{str_box(str(shown))}"
            return f"{head}<br>{body}"
    return esc(block.kind)


def slot_text(step: PartialStep, slot: int) -> str:
    block = step.content[slot]
    match block:
        case TextBlock():
            return f"[{slot}] text {block.text!r}"
        case ToolCallBlock():
            if step.is_parsed(slot):
                state = f"已解析 {block.arguments!r}"
            else:
                raw = block.raw_arguments
                state = f"原文 {(raw if raw is not None else block.arguments)!r}"
            made_up = "（id 不来自任何 chunk）" if step.made_up_id(block) else ""
            return f"[{slot}] toolCall {block.id}{made_up} {block.name!r} {state}"
    return f"[{slot}] {block.kind}"


def missing_html(step: PartialStep) -> str:
    """Why the step names a slot content does not have (the telling step of 05-5)."""
    slot, have = step.missing_slot, len(step.content)
    if step.missing_from_buffer and step.touched_buffer is not None:
        why = f"tool_buffers 给 index {step.touched_buffer} 记的槽位是 {slot}，可 content 只有 {have} 个槽位"
    else:
        why = f"事件指向槽位 {slot}，可 content 只有 {have} 个槽位"
    return f"content[{slot}] 不存在：{why}"


def missing_text(step: PartialStep) -> str:
    return f"[{step.missing_slot}] 不存在（content 只有 {len(step.content)} 个槽位）"


# --- content, tool_buffers, finish --------------------------------------------------------------


def _slot_mark(step: PartialStep, slot: int) -> str:
    return " ◀ 本步" if slot == step.changed_slot else " ◀ 新增" if slot in step.new_slots else ""


def content_html(step: PartialStep) -> str:
    rows = []
    for slot in range(len(step.content)):
        mark = _slot_mark(step, slot)
        cls = f' class="{CHANGED}"' if mark else ""
        rows.append(f'<tr{cls}><td class="pi-nowrap">{slot}{mark}</td><td>{slot_html(step, slot)}</td></tr>')
    if step.missing_slot is not None:
        rows.append(
            f'<tr class="{MISSING}"><td class="pi-nowrap">{step.missing_slot} ◀ 本步</td>'
            f"<td>{missing_html(step)}</td></tr>"
        )
    if not rows:
        return note("content 为空（还没有槽位）")
    return table(("6.4em", ""), ("槽位", "内容"), rows)


def content_text(step: PartialStep) -> str:
    slots = [slot_text(step, slot) for slot in range(len(step.content))]
    if step.missing_slot is not None:
        slots.append(missing_text(step))
    return " | ".join(slots) or "（空）"


def _slot_label(buffer: ToolBufferState) -> str:
    slot = "—" if buffer.content_index is None else str(buffer.content_index)
    return slot + ("*" if buffer.slot_from_outside else "")


def _buffer_state(buffer: ToolBufferState) -> str:
    return "已解析" if buffer.parsed else "流式中"


def buffers_html(step: PartialStep) -> str:
    if not step.buffers:
        return note("tool_buffers 为空")
    rows = []
    for buffer in step.buffers:
        cls = f' class="{CHANGED}"' if buffer.provider_index == step.touched_buffer else ""
        rows.append(
            f"<tr{cls}><td><b>{buffer.provider_index}</b></td><td>{esc(buffer.id)}</td>"
            f"<td>{esc(buffer.name)}</td><td>{str_box(buffer.raw_arguments)}</td>"
            f'<td><b>{_slot_label(buffer)}</b></td><td class="pi-nowrap">{_buffer_state(buffer)}</td></tr>'
        )
    head = ("Provider index", "id", "name", "参数原文", "content<wbr>_index", "状态")
    outside = note(esc(OUTSIDE_NOTE)) if any(b.slot_from_outside for b in step.buffers) else ""
    return table(("6.2em", "16%", "13%", "", "5.4em", "4.6em"), head, rows) + outside


def buffers_text(step: PartialStep) -> str:
    parts = []
    for buffer in step.buffers:
        slot = "?" if buffer.content_index is None else buffer.content_index
        parts.append(
            f"{buffer.provider_index}→({buffer.id}, {buffer.name}, {buffer.raw_arguments!r}, #{slot})"
        )
    return "{" + ", ".join(parts) + "}"


def finish_html(finish: FinishRead | None) -> str:
    if finish is None:
        return "—（还没读到 finish）"
    return esc(finish.reason) + (f" · {esc(_usage_text(finish.usage))}" if finish.usage else "")


def state_html(step: PartialStep) -> str:
    """tool_buffers, text_content_index and finish: the adapter's per-request state."""
    text_index = "—（还没有文本）" if step.text_content_index is None else str(step.text_content_index)
    return (
        f"<h4>tool_buffers（Provider index → buffer）</h4>{buffers_html(step)}"
        f"<p>text_content_index：<b>{text_index}</b> · finish：<b>{finish_html(step.finish)}</b></p>"
    )


# --- a step as a row of the list, and what it changed -------------------------------------------


def _short_chunk(step: PartialStep) -> str:
    chunk = step.chunk
    if chunk is None:
        return "transport 已结束" if step.after_end else "—"
    match chunk:
        case ToolRead():
            detail = f"tool · index <b>{chunk.index}</b>"
        case TextRead():
            detail = "text"
        case FinishRead():
            detail = f"finish {esc(chunk.reason)}"
        case OtherRead():
            detail = esc(chunk.label)
    return f"#{step.chunk_number} {detail}"


def _short_event(step: PartialStep) -> str:
    event = step.event
    if event is None:
        return note("无", "span")
    if event.content_index is not None:
        text = f"{esc(event.kind)} · content_index <b>{event.content_index}</b>"
    elif event.terminal and event.kind == event.reason:  # error · error says nothing twice
        text = f"{esc(event.kind)} 终态"
    elif event.terminal:
        text = f"{esc(event.kind)} · {esc(event.reason)}"
    else:
        text = esc(event.kind)
    if step.missing_slot is not None:
        text += f" · <b>content[{step.missing_slot}] 不存在</b>"
    return text


LATER = "pi-later"


def later_row_html(number: int, columns: int) -> str:
    """A step not reached yet: its number only, so the list grows as the learner steps."""
    blank = "".join(f"<td>{note('…', 'span')}</td>" for _ in range(columns - 1))
    return f'<tr class="{LATER}"><td>{number}</td>{blank}</tr>'


def step_row_html(step: PartialStep, current: int | None) -> str:
    if current is not None and step.number > current:
        return later_row_html(step.number, 3)
    cls = f' class="{CURRENT}"' if step.number == current else ""
    marker = "▶ " if step.number == current else ""
    cells = f"<td>{marker}{step.number}</td><td>{_short_chunk(step)}</td><td>{_short_event(step)}</td>"
    return f"<tr{cls}>{cells}</tr>"


def changes_html(step: PartialStep) -> str:
    """What one step changed, in a line or two (the static table's last column)."""
    parts = []
    buffer = step.buffer(step.touched_buffer)
    if buffer is not None:
        parts.append(
            f"<div>tool_buffers[<b>{buffer.provider_index}</b>] → content_index "
            f"<b>{_slot_label(buffer)}</b> · {_buffer_state(buffer)}</div>"
        )
    if isinstance(step.chunk, FinishRead) and not step.repeat_chunk:
        parts.append(f"<div>记下 finish：{finish_html(step.finish)}</div>")
    named = set() if step.changed_slot is None else {step.changed_slot}
    for slot in sorted(step.new_slots | named):
        if slot < len(step.content):
            label = f"content[<b>{slot}</b>]{_slot_mark(step, slot)}"
            parts.append(f'<div class="{CHANGED}">{label} {slot_html(step, slot)}</div>')
    if step.missing_slot is not None:
        parts.append(f'<div class="{MISSING}">{missing_html(step)}</div>')
    if step.event is not None and step.event.terminal:
        parts.append(f"<div>最终 content：{len(step.content)} 个槽位（见表格下方）</div>")
    return "".join(parts) or note("partial 不变", "span")


# --- assembled: live pages, the static table, the text lines -------------------------------------


def _unread_note(unread: Sequence[int]) -> str:
    if not unread:
        return ""
    return note(f"没有读到的 chunk：{', '.join(f'#{i + 1}' for i in unread)}（流已经以 error 结束）")


def _content_heading(step: PartialStep) -> str:
    where = "最终 content" if step.event is not None and step.event.terminal else "partial.content"
    return f"<h4>{where}（◀ 标出改变的槽位）</h4>"


def _sections(step: PartialStep) -> list[str]:
    """The detail column of one step, in sections that line up across steps."""
    quiet = ""
    if step.event is None and step.chunk is not None:
        quiet = note("这个 chunk 没有产生事件：adapter 只是记下了它，partial 不变。")
    return [
        f"<h4>第 {step.number} 步 · 读到的 ProviderChunk</h4><p>{chunk_cell_html(step)}</p>",
        f"<h4>发出的事件</h4><p>{event_html(step.event)}</p>{quiet}",
        state_html(step),
        f"{_content_heading(step)}{content_html(step)}",
    ]


def partial_pages(steps: Sequence[PartialStep], unread: Sequence[int]) -> list[str]:
    def listing(current: int | None) -> str:
        rows = [step_row_html(step, current) for step in steps]
        head = ("步", "读到的 chunk", "发出的事件")
        end = _unread_note(unread) if current in (None, steps[-1].number) else ""  # how it ends: at the end
        listed = table(("3.9em", "40%", ""), head, rows, "pi-steps")
        return f"<h4>走到这一步为止（后面的步骤只列编号）</h4>{listed}{end}"

    pages = [listing(step.number) for step in steps]
    return live_pages(pages, [_sections(step) for step in steps], listing(None) if steps else "")


def partial_static(steps: Sequence[PartialStep], unread: Sequence[int]) -> str:
    rows = [
        f'<tr class="pi-row"><td>{step.number}</td><td>{chunk_cell_html(step)}</td>'
        f"<td>{event_html(step.event)}</td><td>{changes_html(step)}</td></tr>"
        for step in steps
    ]
    head = ("步", "读到的 ProviderChunk", "发出的事件", "这一步改变了什么（◀ 改变的槽位）")
    listing = folded_table(("3.2em", "31%", "29%", ""), head, rows, "pi-static-table")
    if not steps:
        return listing
    last = steps[-1]
    final = f"<h4>第 {last.number} 步之后</h4>{state_html(last)}{_content_heading(last)}{content_html(last)}"
    return listing + _unread_note(unread) + final


def partial_lines(steps: Sequence[PartialStep], unread: Sequence[int]) -> list[str]:
    lines = [
        f"{step.number:>2} · {chunk_cell_text(step)} → {event_text(step.event)} · "
        f"tool_buffers {buffers_text(step)} · content {content_text(step)}"
        for step in steps
    ]
    if unread:
        lines.append("没有读到的 chunk: " + ", ".join(f"#{i + 1}" for i in unread))
    return lines
