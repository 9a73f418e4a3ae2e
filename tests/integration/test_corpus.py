"""Real providers' recorded streams through the course's reader, at every chunking, in both modes.

``pi_course/provider/recordings/index.json`` is the expectation: for each ``.sse`` file it says
where the bytes come from and what ``OpenAICompatibleTransport`` + ``OpenAICompatibleModel`` make
of them with ``strict=True`` (the chapter's reader) and ``strict=False``. The official openai-python
client reading the same bytes is the oracle for every stream both accept.
"""

from __future__ import annotations

import json
import logging
import random
import re
from collections import Counter
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from openai.lib.streaming.chat import ChatCompletionStreamState

from pi_course import (
    AgentContext,
    AssistantMessage,
    FinishChunk,
    OpenAICompatibleModel,
    OpenAICompatibleTransport,
    TextChunk,
    TextContent,
    ToolCall,
    ToolChunk,
    Usage,
)
from pi_course.payload_reading import SetAside
from pi_course.provider import corpus

pytestmark = pytest.mark.anyio

RECORDINGS_DIR = Path(__file__).parents[2] / "pi_course" / "provider" / "recordings"
INDEX = json.loads((RECORDINGS_DIR / "index.json").read_text(encoding="utf-8"))
RECORDINGS: dict[str, dict[str, Any]] = {entry["name"]: entry for entry in INDEX["recordings"]}
MODES = {"strict": True, "non_strict": False}
KEY = "sk-corpus-replay"  # long enough that redaction cannot hit ordinary words in error messages
FIELD = re.compile(r"Invalid provider chunk: (\S+)")


def raw(name: str) -> bytes:
    return (RECORDINGS_DIR / RECORDINGS[name]["file"]).read_bytes()


# --- chunkings: a network read carries no protocol meaning ---------------------------------------


def whole(data: bytes) -> list[bytes]:
    return [data]


def per_line(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True)


def random_sizes(data: bytes) -> list[bytes]:
    rng = random.Random(len(data))  # fixed per recording, so a failure reproduces
    reads, start = [], 0
    while start < len(data):
        size = rng.randint(1, 97)
        reads.append(data[start : start + size])
        start += size
    return reads


def one_byte(data: bytes) -> list[bytes]:
    return [data[i : i + 1] for i in range(len(data))]


CHUNKINGS: dict[str, Callable[[bytes], list[bytes]]] = {
    "whole": whole,
    "per-line": per_line,
    "random": random_sizes,
    "one-byte": one_byte,
}


class Reads(httpx.AsyncByteStream):
    def __init__(self, reads: list[bytes]) -> None:
        self.reads = reads

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for read in self.reads:
            yield read


def replaying(reads: list[bytes]) -> httpx.AsyncClient:
    def respond(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=Reads(reads))

    return httpx.AsyncClient(transport=httpx.MockTransport(respond))


async def read_with_pi_course(reads: list[bytes], strict: bool) -> tuple[list[str], AssistantMessage]:
    async with replaying(reads) as client:
        transport = OpenAICompatibleTransport(
            base_url="http://replay.invalid/v1", api_key=KEY, client=client, strict=strict
        )
        stream = OpenAICompatibleModel(provider="replay", model="recorded", transport=transport).stream(
            AgentContext(())
        )
        events = [event.type async for event in stream]
        return events, await stream.result()


def outcome(message: AssistantMessage) -> dict[str, Any]:
    """The same shape as the index's expectations."""
    text = "".join(block.text for block in message.content if isinstance(block, TextContent))
    if message.stop_reason in ("stop", "length", "toolUse"):
        calls = [
            {"id": call.id, "name": call.name, "arguments": call.raw_arguments}
            for call in message.content
            if isinstance(call, ToolCall)
        ]
        usage = message.usage
        return {
            "outcome": "accepted",
            "stop_reason": message.stop_reason,
            "text": text,
            "tool_calls": calls,
            "usage": {"input": usage.input, "output": usage.output, "total_tokens": usage.total_tokens},
        }
    error = message.error_message or ""
    named = FIELD.match(error)
    result: dict[str, Any] = {"outcome": "rejected" if named else "error", "error": error}
    if named:
        result["field"] = named.group(1)
    result["partial_text"] = text
    usage = message.usage  # what the provider sent before the error stays on the message
    result["usage"] = {"input": usage.input, "output": usage.output, "total_tokens": usage.total_tokens}
    return result


