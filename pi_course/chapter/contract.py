"""What the chapter fixes and what it leaves open, for every observable the comparison looks at.

``check 05`` compares each piece a learner wrote with the chapter's reference piece
(``tests/test_05_compare.py``). The reference makes one choice everywhere, but a learner can only
be held to what they can read: the chapter, LEARNING.md, the starter's docstrings and types, and
the copy's focused tests. Each :class:`Point` says, for one observable, whether it is *fixed*
(compared exactly, its sentence quoted when it differs) or *open* (every behaviour a faithful
reading gives is accepted), and the sentence that decides it. An open point is accepted either by
comparing less (``how`` says what is left out) or by :class:`Edit`\\ s of the reference lesson
file: each edit is the other allowed choice, and the comparison accepts a learner who matches the
reference with any combination of them applied (``tests/workflow/test_allowed_variants.py`` holds
a finished copy making each choice to ``完成``).
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass

from .rules import CHAPTER_SOURCE

FIXED = "fixed"
OPEN = "open"


@dataclass(frozen=True)
class Edit:
    """One text of a reference lesson file replaced by another (the text occurs there exactly once)."""

    file: str
    reference: str
    allowed: str


@dataclass(frozen=True)
class Point:
    """One observable of one piece: fixed or open, the sentence that decides it, how it is compared.

    ``edits``: on an open point, the reference made to take the other allowed choice (the
    comparison accepts it). ``examples``: where the comparison accepts the choice by comparing less,
    a reference making it all the same, for the allowed-variants matrix.
    """

    step: str
    name: str
    status: str
    quote: str
    how: str
    source: str = CHAPTER_SOURCE
    edits: tuple[Edit, ...] = ()
    examples: tuple[Edit, ...] = ()

    @property
    def variant(self) -> tuple[Edit, ...]:
        """A finished learner making the other allowed choice: the reference with these edits."""
        return self.edits or self.examples

    @property
    def cited(self) -> str:
        return f"「{self.quote}」" + ("" if self.source == CHAPTER_SOURCE else f"（{self.source}）")


_ADAPTER = "adapter.py"
_SSE = "sse.py"
_TRANSPORT = "transport.py"
_OUTBOUND = "outbound.py"
_STARTER = "starter"

# The other allowed choice of the adapter's toolcall_end: at the finish chunk, not after the stream.
_TOOLS_AFTER_THE_STREAM = """\
        if finish.reason == "tool_calls":
            # Only a tool_calls finish says the arguments are complete: parse them now.
            for buffer in sorted(tool_buffers.values(), key=lambda b: b.content_index):
                try:
                    arguments = json.loads(buffer.raw_arguments) if buffer.raw_arguments else {}
                except json.JSONDecodeError:
                    failure = f'Tool call "{buffer.name}" ({buffer.id}) has invalid JSON arguments'
                    yield ErrorEvent("error", message("error", usage, failure))
                    return
                tool_call = ToolCall(buffer.id, buffer.name, arguments, buffer.raw_arguments)
                content[buffer.content_index] = tool_call
                yield ToolCallEndEvent(buffer.content_index, tool_call, partial())
