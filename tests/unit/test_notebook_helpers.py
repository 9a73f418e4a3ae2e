"""The notebooks' helpers: practice stages, 预期输出, the 05-5 experiment, the diagrams.

Practice copies at every stage, built from independent learners' code, run their notebooks in
tests/workflow/test_stages.py (slow).
"""

from __future__ import annotations

import base64
import re
import struct
from pathlib import Path

import nbformat
import pytest

import pi_course
import pi_course.sse
from pi_course import FinishChunk, OpenAICompatibleModel, TextChunk, ToolChunk, fixed_transport
from pi_course.chapter.fixtures import DIAGNOSTIC_4_2_CHUNKS, mainline_context
from pi_course.chapter.steps import STEP_NUMBERS
from pi_course.notebook import breakit, lesson, stages
from pi_course.notebook.diagrams import SOURCE_KEY, overview, sse_layers, with_source_digest
from pi_course.notebook.display import chunk_table
from pi_course.protocol import AssistantMessage, ErrorEvent, StartEvent, assistant_message

ROOT = Path(__file__).parents[2]


def test_missing_step_names_the_stub_or_the_first_red_light() -> None:
    assert lesson.missing_step(NotImplementedError("Lab 5.3 SSE 与 unknown 边界 尚未实现")) == "5.3"
    assert lesson.missing_step(ImportError("cannot import name 'ToolDefinition' from 'pi_course'")) == "5.1"
    assert (
        lesson.missing_step(TypeError("AgentContext.__init__() got an unexpected keyword argument 'tools'"))
        == "5.1"
    )
    assert lesson.missing_step(NotImplementedError("TODO: token → TextChunk")) is None
    assert lesson.missing_step(KeyError("Lab 5.2 尚未实现")) is None


def _error_events(message: str) -> list[StartEvent | ErrorEvent]:
    partial = assistant_message([], timestamp=1)
    error = AssistantMessage((), "p", "m", partial.usage, "error", 1, message)
    return [StartEvent(partial), ErrorEvent("error", error)]