def without_rule(expected: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in expected.items() if key != "rule"}


# --- the index itself ----------------------------------------------------------------------------


def test_the_index_lists_every_recording_and_enough_providers() -> None:
    files = sorted(path.name for path in RECORDINGS_DIR.glob("*.sse"))
    assert files == sorted(entry["file"] for entry in RECORDINGS.values())
    providers = {entry["provider"] for entry in RECORDINGS.values() if entry["provider"]}
    assert len(RECORDINGS) >= 25 and len(providers) >= 8
    assert {"OpenAI", "Azure OpenAI", "DeepSeek", "DashScope (Qwen)", "Ollama", "vLLM", "OpenRouter", "Groq",
            "Mistral"} <= providers  # fmt: skip


@pytest.mark.parametrize("name", list(RECORDINGS))
def test_every_recording_names_its_source_and_how_its_bytes_were_made(name: str) -> None:
    entry = RECORDINGS[name]
    source = entry["source"]
    assert "url" in source or {"repository", "path", "commit"} <= set(source)
    if "commit" in source:
        assert re.fullmatch(r"[0-9a-f]{40}", source["commit"])
    assert entry["kind"] in corpus.KINDS
    framing = entry["bytes"].split(":")[0]
    assert framing in ("verbatim", "verbatim events", "re-encoded", "derived"), entry["bytes"]
    # A label claims no more than the stream is.
    assert (framing == "derived") == (entry["kind"] == "derived")
    if "trimmed" in entry:
        assert re.match(r"\d+ events dropped: ", entry["trimmed"]) and not entry["bytes"].startswith(
            "verbatim: the whole"
        )
    if framing == "verbatim events":
        assert "trimmed" in entry
    assert "as the provider sent it" not in entry["bytes"]
    assert ("elided" in entry) == (entry["kind"] == "documentation-sample")
    assert (entry["provider"] is None) == (entry["kind"] == "hand-written-fixture")
    assert entry["exercises"] and set(entry["expected"]) == set(MODES)
    assert len(raw(name)) < 16_000  # small: long streams are trimmed, and the index says so
    for expected in entry["expected"].values():
        if expected["outcome"] != "accepted":
            assert expected["rule"], "every rejection and error quotes the chapter's rule behind it"


# --- replay ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("name", list(RECORDINGS))
async def test_replay_at_every_chunking_gives_the_indexed_outcome(name: str, mode: str) -> None:
    expected = without_rule(RECORDINGS[name]["expected"][mode])
    data = raw(name)
    for chunking, split in CHUNKINGS.items():
        reads = split(data)
        assert b"".join(reads) == data
        events, message = await read_with_pi_course(reads, MODES[mode])
        assert events[0] == "start" and [e in ("done", "error") for e in events].count(True) == 1
        assert events[-1] == ("done" if expected["outcome"] == "accepted" else "error")
        assert outcome(message) == expected, f"{name} ({mode}, {chunking} reads)"
        if expected["outcome"] == "rejected":
            assert message.error_message.startswith(f"Invalid provider chunk: {expected['field']}")  # type: ignore[union-attr]


@pytest.mark.parametrize("name", list(RECORDINGS))
def test_strict_false_only_skips_payloads_that_carry_nothing(name: str) -> None:
    strict, lenient = (RECORDINGS[name]["expected"][mode] for mode in MODES)
    if strict["outcome"] == "accepted":
        assert lenient == strict
    if lenient["outcome"] != "accepted":
        assert strict["outcome"] != "accepted"


# --- what the chapter's rules say, case by case (written by hand, not read from the index) ----------

