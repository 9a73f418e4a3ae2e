"""Predict, then see: prediction gates, steppers that grow, 05-5's break view, 05-6's per-event check."""

from __future__ import annotations

import ast
import json
import re
import textwrap
from pathlib import Path

import pytest

from pi_course.chapter.fixtures import DIAGNOSTIC_4_2_CHUNKS
from pi_course.notebook import breakit, lesson
from pi_course.notebook.breakrun import as_it_is, break_run, expected_rows
from pi_course.notebook.widgets import SIZERS_END, PartialStepper, SSEBufferStepper

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).parents[2]
LEARNERS = ROOT / "tests" / "workflow" / "learners"


@pytest.mark.parametrize(
    ("source", "kind"),
    [
        ("guess = ...\npredict(guess)\nprint(1)", "unwritten"),
        ("guess = 3\npredict(guess)\nprint(1)", "written"),
        ("a = 1\nb = ...\npredict(a, b)", "unwritten"),
        ('guesses = {"x": ..., "y": 2}\npredict(guesses)', "unwritten"),
        ('guesses = {"x": 1, "y": 2}\npredict(guesses)', "written"),
        ("predicted = ...\nreveal(predicted, 3)", "exercise"),
        ("print('no question here')", "plain"),
        ("%timeit 1\npredict(...)", "plain"),  # IPython syntax: not parsed, not a course question
    ],
)
def test_a_cell_is_told_apart_by_its_code(source: str, kind: str) -> None:
    assert lesson.prediction_cell(source) == kind


def test_a_prediction_from_an_earlier_cell_is_read_from_the_kernel() -> None:
    later = "predict(my_slots)\nprint(1)"
    assert lesson.prediction_cell(later, {"my_slots": ...}) == "unwritten"
    assert lesson.prediction_cell(later, {"my_slots": 3}) == "written"
    assert lesson.prediction_cell(later, {}) == "unwritten"  # never run: the answer waits
    assert lesson.prediction_cell(later) == "unwritten"


def test_a_practice_copy_shows_no_expected_output_before_the_prediction(
    capsys: pytest.CaptureFixture[str],
) -> None:
    asked = "my_slots = ...\npredict(my_slots)\nprint(1)"
    lesson._show("需要先完成实践 5.2（…）", asked)
    printed = capsys.readouterr().out
    assert lesson.PREDICT_FIRST in printed and "预期输出：" not in printed
    lesson._show("需要先完成实践 5.2（…）", "predicted = ...\nreveal(predicted, 1)")
    printed = capsys.readouterr().out
    assert lesson.EXERCISE_LATER in printed and "预期输出：" not in printed
    lesson._show("需要先完成实践 5.2（…）", asked.replace("...", "3"))  # written: the box opens
    assert "预期输出：" in capsys.readouterr().out