def test_a_stream_ending_on_a_stub_names_the_step(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(lesson.StepNotDone) as raised:
        lesson.show_events(_error_events("Lab 5.3 SSE 与 unknown 边界 尚未实现"))
    assert lesson.missing_step(raised.value) == "5.3"
    lesson.show_events(_error_events("socket reset by peer"))
    assert capsys.readouterr().out == "start\nerror          error: socket reset by peer\n"
    assert lesson.final_message(_error_events("x")).error_message == "x"


def test_expected_outputs_are_kept_in_metadata_and_found_by_source(tmp_path: Path) -> None:
    notebook = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("print('hi')")
    cell.outputs = [
        nbformat.v4.new_output("stream", name="stdout", text="hi\n"),
        nbformat.v4.new_output("stream", name="stderr", text="noise\n"),
        nbformat.v4.new_output(
            "display_data", data={"text/plain": "T", "text/html": "<b>T</b>", "image/png": ""}
        ),
    ]
    notebook.cells = [cell, nbformat.v4.new_code_cell("x = 1")]
    lesson.store_expected(notebook)
    assert cell.metadata["pi_course"]["expected"] == [
        {"text/plain": "hi\n"},
        {"text/plain": "T", "text/html": "<b>T</b>"},
    ]
    assert "pi_course" not in notebook.cells[1].metadata
    cell.outputs = []
    nbformat.write(notebook, tmp_path / "a.ipynb")
    found = lesson.find_expected("print('hi')\n", tmp_path)
    assert found is not None
    bundle = lesson.expected_bundle(found)
    assert bundle["text/plain"] == "预期输出：\nhi\nT"
    assert "<b>T</b>" in bundle["text/html"] and "预期输出" in bundle["text/html"]
    assert lesson.find_expected("print('edited')", tmp_path) is None
    assert "找不到" in lesson.expected_bundle(None)["text/plain"]


def test_chunk_table_numbers_the_fixture() -> None:
    table = chunk_table(
        [TextChunk("先读"), ToolChunk(4, "call-read", "read", '{"path":'), FinishChunk("stop")]
    )
    assert table.splitlines() == [
        "chunk 1  text   delta='先读'",
        "chunk 2  tool   index=4 id='call-read' name='read' arguments_delta='{\"path\":'",
        "chunk 3  finish reason='stop' usage=None",
    ]


@pytest.mark.anyio
async def test_the_experiment_confuses_the_indexes_of_any_adapter_and_then_restores_it() -> None:
    def model() -> OpenAICompatibleModel:
        transport = breakit.Watched(fixed_transport(DIAGNOSTIC_4_2_CHUNKS))
        return OpenAICompatibleModel(provider="p", model="m", transport=transport)

    with breakit.confused_indexes() as experiment:
        broken = [event async for event in model().stream(mainline_context())]
    assert experiment.fired
    first = broken[1]  # an adapter that appends first names slot 4; one that assigns content[4] fails at once
    assert getattr(first, "content_index", None) == 4 or first.type == "error"
    assert broken[-1].type == "error"
    assert "index out of range" in (lesson.final_message(broken).error_message or "")
    healthy = [event async for event in model().stream(mainline_context())]
    assert healthy[-1].type == "done"
    assert len([1, 2]) == 2  # the real len is back


def png_source_digest(png: bytes) -> str | None:
    """The SVG digest a PNG written by ``with_source_digest`` carries, if any."""
    position = 8
    while position + 8 <= len(png):
        length, kind = struct.unpack(">I4s", png[position : position + 8])
        body = png[position + 8 : position + 8 + length]
        if kind == b"tEXt" and body.startswith(SOURCE_KEY + b"\0"):
            return body[len(SOURCE_KEY) + 1 :].decode("ascii")
        position += 12 + length
    return None


@pytest.mark.slow
def test_a_scratch_copy_fails_the_4_2_test_and_leaves_the_tree_alone() -> None:
    from pi_course.chapter.steps import step
    from pi_course.course.checker.testrun import run_tests

    scratch = breakit.ScratchCopy(ROOT)
    try:
        report = run_tests((step("5.2"),), path=scratch.path)
        assert report.passed.get("5.2") == 2
        assert scratch.fired
    finally:
        scratch.remove()
    assert not scratch.path.exists()


def test_diagrams_are_images_an_untrusted_notebook_draws_with_a_text_form() -> None:
    for diagram in (overview(), sse_layers()):
        data, metadata = diagram._repr_mimebundle_()
        assert "text/html" not in data  # JupyterLab strips inline SVG from untrusted HTML
        # Trusted JupyterLab would prefer SVG and draw it unscaled, cut off in a narrow output area.
        assert "image/svg+xml" not in data
        assert diagram.svg.startswith("<svg") and "#fff3b0" not in diagram.svg
        png = base64.b64decode(data["image/png"])
        assert png.startswith(b"\x89PNG\r\n\x1a\n")
        assert png_source_digest(png) == diagram.svg_digest, "stale PNG: run tools/render_diagrams.py"
        assert metadata == {"image/png": {"width": diagram.width}}
        assert "ProviderChunk" in repr(diagram) and data["text/plain"] == repr(diagram)
    assert "返回方向" in overview().svg and "发送方向" in overview().svg


def test_a_png_text_chunk_round_trips_and_an_edited_svg_is_stale() -> None:
    png = overview().png_path.read_bytes()
    assert png_source_digest(with_source_digest(png, "ab" * 32)) == "ab" * 32  # the newest chunk comes first
    plain = b"\x89PNG\r\n\x1a\n" + png[8:33]  # the header chunk alone
    assert png_source_digest(plain) is None
    assert png_source_digest(with_source_digest(plain, "cd" * 32)) == "cd" * 32


# --- which step is missing or broken: the probes -------------------------------------------------
# Practice copies at every stage, with independent learners' code, run in tests/workflow/test_stages.py.


def test_every_probe_passes_on_the_reference() -> None:
    assert [stages.probe(step) for step in STEP_NUMBERS] == [None, None, None, None]
    assert stages.first_problem() is None


def test_a_stub_is_a_missing_step_named_by_its_own_message(monkeypatch: pytest.MonkeyPatch) -> None:
    def stub(self: object, chunk: bytes, *, final: bool = False) -> list[object]:
        raise NotImplementedError("Lab 5.3 SSE 与 unknown 边界 尚未实现")

    monkeypatch.setattr(pi_course.sse.SSEDecoder, "feed", stub)
    found = stages.first_problem()
    assert found == stages.Problem("5.3", "missing", "Lab 5.3 SSE 与 unknown 边界 尚未实现")
    assert lesson._problem_line(found).startswith(
        "需要先完成实践 5.3（SSE 与 unknown 边界）：pi_course/sse.py"
    )


def test_the_5_4_starter_is_missing_with_what_it_lacks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        pi_course.OpenAICompatibleTransport, "request_body", lambda self, request: dict(request)
    )
    found = stages.probe("5.4")
    assert found is not None and found.kind == "missing" and "stream: true" in found.why
    assert lesson._problem_line(found) == (
        "需要先完成实践 5.4（fetch transport 与密钥脱敏）：还是初版：请求体里没有 stream: true 和 stream_options。"
    )