CHAPTER_RULES: dict[str, dict[str, tuple[str, str]]] = {
    # 普通流只接受一个 choice: n=3 sends choice 1 and 2 in their own payloads; real-provider mode
    # reads choice 0 (as openai-python's choices[0]) and sets the others aside.
    "openai-n3-choices": {
        "strict": ("rejected", "choices[0].index"),
        "non_strict": ("accepted", "stop"),
    },
    # index 必须是非负安全整数: Mistral's whole tool calls have no index at all; real-provider
    # mode gives each whole call its position.
    "mistral-tool-call": {
        "strict": ("rejected", "choices[0].delta.tool_calls[0].index"),
        "non_strict": ("accepted", "toolUse"),
    },
    # typeof content === "string": Magistral streams content as an array of parts; real-provider
    # mode reads its text parts.
    "mistral-thinking": {
        "strict": ("rejected", "choices[0].delta.content"),
        "non_strict": ("accepted", "stop"),
    },
    # 空 choices 专门承载尾随 usage: Azure's prompt filter payload carries none; strict=False skips it.
    "azure-prompt-filter": {"strict": ("rejected", "choices"), "non_strict": ("accepted", "stop")},
    "azure-async-filter": {"strict": ("rejected", "choices"), "non_strict": ("accepted", "stop")},
    "openai-moderation": {"strict": ("rejected", "choices"), "non_strict": ("accepted", "stop")},
    # content_filter is not one of stop/length/tool_calls: real-provider mode reads the finish
    # reason of a choice without delta as what OpenAI documents it to be, the filter stopping the answer.
    "azure-content-filter": {
        "strict": ("rejected", "choices"),
        "non_strict": ("error", ""),
    },
    # 整个流没有出现结束原因时 … error 终态, keeping the partial.
    "openai-text-cut": {"strict": ("error", ""), "non_strict": ("error", "")},
}


@pytest.mark.parametrize("name", list(CHAPTER_RULES))
def test_the_index_agrees_with_the_chapters_rules(name: str) -> None:
    for mode, (kind, detail) in CHAPTER_RULES[name].items():
        expected = RECORDINGS[name]["expected"][mode]
        assert expected["outcome"] == kind, (name, mode)
        if kind == "rejected":
            assert expected["field"] == detail
        elif kind == "accepted":
            assert expected["stop_reason"] == detail


def test_provider_errors_and_refusals_keep_their_text_and_the_partial() -> None:
    refusal = RECORDINGS["openai-refusal"]["expected"]["strict"]
    assert (
        refusal["outcome"] == "error" and "I'm sorry, I can't assist with that request." in refusal["error"]
    )
    groq = RECORDINGS["groq-error-after-text"]["expected"]["strict"]
    assert (groq["error"], groq["partial_text"]) == (
        "Tool choice is required, but model did not call a tool",
        "maybe",
    )
    cut = RECORDINGS["openai-text-cut"]["expected"]["strict"]
    assert cut["error"] == "Provider stream ended without a finish chunk" and cut["partial_text"]
    # The usage payload came before the moderation payload: skipping the latter keeps it.
    assert RECORDINGS["openai-moderation"]["expected"]["non_strict"]["usage"] == {
        "input": 13, "output": 11, "total_tokens": 24,
    }  # fmt: skip


def reasoning_of(name: str, field: str) -> str:
    """Every ``delta.<field>`` string of a recording, joined."""
    pieces = []
    for line in raw(name).decode().split("\n"):
        if line.startswith("data: {"):
            payload = json.loads(line[6:])
            for choice in payload.get("choices") or []:
                piece = (choice.get("delta") or {}).get(field)
                pieces.append(piece if isinstance(piece, str) else "")
    return "".join(pieces)


@pytest.mark.parametrize(
    ("name", "field"),
    [("deepseek-reasoning", "reasoning_content"), ("dashscope-reasoning", "reasoning_content"),
     ("groq-reasoning", "reasoning"), ("openrouter-reasoning", "reasoning")],
)  # fmt: skip
def test_reasoning_fields_are_ignored_not_mixed_into_the_text(name: str, field: str) -> None:
    thoughts = reasoning_of(name, field)
    expected = RECORDINGS[name]["expected"]["strict"]
    assert len(thoughts) > 10 and expected["outcome"] == "accepted" and expected["text"]
    assert thoughts[:12] not in expected["text"]


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize(
    ("name", "field"),
    [("deepseek-reasoning", "reasoning_content"), ("xai-tool-call", "reasoning_content"),
     ("groq-reasoning", "reasoning"), ("openrouter-reasoning", "reasoning")],
)  # fmt: skip
async def test_the_reasoning_text_is_kept_in_the_streams_record_of_what_was_set_aside(
    name: str, field: str, mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="pi_course.reading"):
        await read_with_pi_course(random_sizes(raw(name)), MODES[mode])
    [record] = [r for r in caplog.records if r.name == "pi_course.reading"]
    set_aside: SetAside = record.set_aside  # type: ignore[attr-defined]
    assert set_aside.texts[field] == reasoning_of(name, field) == set_aside.reasoning()
    assert f"{field}: {len(reasoning_of(name, field)):,} chars" in record.getMessage()