def test_predict_stops_only_in_a_practice_copy_and_only_while_unwritten(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import pi_course

    lesson.predict(...)  # the reference: the book goes on silently
    assert capsys.readouterr().out == ""
    monkeypatch.setattr(pi_course, "EDITION", "practice")
    monkeypatch.setattr(lesson._session, "handler", True)
    with pytest.raises(lesson.PredictionNeeded):
        lesson.predict(4, ...)
    lesson.predict(4, 0)
    assert "你的预测：(4, 0)" in capsys.readouterr().out


def _learner_adapters() -> list[Path]:
    return [ROOT / "pi_course" / "adapter.py", *sorted(LEARNERS.glob("*/adapter.py"))]


@pytest.mark.parametrize("path", _learner_adapters(), ids=lambda path: path.parent.name)
def test_the_slot_line_is_found_in_every_style_and_its_break_too(path: Path) -> None:
    source = path.read_text(encoding="utf-8")
    found = breakit.find_slot(ast.parse(source))
    assert found is not None and found[0] == "as-written"
    line = source.splitlines()[found[1] - 1]
    assert re.search(r"len\((?!self\.chunks)", line), line
    lines = source.splitlines()
    lines[found[1] - 1] = re.sub(r"len\([^()]*\)", "chunk.index", line, count=1)
    assert breakit.find_slot(ast.parse("\n".join(lines))) == ("broken", found[1])


def test_a_docstring_that_mentions_len_is_not_the_slot_line() -> None:
    source = textwrap.dedent('''
        def add_tool(self, chunk):
            """Give a new tool its slot: content_index = len(content), never the index."""
            if chunk.index not in self.tools:
                self.tools[chunk.index] = {"slot": chunk.index}
    ''')
    assert breakit.find_slot(ast.parse(source)) == ("broken", 5)


async def test_the_break_view_shows_the_first_difference_and_the_restored_view_is_green() -> None:
    run = await break_run(ROOT / "pi_course" / "adapter.py", DIAGNOSTIC_4_2_CHUNKS)
    assert run.source == "simulated" and run.correct is not None
    view = run.comparison
    assert view.first_difference(run.correct) is None
    assert view.first_difference(run.broken) == 1
    said = view.summary(run.broken)
    assert "第一处不同在第 1 条事件" in said and "toolcall_delta · 槽位 0" in said
    assert "IndexError" not in said and "out of range" not in said  # the raw text is a note apart
    assert "Provider index 4 的工具记成了槽位 4（应为 0）" in repr(view)
    restored = await as_it_is(DIAGNOSTIC_4_2_CHUNKS)
    assert restored.first_difference(restored.runs[0]) is None and "✗" not in repr(restored)
    assert len(expected_rows(DIAGNOSTIC_4_2_CHUNKS)) == 10


async def test_a_stepper_lists_only_the_steps_reached() -> None:
    stepper = await PartialStepper.replay(DIAGNOSTIC_4_2_CHUNKS, title="4/2")
    sizers = re.compile(r'<div class="pi-(?:grow-)?sizers?".*?' + re.escape(SIZERS_END), re.S)  # hidden
    first, last = (sizers.sub("", page.value) for page in (stepper.pages[1], stepper.pages[-1]))
    listing = re.compile(r'<div class="pi-steps-col">(.*?)<div class="pi-detail-col">', re.S)
    early, late = listing.search(first), listing.search(last)
    assert early is not None and late is not None
    assert "search" not in early.group(1) and "done" not in early.group(1)
    assert "done" in late.group(1)
    reads = SSEBufferStepper.mainline()
    assert "[DONE]" not in listing.search(sizers.sub("", reads.pages[0].value)).group(1)  # type: ignore[union-attr]


async def test_the_migration_check_goes_event_by_event(capsys: pytest.CaptureFixture[str]) -> None:
    from pi_course.migration import TokenEventTransport
    from pi_course.notebook.migration_check import check_each_event

    assert await check_each_event(TokenEventTransport)
    assert "4/4" in capsys.readouterr().out

    class TextOnly(TokenEventTransport):
        async def stream(self, request, *, signal=None):  # type: ignore[no-untyped-def]
            async for chunk in super().stream(request, signal=signal):
                if type(chunk).__name__ != "TextChunk":
                    raise NotImplementedError("TODO")
                yield chunk

    assert not await check_each_event(TextOnly)
    printed = capsys.readouterr().out
    assert "✓ token" in printed and "✗ end" in printed and "提示：reason 要换成" in printed


async def test_a_file_broken_on_disk_that_the_kernel_has_not_loaded_is_said_so(tmp_path: Path) -> None:
    source = (ROOT / "pi_course" / "adapter.py").read_text(encoding="utf-8")
    broken = tmp_path / "adapter.py"
    broken.write_text(source.replace("slot = len(content)", "slot = chunk.index"), encoding="utf-8")
    run = await break_run(broken, DIAGNOSTIC_4_2_CHUNKS)  # the imported adapter is still correct
    assert run.source == "stale" and "还没载入" in run.said() and "模拟" not in run.said()


# --- a prediction written: its answer still opens, and is judged -----------------------------------


NOTEBOOK_FOLDER = ROOT / "notebooks"


def _code_cells() -> list[tuple[str, dict]]:
    found = []
    for path in sorted(NOTEBOOK_FOLDER.glob("05-*.ipynb")):
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            if cell["cell_type"] == "code":
                found.append((path.name, cell))
    return found


PREDICTION_CELLS = [
    (name, cell)
    for name, cell in _code_cells()
    if re.search(r"^\s*\S.* = \.\.\.|: \.\.\.,$", "".join(cell["source"]), re.M)
]


def _written(source: str, value: str, keep_comments: bool) -> str:
    lines = []
    for line in source.splitlines():
        if "..." in line:
            line = line.replace("...", value)
            line = line if keep_comments else re.sub(r"\s+#[^\"']*$", "", line)
        lines.append(line)
    return "\n".join(lines)


@pytest.mark.parametrize(
    ("name", "cell"), PREDICTION_CELLS, ids=lambda v: v if isinstance(v, str) else v["id"]
)
def test_a_written_prediction_still_finds_the_cells_expected_output(name: str, cell: dict) -> None:
    """Found by source (nbclient, a browser tab) with any value written, comment kept or not; by id in JupyterLab."""
    stored = cell["metadata"].get("pi_course", {}).get("expected")
    source = "".join(cell["source"])
    for value, keep in (("4", True), ('{"请求头"}', False), ('"我也不知道 # 真的"', True)):
        edited = _written(source, value, keep)
        assert edited != source
        found = lesson.find_cell(edited, NOTEBOOK_FOLDER, name)
        assert found is not None and found["id"] == cell["id"], (cell["id"], edited)
        assert lesson.find_expected(edited, NOTEBOOK_FOLDER, name) == stored
    rewritten = "my_guess = 3\n" + source  # a line more: by source it is another cell; the id still finds it
    assert lesson.find_cell(rewritten, NOTEBOOK_FOLDER, name, cell["id"])["id"] == cell["id"]  # type: ignore[index]


def test_an_edited_line_is_not_the_reference_cell() -> None:
    reference = "my_count = ...  # 几条？\npredict(my_count)\nprint(len(x))"
    assert lesson.same_cell(reference, "my_count = 4\npredict(my_count)\nprint(len(x))")
    assert not lesson.same_cell(reference, "my_count = 4\npredict(my_count)\nprint(len(y))")
    assert not lesson.same_cell(reference, "my_count = 4\nprint(len(x))")


ANSWERED = [
    (name, cell) for name, cell in _code_cells() if cell["metadata"].get("pi_course", {}).get("answers")
]


@pytest.mark.parametrize(("name", "cell"), ANSWERED, ids=lambda v: v if isinstance(v, str) else v["id"])
def test_each_stored_answer_judges_itself_right_and_a_wrong_guess_wrong(name: str, cell: dict) -> None:
    answers = cell["metadata"]["pi_course"]["answers"]
    predicted = re.search(r"predict\(([^)]*)\)", "".join(cell["source"]))
    assert predicted is not None and len(predicted.group(1).split(",")) == len(answers), cell["id"]
    for answer in answers:
        if answer is None:
            continue
        assert answer["why"], f"{cell['id']}: a verdict says why"
        value = set(answer["value"]) if isinstance(answer["value"], list) else answer["value"]
        assert lesson.judge(value, answer).startswith("✓"), (cell["id"], answer)
        wrong = "我不知道" if not isinstance(value, bool) else (not value)
        verdict = lesson.judge(wrong, answer, 2)
        assert verdict.startswith("✗ 第 2 个预测不对") and answer["why"] in verdict, verdict


def test_a_practice_copy_judges_a_written_prediction(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import pi_course

    ((_name, cell),) = [(n, c) for n, c in ANSWERED if c["id"] == "05-1-07"]
    monkeypatch.setattr(pi_course, "EDITION", "practice")
    monkeypatch.chdir(NOTEBOOK_FOLDER)
    monkeypatch.setattr(lesson._session, "cell_id", None)
    monkeypatch.setattr(lesson._session, "source", _written("".join(cell["source"]), "4", False))
    lesson.predict(4, "system")
    said = capsys.readouterr().out.splitlines()
    assert said[0].startswith("你的预测：(4, 'system')")
    assert said[1].startswith("✓ 第 1 个预测对了") and said[2].startswith("✓ 第 2 个预测对了")
    lesson.predict(3, '"System"')
    said = capsys.readouterr().out.splitlines()
    assert said[1].startswith("✗ 第 1 个预测不对：你写的是 3，答案是 4。") and said[2].startswith("✓")


def test_a_markdown_output_is_kept_as_the_table_it_renders() -> None:
    outputs = [
        {
            "output_type": "display_data",
            "data": {
                "text/plain": "<IPython.core.display.Markdown object>",
                "text/markdown": "| a | b |\n|---|---|\n| 1 | 2 |",
            },
        }
    ]
    import mistune

    render = mistune.create_markdown(escape=False, plugins=["table"])
    assert lesson.expected_outputs(outputs) == [
        {"text/plain": "| a | b |\n|---|---|\n| 1 | 2 |"}
    ]  # no renderer
    [kept] = lesson.expected_outputs(outputs, lambda text: str(render(text)))
    assert (
        kept["text/plain"].startswith("| a | b |")
        and "<table>" in kept["text/html"]
        and '<td style="text-align:left">2</td>'
        in kept["text/html"]  # as JupyterLab shows Markdown, not right
    )
    assert "<table>" in lesson.expected_bundle([kept])["text/html"]


def test_a_prediction_asked_for_in_a_later_cell_points_to_the_cell_above(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import pi_course

    monkeypatch.setattr(pi_course, "EDITION", "practice")
    monkeypatch.setattr(lesson._session, "handler", False)
    monkeypatch.setattr(lesson._session, "source", "predict(my_message)  # 上面写下的预测\nprint(1)")
    lesson.predict(...)
    assert capsys.readouterr().out.strip() == lesson.ASK_ABOVE
    monkeypatch.setattr(lesson._session, "source", "my_message = ...\npredict(my_message)")
    lesson.predict(...)
    assert capsys.readouterr().out.strip() == lesson.ASK_QUESTION


def _answers_of(cell_id: str) -> list[dict]:
    [(_name, cell)] = [(n, c) for n, c in ANSWERED if c["id"] == cell_id]
    return list(cell["metadata"]["pi_course"]["answers"])


def test_a_right_answer_in_the_learners_own_words_is_right() -> None:
    """05-3 asks in Chinese what the error says: its meaning in Chinese is right, as are the library's words."""
    [error] = _answers_of("05-3-10")
    for said in ("content 不是字符串", "choices[0].delta.content must be a string", "Content 必须是 string"):
        assert lesson.judge(said, error).startswith("✓"), said
    for said in ("choices 不是数组", "content 是数字", "must be an integer"):
        assert lesson.judge(said, error).startswith("✗"), said
    _arguments, left = _answers_of("05-2-16")
    assert lesson.judge("还剩已经收到的文本 partial", left).startswith("✓")
    assert lesson.judge("什么也不剩", left).startswith("✗")


def test_a_set_answer_is_shown_as_the_set_the_cell_asks_for() -> None:
    [places] = _answers_of("05-4-04")
    verdict = lesson.judge({"请求体"}, places)
    assert verdict.startswith("✗") and "答案是 {'请求头'}" in verdict, verdict
    assert lesson.judge({"Authorization 头"}, places).startswith("✓")


def test_context_has_its_own_prediction_judged() -> None:
    _message, context = _answers_of("05-4-10")
    assert context["value"] is None
    for said in (None, "None", "没有"):
        assert lesson.judge(said, context).startswith("✓"), said
    assert lesson.judge("httpx.ConnectError", context).startswith("✗")


def test_an_exercises_expected_output_says_it_is_the_unedited_cells() -> None:
    [(_name, cell)] = [(n, c) for n, c in _code_cells() if c["id"] == "05-1-15"]
    ours = cell["metadata"]["pi_course"]
    bundle = lesson.expected_bundle(ours["expected"], ours["expected_note"])
    assert (
        bundle["text/plain"].startswith("预期输出（这是参考实现跑没改过的这一格")
        and '"parameters": {}' in bundle["text/plain"]
    )
    assert "没改过的这一格" in bundle["text/html"]
    assert lesson.expected_bundle(ours["expected"])["text/plain"].startswith("预期输出：\n")


def test_a_prediction_whose_answer_cannot_show_yet_promises_none_below(
    capsys: pytest.CaptureFixture[str],
) -> None:
    lesson._say_predictions(["error"], {}, below=False)
    said = capsys.readouterr().out
    assert "答案在下面" not in said and "那一步完成" in said
    lesson._say_predictions(["error"], {})
    assert "答案在下面" in capsys.readouterr().out


def test_a_prediction_only_the_learners_run_can_answer_is_judged_by_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    lesson.verdict(..., "error")
    assert capsys.readouterr().out == ""  # unwritten: predict() has asked already
    lesson.verdict(4, "error", "这是这一次改坏以后真正发出的")
    lesson.verdict('"error"', "error")
    said = capsys.readouterr().out.splitlines()
    assert said[0] == "✗ 预测不对：你写的是 4，答案是 'error'。这是这一次改坏以后真正发出的" and said[
        1
    ].startswith("✓")


async def test_the_first_tool_slot_of_a_run_is_its_first_toolcall_delta_or_error() -> None:
    from pi_course import FinishChunk, OpenAICompatibleModel, TextChunk, fixed_transport
    from pi_course.chapter.fixtures import mainline_context
    from pi_course.notebook.breakrun import Run

    async def run(chunks: list) -> Run:
        model = OpenAICompatibleModel(provider="f", model="f", transport=fixed_transport(chunks))
        return Run("t", [event async for event in model.stream(mainline_context())])

    [right] = (await as_it_is(DIAGNOSTIC_4_2_CHUNKS)).runs
    assert right.first_tool_slot == 0
    assert (await run([TextChunk("x"), ConnectionResetError("reset")])).first_tool_slot == "error"
    assert (await run([TextChunk("x"), FinishChunk("stop")])).first_tool_slot is None


def test_every_question_a_cell_asks_is_judged() -> None:
    """Each ``my_… = ...`` a question's cell asks for gets ✓/✗: a stored answer per prediction, or,
    where only the learner's own run knows it (05-5), ``verdict()`` against that run. (Exercises
    judge with ``reveal()``, against what the cell computes.)"""
    unjudged = []
    for name, cell in _code_cells():
        source = "".join(cell["source"])
        asked = re.findall(r"^(my_\w+) = \.\.\.", source, re.M)
        if not asked or "reveal(" in source:
            continue
        answers = cell["metadata"].get("pi_course", {}).get("answers") or []
        stored = len(answers) == len(asked) and all(answers)
        if not stored and not all(f"verdict({mine}" in source for mine in asked):
            unjudged.append(f"{name} {cell['id']}: {asked}")
    assert not unjudged, unjudged


def test_a_yes_or_no_is_judged_the_same_in_every_notebook() -> None:
    """05-0 and 05-1 ask 是……吗／会……吗 as 05-2 and 05-3 do: the same words count everywhere."""
    for cell_id in ("05-0-10p", "05-1-02p", "05-2-05", "05-3-08"):
        no = [answer for answer in _answers_of(cell_id) if answer["value"] is False]
        assert no, cell_id
        for said in (False, "不会", "不是", "否", "No", "不能"):
            assert lesson.judge(said, no[0]).startswith("✓"), (cell_id, said)
        for said in (True, "会", "是", 0):
            assert lesson.judge(said, no[0]).startswith("✗"), (cell_id, said)


def test_no_key_said_any_way_is_right() -> None:
    [tools] = _answers_of("05-1-11")
    for said in ("根本没有", "没有 tools 键", "不写", "没有这个键"):
        assert lesson.judge(said, tools).startswith("✓"), said
    for said in ("空数组", "null", "[]"):
        assert lesson.judge(said, tools).startswith("✗"), said


def test_every_answer_fold_comes_after_the_prediction_cell_it_answers() -> None:
    """Top to bottom a learner meets the question, the cell where the prediction is written, then
    the 看答案 fold: never a fold between a question and the place to answer it, and none missing."""
    asks = re.compile(r"^\s*(my_\w+) = \.\.\.", re.M)
    wrong, folds = [], 0
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        question, asked, last_code_asks = None, False, False
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            text, where = "".join(cell["source"]), f"{path.stem} {cell['id']}"
            if cell["cell_type"] == "code":
                last_code_asks = bool(asks.search(text))
                asked = asked or last_code_asks
                continue
            if "<summary>看答案</summary>" in text:
                folds += 1
                if question is None or "**先想一想**" in text or not (asked and last_code_asks):
                    wrong.append(f"{where}: the fold is not right after the prediction cell of its question")
                question = None
            if "**先想一想**" in text:
                if question is not None:
                    wrong.append(f"{question}: no 看答案 after its prediction cell")
                question, asked = where, False
        if question is not None:
            wrong.append(f"{question}: no 看答案 after its prediction cell")
    assert not wrong, wrong
    assert folds >= 15, folds  # 05-0…05-5's questions


def test_an_exercise_whose_prediction_is_written_is_not_asked_for_it_again(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """05-4 exercise 1 waits for 5.4 (``require``): to a learner who has written the prediction it
    says what is left, not 写下预测 again."""
    [source] = ["".join(c["source"]) for _n, c in _code_cells() if c["id"] == "05-4-17"]
    assert lesson.prediction_cell(source) == "exercise" and not lesson.exercise_predicted(source)
    lesson._show("需要先完成实践 5.4（…）", source)
    assert lesson.EXERCISE_LATER in capsys.readouterr().out
    written = source.replace("...", '"拒绝"')
    assert lesson.exercise_predicted(written)
    lesson._show("需要先完成实践 5.4（…）", written)
    said = capsys.readouterr().out
    assert lesson.EXERCISE_PREDICTED in said and "写下预测" not in said, said
    half = source.replace("...", '"拒绝"', 1)  # one of three written
    assert not lesson.exercise_predicted(half)
    assert lesson.exercise_predicted("predicted = 2\nreveal(predicted, 3)")
    assert not lesson.exercise_predicted("reveal(predicted, 3)", {"predicted": ...})
    assert lesson.exercise_predicted("reveal(predicted, 3)", {"predicted": 2})


def test_the_echo_points_to_the_answer_fold_where_it_is(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The fold follows the cell where the prediction is written: below from there, above later."""
    monkeypatch.setattr(lesson._session, "source", "my_slots = 3\npredict(my_slots)")
    lesson._say_predictions([3], {})
    assert "展开这一格下面折叠的「看答案」" in capsys.readouterr().out
    monkeypatch.setattr(lesson._session, "source", "predict(my_slots)  # 上面写下的预测\nshow()")
    lesson._say_predictions([3], {})
    assert "展开上面折叠的「看答案」" in capsys.readouterr().out