@pytest.mark.anyio
async def test_an_adapter_that_confuses_the_indexes_is_a_broken_5_2(monkeypatch: pytest.MonkeyPatch) -> None:
    original = pi_course.fixed_transport
    monkeypatch.setattr(pi_course, "fixed_transport", lambda chunks: breakit.Watched(original(chunks)))
    with breakit.confused_indexes():
        found = stages.probe("5.2")
    assert found is not None and (found.step, found.kind) == ("5.2", "broken")
    assert "list assignment index out of range" in found.why
    line = lesson._problem_line(found)
    assert line.startswith("实践 5.2（normalized transport 状态机）的代码还有问题：4/2 fixture 以 error 结束")
    monkeypatch.undo()
    assert stages.probe("5.2") is None


def test_wrong_roles_are_a_broken_5_1_and_require_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pi_course, "to_provider_messages", lambda context: [{"role": "user"}])
    with pytest.raises(lesson.StepProblem) as raised:
        lesson.require("5.3")
    assert raised.value.problem.step == "5.1" and "['user']" in str(raised.value)
    lesson.require("5.1", allow_broken=True)  # a broken step does not stop 05-5


def test_reveal_shows_the_answer_only_after_a_prediction(capsys: pytest.CaptureFixture[str]) -> None:
    assert lesson.reveal(..., 4) is None  # nothing for a cell's Out[]
    unanswered = capsys.readouterr().out
    assert unanswered.startswith("先把 ... 换成你的预测") and "4" not in unanswered
    lesson.reveal({"b", "a"}, ["a", "b"])
    lesson.reveal(3, 3)
    lesson.reveal("x", "y")
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].startswith("你的预测：{") and printed[1:3] == ["实际结果：['a', 'b']", "✓ 一样"]
    assert printed[3:6] == ["你的预测：3", "实际结果：3", "✓ 一样"]
    assert printed[-1].startswith("✗ 不一样")