async def test_other_choices_and_thinking_parts_are_kept_with_their_text(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.INFO, logger="pi_course.reading"):
        await read_with_pi_course([raw("openai-n3-choices")], strict=False)
        await read_with_pi_course([raw("mistral-thinking")], strict=False)
    n3, mistral = (r.set_aside for r in caplog.records if r.name == "pi_course.reading")  # type: ignore[attr-defined]
    assert sorted(n3.texts) == ["choices[1]", "choices[2]"]
    assert json.loads(n3.texts["choices[1]"])["temperature"] == 61  # the second answer, whole
    assert mistral.reasoning().startswith("The user is asking for 2+2.")


# --- the oracle -------------------------------------------------------------------------------------


async def read_with_openai(data: bytes) -> dict[str, Any]:
    async with openai.AsyncOpenAI(
        base_url="http://replay.invalid/v1", api_key="x", http_client=replaying([data]), max_retries=0
    ) as client:
        stream = await client.chat.completions.create(model="recorded", messages=[], stream=True)
        state = ChatCompletionStreamState()
        async for chunk in stream:
            state.handle_chunk(chunk)
    completion = state.current_completion_snapshot
    choice = completion.choices[0]  # an n > 1 stream: the first choice, as a caller reads it
    usage = completion.usage
    stop = {"stop": "stop", "length": "length", "tool_calls": "toolUse"}
    return {
        "outcome": "accepted",
        "stop_reason": stop[choice.finish_reason],
        "text": choice.message.content or "",
        "tool_calls": [
            {"id": call.id, "name": call.function.name, "arguments": call.function.arguments}
            for call in choice.message.tool_calls or []
        ],
        "usage": {"input": 0, "output": 0, "total_tokens": 0}
        if usage is None
        else {
            "input": usage.prompt_tokens,
            "output": usage.completion_tokens,
            "total_tokens": usage.total_tokens,
        },
    }


@pytest.mark.filterwarnings("ignore::UserWarning")  # pydantic warns about Mistral's list content
@pytest.mark.parametrize("name", list(RECORDINGS))
async def test_the_openai_client_reads_the_same_bytes_as_the_index_says(name: str) -> None:
    entry = RECORDINGS[name]
    ours = entry["expected"]["non_strict"]
    try:
        theirs: dict[str, Any] | str = await read_with_openai(raw(name))
    except Exception as error:  # the oracle's own failures are part of what the index records
        theirs = f"raises {type(error).__name__}"
    if entry["openai_client"] == "agrees":
        assert theirs == ours
    else:  # the note explains a difference: there must be one
        assert theirs != ours, entry["openai_client"]


# --- what docs/real-providers.md and 05-7 say is rendered from the index ------------------------------------------

ROOT = RECORDINGS_DIR.parents[2]


TABLE_BEGIN = (
    "<!-- BEGIN corpus table: generated from recordings/index.json by tests/integration/test_corpus.py -->"
)
TABLE_END = "<!-- END corpus table -->"


def kinds_said(entries: list[dict[str, Any]]) -> str:
    """``3× SDK test-suite capture, 1× documentation sample (2 trimmed)``."""
    counts = Counter(entry["kind"] for entry in entries)
    trimmed = sum("trimmed" in entry for entry in entries)
    text = ", ".join(f"{counts[kind]}× {corpus.KIND_EN[kind]}" for kind in corpus.KINDS if counts[kind])
    return text + (f" ({trimmed} trimmed)" if trimmed else "")


def outcomes_said(entries: list[dict[str, Any]], mode: str) -> str:
    read = [e for e in entries if e["expected"][mode]["outcome"] == "accepted"]
    rejected = [e for e in entries if e["expected"][mode]["outcome"] == "rejected"]
    errors = [e for e in entries if e["expected"][mode]["outcome"] == "error"]
    parts = [f"read {len(read)}/{len(entries)}"]
    if rejected:
        fields = sorted({f"`{e['expected'][mode]['field']}`" for e in rejected})
        parts.append(f"rejected {len(rejected)} (at {', '.join(fields)})")
    if errors:
        parts.append(f"error {len(errors)} ({', '.join(e['name'] for e in errors)})")
    return "; ".join(parts)