"""
_TOOLS_AT_THE_FINISH_CHUNK = (
    "                        case FinishChunk():\n"
    "                            finish = chunk\n"
    "                            usage = _normalized(finish.usage)\n"
    + textwrap.indent(_TOOLS_AFTER_THE_STREAM, " " * 20)
)

POINTS: tuple[Point, ...] = (
    # --- 5.1 the outbound conversion ----------------------------------------------------------------
    Point(
        "5.1",
        "四种 role 的请求字段",
        FIXED,
        "system prompt 变成第一条 system message；user 的 text block 合并成字符串；assistant 的工具调用进入 "
        'tool_calls；课程中的 toolResult 则写成 Provider 的 role: "tool"，并继续使用原来的 call id。',
        "每条 wire message 的 role、tool_call_id、name、tool_calls（id、type、name、arguments）逐字段比较",
    ),
    Point(
        "5.1",
        "几个 text block 怎样合并",
        OPEN,
        "user 的 text block 合并成字符串",
        '合并用的分隔符不比较：""、"\\n"、" "、"\\n\\n" 都接受（同一条消息里的文本、顺序不变）',
        examples=(
            Edit(
                _OUTBOUND,
                'return "\\n".join(block.text for block in blocks)',
                'return "".join(block.text for block in blocks)',
            ),
        ),
    ),
    Point(
        "5.1",
        "assistant 没有文字时的 content",
        OPEN,
        'role: "assistant", content: null, tool_calls: [...]',
        '没有 text block：content 是 null（章节的例子）；只有空文本：null 与 "" 都接受；'
        "没有工具调用时不带 tool_calls 与 tool_calls: [] 都接受",
        examples=(
            Edit(
                _OUTBOUND,
                '"content": _joined_text(texts) if texts else None}',
                '"content": _joined_text(texts) or None}',
            ),
            Edit(_OUTBOUND, "    if calls:\n        wire[", "    if True:\n        wire["),
        ),
    ),
    Point(
        "5.1",
        "参数优先用 raw_arguments",
        FIXED,
        "call.rawArguments ?? JSON.stringify(call.arguments ?? {})",
        "有 raw_arguments 时原样比较；没有时从 arguments 生成的 JSON 按 JSON 值比较（空格、转义不比较）",
    ),
    Point(
        "5.1",
        "arguments 是 None 以外的假值",
        OPEN,
        "call.rawArguments ?? JSON.stringify(call.arguments ?? {})",
        "章节写 ?? {}（只有 null 变成 {}）；arguments 是 [] 或 0 这样的假值不在比较的输入里："
        "写成 Python 的 or {} 也接受",
        examples=(
            Edit(
                _OUTBOUND,
                "json_stringify(call.arguments if call.arguments is not None else {})",
                "json_stringify(call.arguments or {})",
            ),
        ),
    ),
    Point(
        "5.1",
        "没有工具就没有 tools 键",
        FIXED,
        "没有工具时返回 undefined，请求体也就不会带一个空数组。",
        "tools 为 None 或空：请求里没有 tools 键",
    ),
    # --- 5.2 the adapter ----------------------------------------------------------------------------
    Point(
        "5.2",
        "事件的种类、顺序、content_index、delta 与 partial",
        FIXED,
        "每次 delta 先更新对应槽位，再用 structuredClone(content) 留下事件快照。",
        "逐个事件比较；partial 里 toolCall 的 arguments 在流式期间不比较（见下一行）",
    ),
    Point(
        "5.2",
        "流式期间 partial 里 toolCall 的 arguments",
        OPEN,
        "partial: toolCall(call-1, rawArguments '{\"path\":')",
        "章节的 partial 只写出 rawArguments：流式期间 arguments 放什么不比较；"
        "toolcall_end 与最终消息里的比较",
    ),
    Point(
        "5.2",
        "provider 还没给出的 id 与 name",
        OPEN,
        "第一次遇到工具 4 时，adapter 为它建立一个 ToolBuffer",
        'provider 给出 id 之前的 id 不比较；name 还没到时 None 与 "" 都接受',
        examples=(Edit(_ADAPTER, 'chunk.id or f"call-{index}", chunk.name or ""', '"", chunk.name'),),
    ),
    Point(
        "5.2",
        "provider 后来才给出的 id",
        FIXED,
        "跨章保持不变的是……同一轮内 id 从 Provider 输出一直进入 assistant 的配对关系。",
        "provider 在后面的分片里才给出 id（或 name）时，从那以后的 partial 与最终消息都带着它；"
        "空字符串不是 id，不覆盖已有的",
    ),
    Point(
        "5.2",
        "消费者停下时 transport 的 stream 被关闭",
        FIXED,
        "Close the transport's iterator (and so its HTTP response) however the stream ends.",
        "消费者读了几个事件就停下并 aclose() 时，transport 的 stream 在 aclose() 返回前已经结束"
        "（本章：「reader 在 finally 中取消并释放 lock，所以正常结束、解析异常和取消会走过同一个"
        "资源清理位置。」），不留给垃圾回收",
        source="给定代码 pi_course/adapter.py _closing() 的 docstring",
    ),
    Point(
        "5.2",
        "abort() 之后 transport 抛出的不是 AbortError",
        OPEN,
        "取消对应 aborted，其他异常对应 error。……AbortError 保持原来的名称，adapter 才能识别取消。",
        "按名字识别（error）与按 signal.aborted 识别（aborted）都接受",
        edits=(
            Edit(
                _ADAPTER,
                "aborted = isinstance(error, AbortError) or (signal is not None and signal.aborted)",
                "aborted = isinstance(error, AbortError)",
            ),
        ),
    ),
    Point(
        "5.2",
        "toolcall_end 在什么时候发出",
        OPEN,
        "tool_calls 表示 Provider 已经完成工具调用，此时 adapter 解析完整 JSON，并发出 toolcall_end。",
        "收到 finish chunk 时就发出，与 transport 结束之后再发出，都接受"
        "（finish 之后又 abort 或出错时才看得出）",
        edits=(
            Edit(_ADAPTER, _TOOLS_AFTER_THE_STREAM, ""),
            Edit(
                _ADAPTER,
                "                        case FinishChunk():\n                            finish = chunk\n",
                _TOOLS_AT_THE_FINISH_CHUNK,
            ),
        ),
    ),
    Point(
        "5.2",
        "finish 之后以 error 或 aborted 结束时的 usage",
        OPEN,
        "Given: an error or a refusal keeps the usage the provider sent.",
        "finish chunk 带来的 usage 保留与不保留（全 0）都接受",
        source="给定代码 pi_course/adapter.py OpenAICompatibleModel.stream() 的注释",
        edits=(
            Edit(
                _ADAPTER,
                "yield ErrorEvent(reason, message(reason, EMPTY_USAGE, detail))",
                "yield ErrorEvent(reason, message(reason, "
                "_normalized(finish.usage) if finish else EMPTY_USAGE, detail))",
            ),
            Edit(
                _ADAPTER,
                'yield ErrorEvent("error", message("error", usage, failure))',
                'yield ErrorEvent("error", message("error", EMPTY_USAGE, failure))',
            ),
        ),
    ),
    Point(
        "5.2",
        "tool_calls 结束时参数原文为空",
        OPEN,
        "tool_calls 表示 Provider 已经完成工具调用，此时 adapter 解析完整 JSON",
        "空参数读作 {} 与按无效 JSON 以 error 结束都接受（JSON.parse('') 会抛出）",
        edits=(
            Edit(
                _ADAPTER,
                "arguments = json.loads(buffer.raw_arguments) if buffer.raw_arguments else {}",
                "arguments = json.loads(buffer.raw_arguments)",
            ),
        ),
    ),
    Point(
        "5.2",
        "stop 结束时已有的工具调用",
        OPEN,
        "tool_calls 表示 Provider 已经完成工具调用……length 表示输出被截断；参数原文会留下来",
        "章节只说 tool_calls 与 length：stop 时解析参数（发出 toolcall_end）与保留原文都接受",
        edits=(Edit(_ADAPTER, 'if finish.reason == "tool_calls":', 'if finish.reason != "length":'),),
    ),
    Point(
        "5.2",
        "错误信息的文字",
        OPEN,
        "transport 抛出的异常会沿用当前 content 生成 error message。",
        "本章与聚焦测试给出的文字（Provider stream ended without a finish chunk、Invalid provider chunk: 与 "
        "JSON 路径）逐字比较；其他错误只比较 error_message 是一个字符串（空的也接受）",
        examples=(
            Edit(
                _ADAPTER,
                '"Request was aborted" if aborted else str(error) or type(error).__name__',
                '"aborted by the caller" if aborted else str(error)',
            ),
        ),
    ),
    # --- 5.3 the SSE decoder, the payload and the chunk reader -------------------------------------
    Point(
        "5.3",
        "SSE 事件 (data, event, id) 与产出的时机",
        FIXED,
        "空行出现后，此前收集的 data: 行才构成一条完整 SSE payload。",
        "每次读取之后产出的事件逐个比较；不能晚于空行到达的那次读取",
    ),
    Point(
        "5.3",
        "超过 max_event_size 在哪次读取报错",
        OPEN,
        "check_event_size",
        "只比较会报错；按字符还是字节计、注释算不算，章节没有规定",
        source=_STARTER,
    ),
    Point(
        "5.3",
        "Invalid provider chunk 的 JSON 路径",
        FIXED,
        "抛出 Invalid provider chunk: choices[0].delta.content must be a string",
        "错误以 Invalid provider chunk: 开头，并写出出错的 JSON 路径"
        "（choices[0].delta.tool_calls[0].index 这样）",
    ),
    Point(
        "5.3",
        "Invalid provider chunk 路径之后的文字",
        OPEN,
        "index 必须是非负安全整数，id、name、arguments 在出现时必须是字符串",
        "章节逐字给出的只有 must be a string，starter 的 _record() 给出 must be an object：这两种比较开头；"
        "其他只比较 JSON 路径；整个 payload 不是 object 时不比较路径的名字",
        examples=(
            Edit(
                _SSE,
                'f"{path} must be a non-negative safe integer"',
                'f"{path} must be a non-negative integer, got {value!r}"',
            ),
            Edit(_SSE, '_record(raw, "payload")', '_record(raw, "chunk")'),
            Edit(
                _SSE,
                '"choices[0].delta.tool_calls must be an array"',
                '"choices[0].delta.tool_calls must be a list"',
            ),
        ),
    ),
    Point(
        "5.3",
        "空 choices 又没有 usage",
        FIXED,
        "Array.isArray(rawChunk.choices) → choices.length === 1 ……空 choices 专门承载尾随 usage。",
        "章节的收窄路径要求恰好一个 choice，只有尾随 usage 的 payload 例外："
        "空 choices 又没有 usage 是 Invalid provider chunk",
    ),
    Point(
        "5.3",
        "delta.content 是空字符串",
        OPEN,
        'content = choice.delta.content，typeof content === "string" → { type: "text", delta: content }',
        '产出 TextChunk("") 与不产出都接受（章节的 TypeScript 会产出）',
        edits=(Edit(_SSE, "if content:", "if content is not None:"),),
    ),
    Point(
        "5.3",
        "一个流里出现两次结束原因",
        OPEN,
        "transport 读到结束原因后先记住它，继续等待尾随 usage",
        "记住第一个与记住最后一个都接受",
        edits=(
            Edit(
                _SSE,
                "finish_reason = parts.finish_reason",
                "finish_reason = finish_reason or parts.finish_reason",
            ),
        ),
    ),
    Point(
        "5.3",
        "结束原因与尾随 usage 合成一个 finish chunk",
        FIXED,
        "遇到 [DONE] 或输入结束，再合成唯一的 finish chunk。",
        "chunk 逐个比较；usage 逐字段合并（LEARNING.md 的规则表）；没有 usage 与全 0 的 usage 相同",
    ),
    # --- 5.3 / 5.4 the HTTP transport ----------------------------------------------------------------
    Point(
        "5.3",
        "abort 时以 AbortError 结束，响应被关闭",
        FIXED,
        "读取前后都检查 abort signal。reader 在 finally 中取消并释放 lock",
        "chunk、结束方式（AbortError / 其他异常）与响应是否关闭逐项比较；"
        "响应在 stream 结束时（消费者停下并 aclose() 时也一样）就已关闭",
    ),
    Point(
        "5.3",
        "读 HTTP 错误响应体时 abort()",
        OPEN,
        "读取前后都检查 abort signal。",
        "错误响应体的读取与 signal 赛跑（AbortError）与不赛跑（其他异常）都接受",
        edits=(
            Edit(_TRANSPORT, "await _check_response(response)", "await abort.run(_check_response(response))"),
        ),
    ),
    Point(
        "5.4",
        "发出的请求",
        FIXED,
        "base URL 去掉末尾斜杠后，加上 /chat/completions",
        "URL、method、header（key 只比较位置）与 body（按 JSON 值）逐项比较；key 为空时不比较",
    ),
    Point(
        "5.4",
        "不合格的 base URL",
        FIXED,
        "``base_url`` without trailing slashes + ``/chat/completions``; must be absolute http(s).",
        "构造时就拒绝（给定的 __init__ 调用 chat_completions_url()）",
        source="starter pi_course/transport.py chat_completions_url() 的 docstring",
    ),
    Point(
        "5.4",
        "拒绝 base URL 时抛出的异常",
        OPEN,
        "用 new URL() 检查最终 endpoint。",
        "抛出哪一种异常不比较（new URL() 抛的是 TypeError，httpx 的是 InvalidURL）",
        examples=(
            Edit(
                _TRANSPORT,
                'raise ValueError(\n            f"base_url must be',
                'raise TypeError(\n            f"base_url must be',
            ),
        ),
    ),
    Point(
        "5.4",
        "key 为空时错误原样",
        FIXED,
        "An empty key is no key (``connect()`` without ``PI_COURSE_API_KEY``, for a provider that needs "
        "none): there is nothing to hide, and the message stays as it is.",
        "api_key 为空字符串时，错误里不出现 [redacted]（没有什么要替换）；"
        "本章：「transport 在错误离开这一层之前，把 key 替换成 [redacted]」，没有 key 就没有可替换的",
        source="starter pi_course/transport.py _Secret.redact() 的 docstring",
    ),
    Point(
        "5.4",
        "离开 transport 的错误里没有 key",
        FIXED,
        "transport 在错误离开这一层之前，把 key 替换成 [redacted]。",
        "错误的文字、args、__cause__/__context__ 链里都不能有 key；5.3 的比较不看这一项（它属于 5.4）",
    ),
)


def open_points(file: str | None = None) -> tuple[Point, ...]:
    """The open points, or those with edits of one reference lesson file."""
    return tuple(
        point
        for point in POINTS
        if point.status == OPEN and (file is None or any(edit.file == file for edit in point.edits))
    )


def point(name: str) -> Point:
    """The point called ``name`` (KeyError for any other)."""
    for candidate in POINTS:
        if candidate.name == name:
            return candidate
    raise KeyError(name)


def markdown_table() -> str:
    """The open points as LEARNING.md carries them: where the chapter leaves a choice, what check accepts."""
    lines = ["| 步骤 | 地方 | 原文 | check 接受 |", "|---|---|---|---|"]
    for each in open_points():
        cells = (each.step, each.name, each.cited, each.how)
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return "\n".join(lines)


TABLE_START = "<!-- BEGIN open points: generated from pi_course/chapter/contract.py (markdown_table) -->\n"
TABLE_END = "\n<!-- END open points -->"