def test_reveal_asks_once_per_cell_run(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    class Info:
        raw_cell = "reveal(a, 1)\nreveal(b, 2)"

    monkeypatch.setattr(lesson, "_session", lesson._Session())  # a kernel's session, undone after
    for _ in range(2):  # the same cell, run twice: one line each time
        lesson._before(Info())
        lesson.reveal(..., 1)
        lesson.reveal(..., 2)
        assert capsys.readouterr().out.count("先把 ... 换成你的预测") == 1


def test_adapter_state_finds_the_tool_slot_line_as_written_broken_and_restored(tmp_path: Path) -> None:
    reference = (ROOT / "pi_course" / "adapter.py").read_text(encoding="utf-8")
    as_written = breakit.adapter_state(ROOT / "pi_course" / "adapter.py")
    assert as_written.state == "as-written" and "len(content)" in as_written.text
    assert (
        "练习副本里的这一本" in as_written.describe()
    )  # the reference (the book) is not the learner's to break
    assert as_written.describe(restoring=True).startswith("参考实现的文件没有动过")
    edited = tmp_path / "adapter.py"
    lines = reference.splitlines(keepends=True)
    assert as_written.line is not None
    lines[as_written.line - 1] = lines[as_written.line - 1].replace("len(content)", "chunk.index")
    edited.write_text("".join(lines), encoding="utf-8")
    broken = breakit.adapter_state(edited)
    assert (broken.state, broken.line) == ("broken", as_written.line)
    assert broken.describe(restoring=True).startswith("还是改坏的：")
    edited.write_text(reference, encoding="utf-8")  # put back after this kernel saw it broken
    assert (
        breakit.adapter_state(edited).describe(restoring=True).startswith("已恢复：pi_course/adapter.py 第")
    )
    edited.write_text('raise NotImplementedError("Lab 5.2")\n', encoding="utf-8")
    assert breakit.adapter_state(edited).state == "unknown"
    assert breakit.adapter_state(tmp_path / "missing.py").state == "unknown"


def test_probes_run_without_a_thread_inside_a_running_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pyodide cannot start threads and the kernel's loop is running: the probes need neither."""
    import asyncio
    import threading

    def no_thread(*args: object, **kwargs: object) -> None:
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(threading.Thread, "start", no_thread)

    async def in_a_cell() -> object:
        return stages.first_problem()

    assert asyncio.run(in_a_cell()) is None
    assert stages.first_problem() is None


def test_a_probe_waiting_on_something_outside_the_fixture_is_broken_not_a_hang() -> None:
    import asyncio

    async def waits_forever() -> stages.Problem | None:
        await asyncio.get_event_loop_policy().new_event_loop().create_future()
        return None

    found = stages._run_async(waits_forever)
    assert found is not None and found.kind == "broken" and "永远不会到来" in found.why


def test_in_a_kernel_an_unwritten_prediction_stops_the_cell_before_the_answer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(lesson, "_session", lesson._Session(handler=True))
    with pytest.raises(lesson.PredictionNeeded, match=re.escape("先把 ... 换成你的预测")):
        lesson.reveal(..., "error")


def test_a_name_an_earlier_cell_never_made_is_blamed_on_the_step_that_stopped_it(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """05-2 in a fresh copy: the setup cell stops on 5.1's starter, so `replay` is never defined.
    The line after says what is missing in the learner's files, not that an earlier cell failed."""
    monkeypatch.setattr(lesson, "_session", lesson._Session())
    monkeypatch.setattr(lesson, "find_cell", lambda *args, **kwargs: None)

    def raised(error: BaseException) -> str:
        lesson._handler(None, type(error), error, None)
        return capsys.readouterr().out.splitlines()[0]

    stub = ImportError("cannot import name 'ToolDefinition' from 'pi_course'")
    first = raised(stub)
    assert (
        first
        == "需要先完成实践 5.1（出站转换）：pi_course/protocol.py、pi_course/outbound.py 里还是占位实现。"
    )
    later = raised(NameError("name 'replay' is not defined", name="replay"))
    assert later == first[:-1] + "；上面定义 replay 的那一格也是因此停下的。", later
    assert "前面的格子" not in later
    assert raised(KeyError("mainline")).endswith("上面算出这一格要用的结果的那一格也是因此停下的。")

    monkeypatch.setattr(lesson, "_session", lesson._Session())  # a copy whose 5.2 is written, but wrong
    broken = stages.Problem("5.2", "broken", "4/2 fixture 以 error 结束")
    with pytest.raises(lesson.StepProblem) as stopped:
        raise lesson.StepProblem(broken)
    raised(stopped.value)
    later = raised(NameError("name 'diagnostic' is not defined", name="diagnostic"))
    assert later == (
        "实践 5.2（normalized transport 状态机）的代码还有问题：4/2 fixture 以 error 结束；"
        "上面定义 diagnostic 的那一格也是因此停下的。"
    ), later
    assert "占位实现" not in later