def docs_table(index: dict[str, Any]) -> str:
    """docs/real-providers.md's block: the corpus in one sentence and the provider table."""
    recordings = index["recordings"]
    providers = {e["provider"] for e in recordings if e["provider"]}
    fixtures = [e["name"] for e in recordings if not e["provider"]]
    lines = [
        TABLE_BEGIN,
        "",
        f"The corpus holds {len(recordings)} streams from {len(providers)} providers and servers: "
        f"{kinds_said(recordings)}. `index.json` labels each one (`kind`, `bytes`, and `trimmed` or "
        "`elided` where that applies) with its source. A trimmed stream is not the whole body the provider "
        "sent; a documentation sample is not a capture; "
        + (
            f"{', '.join(f'`{n}`' for n in fixtures)} is a hand-written fixture and stands for no provider. "
            if fixtures
            else ""
        )
        + "The strict and `strict=False` columns are what `index.json` expects and "
        "`tests/integration/test_corpus.py` checks.",
        "",
        "| provider | `PI_COURSE_BASE_URL` | `PI_COURSE_MODEL` (example) | recordings | strict=True "
        "(the chapter's reader) | strict=False (`connect()`) | what the recordings show |",
        "|---|---|---|---|---|---|---|",
    ]
    for provider in index["providers"]:
        names = provider.get("recorded_as", [provider["name"]])
        entries = [e for e in recordings if e["provider"] in names]
        name = provider["name"] + (
            ": " + ", ".join(provider["recorded_as"]) if "recorded_as" in provider else ""
        )
        lines.append(
            f"| {name} | `{provider['base_url']}` | {provider['model']} | {len(entries)}: "
            f"{kinds_said(entries)} | {outcomes_said(entries, 'strict')} "
            f"| {outcomes_said(entries, 'non_strict')} | {provider['note']} |"
        )
    lines += ["", TABLE_END]
    return "\n".join(lines)


def test_the_docs_provider_table_is_the_one_rendered_from_the_index() -> None:
    """Regenerate it: the block between the markers is ``docs_table(INDEX)``, this file's."""
    readme = (ROOT / "docs" / "real-providers.md").read_text(encoding="utf-8")
    start, end = readme.find(TABLE_BEGIN), readme.find(TABLE_END)
    assert 0 <= start < end, "docs/real-providers.md has no corpus table between its markers"
    block = docs_table(INDEX)
    assert readme[start : end + len(TABLE_END)] == block
    for entry in RECORDINGS.values():  # every provider with a recording has its row
        if entry["provider"]:
            assert entry["provider"] in block
    assert "byte for byte" not in readme.split(TABLE_BEGIN)[0].split("## The local provider")[-1]


def test_05_7_shows_the_summary_rendered_from_the_index() -> None:
    notebook = json.loads((ROOT / "notebooks" / "05-7-real-providers.ipynb").read_text(encoding="utf-8"))
    cells = [cell for cell in notebook["cells"] if "print(summary())" in "".join(cell["source"])]
    assert len(cells) == 1, "05-7 prints pi_course.provider.corpus.summary() in one cell"
    printed = "".join("".join(output.get("text", "")) for output in cells[0]["outputs"])
    assert printed == corpus.summary(INDEX) + "\n"


# --- the reading rules on made-up streams, both modes, every chunking -----------------------------------


def payload(delta: object = None, finish: str | None = None, **choice: object) -> dict[str, Any]:
    one: dict[str, Any] = {"index": 0, "finish_reason": finish, **choice}
    if delta is not None:
        one["delta"] = delta
    return {"id": "c", "object": "chat.completion.chunk", "choices": [one]}


def body(*payloads: object) -> bytes:
    return "".join(f"data: {p if isinstance(p, str) else json.dumps(p)}\n\n" for p in payloads).encode()


