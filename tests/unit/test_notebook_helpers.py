"""The notebooks' helpers: practice stages, 预期输出, the 05-5 experiment, the diagrams.

The slow tests run the notebooks of real practice copies (fresh, with 5.1 done, with 5.1-5.3
done) the way a learner's Run All does, and assert that no cell ends in a traceback. Completed
copies with learners' own code are run under nbval-lax by test_learners.py.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from pi_course import FinishChunk, OpenAICompatibleModel, TextChunk, ToolChunk, fixed_transport
from pi_course.chapter.fixtures import DIAGNOSTIC_4_2_CHUNKS, mainline_context
from pi_course.course.practice import make_starter
from pi_course.notebook import breakit, lesson
from pi_course.notebook.diagrams import overview, sse_layers
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


@pytest.mark.slow
def test_a_scratch_copy_fails_the_4_2_test_and_leaves_the_tree_alone() -> None:
    from pi_course.course.check import steps_for
    from pi_course.course.testrun import run_tests

    scratch = breakit.ScratchCopy(ROOT)
    try:
        report = run_tests(steps_for("5.2"), path=scratch.path)
        assert report.passed.get("5.2") == 2
        assert scratch.fired
    finally:
        scratch.remove()
    assert not scratch.path.exists()


def test_diagrams_are_themed_svg_with_a_text_form() -> None:
    for diagram in (overview(), sse_layers()):
        svg = diagram._repr_html_()
        assert svg.startswith("<svg") and "var(--jp-ui-font-color1" in svg
        assert "#fff3b0" not in svg
        assert "ProviderChunk" in repr(diagram)
    assert "返回方向" in overview().svg and "发送方向" in overview().svg


# --- practice copies, executed -------------------------------------------------------------------


def _practice_copy(tmp_path: Path, done: set[str]) -> Path:
    target = tmp_path / "copy"
    subprocess.run(
        [sys.executable, "-m", "pi_course", "practice", "05", str(target)], check=True, capture_output=True
    )
    pending = {"5.1", "5.2", "5.3", "5.4"} - done
    for name in ("__init__.py", "protocol.py", "outbound.py", "adapter.py", "sse.py", "transport.py"):
        source = (ROOT / "pi_course" / name).read_text(encoding="utf-8")
        text = make_starter(source, pending)
        if name == "__init__.py":
            text = text.replace('EDITION = "reference"', 'EDITION = "practice"', 1)
        (target / "pi_course" / name).write_text(text, encoding="utf-8")
    return target


def _run(notebook: Path) -> list[str]:
    """Run All like JupyterLab; return every output as text (an error output fails the run)."""
    data = nbformat.read(notebook, as_version=4)
    NotebookClient(
        data, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(notebook.parent)}}
    ).execute()
    texts = []
    for cell in data.cells:
        for output in cell.get("outputs", []):
            assert output["output_type"] != "error", (
                f"{notebook.name}: {output.get('ename')}: {output.get('evalue')}"
            )
            texts.append(output.get("text", "") + output.get("data", {}).get("text/plain", ""))
    return texts


def _nbval_lax(copy: Path) -> None:
    notebooks = sorted(str(path) for path in (copy / "notebooks").glob("05-[0-7]-*.ipynb"))
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "--nbval-lax", "--nbval-current-env", "-p", "no:randomly",
         "-p", "no:cacheprovider", "-o", "addopts=", *notebooks],
        cwd=copy, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-3000:]


@pytest.mark.slow
def test_a_fresh_copy_runs_every_notebook_and_shows_what_is_missing(tmp_path: Path) -> None:
    copy = _practice_copy(tmp_path, done=set())
    _nbval_lax(copy)
    for name in ("05-0-overview.ipynb", "05-2-state-machine.ipynb"):
        texts = "\n".join(_run(copy / "notebooks" / name))
        assert "需要先完成实践 5.1" in texts and "预期输出：\n" in texts, name
    overview = "\n".join(_run(copy / "notebooks" / "05-0-overview.ipynb"))
    assert "toolcall_end   #0 read" in overview  # the reference's output, shown as 预期输出


@pytest.mark.slow
def test_with_5_1_done_the_state_machine_notebook_names_5_2(tmp_path: Path) -> None:
    copy = _practice_copy(tmp_path, done={"5.1"})
    texts = "\n".join(_run(copy / "notebooks" / "05-2-state-machine.ipynb"))
    assert "需要先完成实践 5.2" in texts and "需要先完成实践 5.1" not in texts
    assert "0/3" in texts
    outbound = "\n".join(_run(copy / "notebooks" / "05-1-outbound.ipynb"))
    assert "需要先完成" not in outbound and "出站转换：1/1 通过" in outbound


@pytest.mark.slow
@pytest.mark.parametrize("done", [{"5.1", "5.2"}, {"5.1", "5.2", "5.3"}], ids=["5.3-pending", "5.4-starter"])
def test_the_networked_notebooks_run_at_the_later_stages(tmp_path: Path, done: set[str]) -> None:
    copy = _practice_copy(tmp_path, done=done)
    for name in ("05-0-overview.ipynb", "05-4-http-and-redaction.ipynb"):
        texts = "\n".join(_run(copy / "notebooks" / name))
        if "5.3" not in done:
            assert "需要先完成实践 5.3" in texts, name