USAGE = {"choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}}
CALL = {"id": "call-a", "type": "function", "function": {"name": "read", "arguments": '{"path":"a"}'}}
CALL_B = {"id": "call-b", "type": "function", "function": {"name": "read", "arguments": '{"path":"b"}'}}
PARTS = [{"type": "thinking", "thinking": [{"type": "text", "text": "hmm"}]}, {"type": "text", "text": "4"}]


def accepted(
    stop: str, text: str = "", calls: list[dict[str, str]] | None = None, usage: int = 0
) -> dict[str, Any]:
    counts = (
        {"input": 7, "output": 3, "total_tokens": 10}
        if usage
        else {"input": 0, "output": 0, "total_tokens": 0}
    )
    return {
        "outcome": "accepted",
        "stop_reason": stop,
        "text": text,
        "tool_calls": calls or [],
        "usage": counts,
    }


def rejected(field: str, text: str = "", usage: int = 0) -> dict[str, Any]:
    counts = (
        {"input": 7, "output": 3, "total_tokens": 10}
        if usage
        else {"input": 0, "output": 0, "total_tokens": 0}
    )
    return {"outcome": "rejected", "field": field, "partial_text": text, "usage": counts}


def call(entry: dict[str, Any]) -> dict[str, str]:
    return {"id": entry["id"], "name": entry["function"]["name"], "arguments": entry["function"]["arguments"]}


# name: (the stream, strict=True outcome, strict=False outcome, a text the strict=False error must contain)
READING_RULES: dict[str, tuple[bytes, dict[str, Any], dict[str, Any], str]] = {
    # A finish reason without delta is an empty delta; content_filter is then named, the partial kept.
    "finish-without-delta": (
        body(payload({"content": "Hi"}), payload(finish="stop"), USAGE, "[DONE]"),
        rejected("choices[0].delta", "Hi", usage=0),
        accepted("stop", "Hi", usage=1),
        "",
    ),
    "content-filter-stop": (
        body(payload({"content": "Hey"}), payload(finish="content_filter", content_filter_results={}), USAGE),
        rejected("choices[0].delta", "Hey"),
        {"outcome": "error", "partial_text": "Hey", "usage": accepted("stop", usage=1)["usage"]},
        "The provider's content filter stopped the answer",
    ),
    "content-filter-with-content": (
        body(payload({"content": "He"}), payload({"content": "y"}, "content_filter"), "[DONE]"),
        rejected("choices[0].finish_reason", "He"),  # the payload's own "y" goes with it
        {"outcome": "error", "partial_text": "Hey", "usage": accepted("stop")["usage"]},
        "content filter stopped the answer",
    ),
    # n > 1: choice 0 read, the others set aside, also when two choices share a payload.
    "other-choices-set-aside": (
        body(
            payload({"content": "A"}),
            {"choices": [{"index": 1, "delta": {"content": "B"}, "finish_reason": None}]},
            {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}, {"index": 1, "delta": {}}]},
            USAGE,
        ),
        rejected("choices[0].index", "A"),
        accepted("stop", "A", usage=1),
        "",
    ),
    # Whole tool calls without index take their position among the stream's calls.
    "whole-calls-without-index": (
        body(payload({"tool_calls": [CALL, CALL_B]}), payload(finish="tool_calls"), USAGE, "[DONE]"),
        rejected("choices[0].delta.tool_calls[0].index"),
        accepted("toolUse", calls=[call(CALL), call(CALL_B)], usage=1),
        "",
    ),
    "whole-calls-in-two-payloads": (
        body(payload({"tool_calls": [CALL]}), payload({"tool_calls": [CALL_B]}, "tool_calls"), USAGE),
        rejected("choices[0].delta.tool_calls[0].index"),
        accepted("toolUse", calls=[call(CALL), call(CALL_B)], usage=1),
        "",
    ),
    # Array content: the text parts joined, thinking parts ignored.
    "array-content": (
        body(
            payload({"content": PARTS}), payload({"content": [{"type": "text", "text": "2"}]}, "stop"), USAGE
        ),
        rejected("choices[0].delta.content"),
        accepted("stop", "42", usage=1),
        "",
    ),
    "array-content-unknown-part": (
        body(
            payload({"content": "a"}), payload({"content": [{"type": "image_url", "image_url": {}}]}), USAGE
        ),
        rejected("choices[0].delta.content", "a"),
        rejected("choices[0].delta.content[0].type", "a"),
        "image_url",
    ),
    # Skipped only when it carries nothing readable; content under an unknown key is named.
    "annotation-only-choice": (
        body(
            payload({"content": "ok"}), payload(content_filter_results={"hate": {}}), payload(finish="stop")
        ),
        rejected("choices[0].delta", "ok"),
        accepted("stop", "ok"),
        "",
    ),
    "content-under-an-unknown-key": (
        body(payload({"content": "a"}), payload(message={"content": "lost?"}), payload(finish="stop")),
        rejected("choices[0].delta", "a"),
        rejected("choices[0].message", "a"),
        "choices[0].message",
    ),
    # Usage the provider sent stays on a refusal and on an error.
    "refusal-keeps-usage": (
        body(payload({"refusal": "No."}), payload({}, "stop"), USAGE, "[DONE]"),
        {"outcome": "error", "partial_text": "", "usage": accepted("stop", usage=1)["usage"]},
        {"outcome": "error", "partial_text": "", "usage": accepted("stop", usage=1)["usage"]},
        "Provider refused: No.",
    ),
    "error-after-finish-keeps-usage": (
        body(payload({"content": "x"}, "length"), {**USAGE, "error": {"message": "Token limit reached"}}),
        {"outcome": "error", "partial_text": "x", "usage": accepted("stop", usage=1)["usage"]},
        {"outcome": "error", "partial_text": "x", "usage": accepted("stop", usage=1)["usage"]},
        "Token limit reached",
    ),
}


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("rule", list(READING_RULES))
async def test_each_reading_rule_at_every_chunking(rule: str, mode: str) -> None:
    data, strict, lenient, named = READING_RULES[rule]
    named = named if mode == "non_strict" or strict["outcome"] == "error" else ""
    expected = strict if mode == "strict" else lenient
    for chunking, split in CHUNKINGS.items():
        events, message = await read_with_pi_course(split(data), MODES[mode])
        assert [e in ("done", "error") for e in events].count(True) == 1
        got = {key: value for key, value in outcome(message).items() if key != "error"}
        assert got == expected, f"{rule} ({mode}, {chunking} reads): {message.error_message}"
        if expected["outcome"] != "accepted":
            assert named in (message.error_message or ""), message.error_message


async def test_strict_rejection_of_an_azure_annotation_says_strict_false_reads_it() -> None:
    for data in (
        raw("azure-prompt-filter"),
        body(payload({"content": "a"}), payload(content_filter_results={})),
    ):
        _, message = await read_with_pi_course([data], strict=True)
        assert "strict=False" in (message.error_message or "") and "reads it" in (message.error_message or "")


# --- never silent: one log record per stream ------------------------------------------------------------


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("deepseek-reasoning", r"reasoning_content: [\d,]+ chars"),
        ("groq-reasoning", r"reasoning: [\d,]+ chars"),
        ("perplexity-running-usage", r"citations: \d+"),
        ("openrouter-reasoning", r"reasoning: [\d,]+ chars"),
    ],
)
async def test_what_the_reader_ignores_is_logged_once_per_stream(
    name: str, expected: str, mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="pi_course"):
        await read_with_pi_course(per_line(raw(name)), MODES[mode])
    records = [r for r in caplog.records if r.name.startswith("pi_course")]
    assert len(records) == 1 and records[0].levelno == logging.INFO
    assert re.search(expected, records[0].getMessage()), records[0].getMessage()


async def test_thinking_parts_are_counted_and_sizes_use_thousands_separators(
    caplog: pytest.LogCaptureFixture,
) -> None:
    data = body(payload({"reasoning_content": "x" * 1234}), payload({"content": PARTS}, "stop"))
    with caplog.at_level(logging.INFO, logger="pi_course"):
        _, message = await read_with_pi_course([data], strict=False)
    assert message.stop_reason == "stop"
    [record] = [r for r in caplog.records if r.name.startswith("pi_course")]
    assert record.getMessage() == "the reader ignored reasoning_content: 1,234 chars; thinking parts: 1"


async def test_a_stream_with_nothing_ignored_logs_nothing(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="pi_course"):
        await read_with_pi_course([raw("openai-text")], strict=True)
    assert not [r for r in caplog.records if r.name.startswith("pi_course")]


def test_the_chunk_types_stay_the_chapters() -> None:
    # The given reading hands the lesson chapter-shaped payloads: the seam is still three chunk kinds.
    assert {TextChunk.type, ToolChunk.type, FinishChunk.type} == {"text", "tool", "finish"}
    assert Usage(1, 2, 3).total_tokens == 3


@pytest.mark.slow
def test_chat_shows_the_reasoning_a_provider_sent() -> None:
    import subprocess
    import sys

    reply = subprocess.run(
        [sys.executable, "-m", "pi_course", "chat", "--model", "recorded/deepseek-reasoning", "hi"],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
    )  # fmt: skip
    assert reply.returncode == 0, reply.stderr
    thoughts = reasoning_of("deepseek-reasoning", "reasoning_content")
    assert f"set aside, reasoning_content: {thoughts}\n" in reply.stdout
