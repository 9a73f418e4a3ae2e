"""Notebook hygiene: the committed outputs are real, complete and reproducible."""

from __future__ import annotations

import json
import re
import uuid
from itertools import pairwise
from pathlib import Path

import mistune
import pytest

from pi_course.chapter.notebooks import NOTEBOOKS as LISTED
from pi_course.chapter.steps import STEPS
from pi_course.notebook.lesson import METADATA_KEY, expected_outputs

FOLDER = Path(__file__).parents[2] / "notebooks"
ALL = [FOLDER / f"{name}.ipynb" for name in LISTED]  # the chapter's one list, 05-7 and 05-8 included
NOTEBOOKS = ALL[
    : LISTED.index("05-6-migration") + 1
]  # the lesson: the overview, the steps, break-it, migration
PRACTICE = [FOLDER / f"{step.notebook}.ipynb" for step in STEPS]
EXPECTED = [
    "05-0-overview.ipynb",
    "05-1-outbound.ipynb",
    "05-2-state-machine.ipynb",
    "05-3-sse.ipynb",
    "05-4-http-and-redaction.ipynb",
    "05-5-break-it.ipynb",
    "05-6-migration.ipynb",
]


CODE_WIDTH = 88  # what a code cell shows without scrolling in JupyterLab beside the file browser


def cells(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def source(cell: dict) -> str:
    return "".join(cell["source"])


VARIABLE = {
    "an absolute path": re.compile(r"(?<![\w.])/(?:home|root|tmp|work|Users|var|opt)/|[A-Z]:\\\\"),
    "a memory address": re.compile(r"\b0x[0-9a-f]{6,}\b"),
    "a loopback port": re.compile(r"127\.0\.0\.1:\d+|localhost:\d+"),
    "a timestamp": re.compile(r"\b20\d\d-\d\d-\d\d[T ]\d\d:\d\d"),
    "a timing": re.compile(r"\b\d+(?:\.\d+)?\s?(?:ms|µs|seconds?)\b"),
}


def test_the_series_is_complete() -> None:
    assert [path.name for path in NOTEBOOKS] == EXPECTED
    assert sorted(FOLDER.glob("*.ipynb")) == sorted(
        ALL
    )  # none on disk missing from the list, none listed missing
    assert all(re.fullmatch(r"05-\d-[a-z-]+\.ipynb", path.name) for path in ALL)


@pytest.mark.parametrize("path", ALL, ids=lambda path: path.stem)
def test_executed_top_to_bottom_without_errors(path: Path) -> None:
    notebook = json.loads(path.read_text(encoding="utf-8"))
    assert notebook["metadata"]["kernelspec"]["name"] == "python3"
    assert notebook["metadata"]["kernelspec"]["display_name"] == "Python 3 (ipykernel)"  # as installed
    code = [cell for cell in notebook["cells"] if cell["cell_type"] == "code"]
    assert [cell["execution_count"] for cell in code] == list(range(1, len(code) + 1))
    outputs = [output for cell in code for output in cell["outputs"]]
    assert not [output for output in outputs if output["output_type"] == "error"]
    assert not [output for output in outputs if output.get("name") == "stderr"]


@pytest.mark.parametrize("path", ALL, ids=lambda path: path.stem)
def test_checked_outputs_hold_nothing_machine_specific(path: Path) -> None:
    notebook = json.loads(path.read_text(encoding="utf-8"))
    for cell in notebook["cells"]:
        source = "".join(cell["source"])
        if cell["cell_type"] != "code" or "NBVAL_IGNORE_OUTPUT" in source:
            continue
        for output in cell["outputs"]:
            texts = [output.get("text", "")] + [
                value for mime, value in output.get("data", {}).items() if mime.startswith("text/")
            ]
            text = "".join("".join(t) if isinstance(t, list) else t for t in texts)
            for what, pattern in VARIABLE.items():
                assert not pattern.search(text), f"{path.name}: {what} in output of {source[:60]!r}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.stem)
def test_practice_notebooks_end_with_their_checkpoint(path: Path) -> None:
    notebook = json.loads(path.read_text(encoding="utf-8"))
    code = [cell for cell in notebook["cells"] if cell["cell_type"] == "code"]
    first = "".join(code[0]["source"])
    assert "use_beside_notebooks()" in first and "begin()" in first  # the copy's package; stages handled
    assert first.count("\n") <= 8, "the setup cell every notebook opens with stays short"
    printed = "".join("".join(output.get("text", "")) for output in code[0]["outputs"])
    assert printed.startswith("使用的 pi_course：")  # begin() says which pi_course it uses
    step = {"05-1": "5.1", "05-2": "5.2", "05-3": "5.3", "05-4": "5.4"}.get(path.name[:4])
    if step is None:
        return
    assert not any(line.lstrip().startswith("assert ") for cell in code for line in source(cell).splitlines())
    last = "".join(code[-1]["source"]) if step != "5.4" else "".join(code[-2]["source"])
    assert f'check("{step}")' in last
    expected = {"5.1": "1/1 通过", "5.2": "3/3 通过", "5.3": "5/5 通过", "5.4": "2/2 通过"}[step]
    printed = "".join("".join(output.get("text", "")) for cell in code[-2:] for output in cell["outputs"])
    assert expected in printed
    if step == "5.4":
        assert "第 05 章聚焦测试：11/11" in printed


def test_widget_state_is_saved_where_steppers_are_shown() -> None:
    for path in ALL:
        notebook = json.loads(path.read_text(encoding="utf-8"))
        shows_widget = any(
            "application/vnd.jupyter.widget-view+json" in output.get("data", {})
            for cell in notebook["cells"]
            for output in cell.get("outputs", [])
        )
        if shows_widget:
            state = notebook["metadata"]["widgets"]["application/vnd.jupyter.widget-state+json"]
            assert state["state"], path.name


@pytest.mark.parametrize("path", ALL, ids=lambda path: path.stem)
def test_a_rerun_with_no_change_rewrites_nothing(path: Path) -> None:
    """What tools/run_notebooks.py normalizes: timestamps, stream splits, random widget ids."""
    notebook = json.loads(path.read_text(encoding="utf-8"))
    for cell in notebook["cells"]:
        assert "execution" not in cell["metadata"], f"{path.name}: execution timestamps stored"
        kinds = [(output["output_type"], output.get("name")) for output in cell.get("outputs", [])]
        assert not [a for a, b in pairwise(kinds) if a == b and a[0] == "stream"], path.name
    state = notebook["metadata"].get("widgets", {}).get("application/vnd.jupyter.widget-state+json", {})
    ids = {
        uuid.uuid5(uuid.NAMESPACE_URL, f"pi-course/{path.name}/{n}").hex
        for n in range(len(state.get("state", {})))
    }
    assert set(state.get("state", {})) == ids


@pytest.mark.parametrize("path", ALL, ids=lambda path: path.stem)
def test_cells_are_short_and_the_prose_is_for_learners(path: Path) -> None:
    for cell in cells(path):
        text = source(cell)
        if cell["cell_type"] == "code":
            assert text.count("\n") + 1 <= 20, f"{path.name}: a code cell of {text.count(chr(10)) + 1} lines"
            wide = [line for line in text.splitlines() if len(line) > CODE_WIDTH]
            assert not wide, f"{path.name}: cut at the right edge in JupyterLab: {wide[0]!r}"
        assert "nbval" not in text.lower(), f"{path.name}: test machinery in {text[:60]!r}"
        assert "NBVAL" not in text


# CommonMark's rule, which JupyterLab follows too: `**` after punctuation such as 。 and before a
# letter does not close (`**一行都不改。**原协议` stays literal). Render with mistune (nbconvert's
# renderer, installed with jupyterlab) and look for asterisks left over outside code.
MARKDOWN = mistune.create_markdown(escape=False, plugins=["table", "strikethrough"])
CODE = re.compile(r"<(code|pre)\b[^>]*>.*?</\1>", re.DOTALL)
STRAY = re.compile(r".{0,20}(?:\*+(?=\S)|(?<=\S)\*+).{0,20}")


@pytest.mark.parametrize("path", ALL, ids=lambda path: path.stem)
def test_bold_and_italic_render_instead_of_showing_asterisks(path: Path) -> None:
    for cell in cells(path):
        if cell["cell_type"] == "markdown":
            rendered = CODE.sub("", MARKDOWN(source(cell)))
            stray = STRAY.search(rendered)
            assert stray is None, f"{path.name}: literal asterisks in {stray.group()!r}"


@pytest.mark.parametrize("path", PRACTICE, ids=lambda path: path.stem)
def test_practice_notebooks_have_the_learning_arc(path: Path) -> None:
    prose = "\n".join(source(cell) for cell in cells(path) if cell["cell_type"] == "markdown")
    assert prose.count("**先想一想**") >= 2
    assert "## 练习" in prose and prose.count("**练习 ") >= 2
    assert prose.count("<details>") >= prose.count("**先想一想**") + prose.count("**练习 ")
    assert "## 小结" in prose
    assert re.search(r"\]\(05-\d-[\w-]+\.ipynb\)", prose), "links to its neighbours"


def test_the_chapter_question_and_the_five_acceptance_questions_are_asked() -> None:
    state_machine = "\n".join(source(cell) for cell in cells(NOTEBOOKS[2]))
    assert "两段 `arguments_delta`" in state_machine
    closing = "\n".join(source(cell) for cell in cells(NOTEBOOKS[4]))
    for question in ("wire message", "content index", "ProviderChunk", "尾随 usage", "API key"):
        assert question in closing
    overview = "\n".join(source(cell) for cell in cells(NOTEBOOKS[0]))
    for path in ALL[1:]:
        assert f"]({path.name})" in overview, f"05-0's map links {path.name}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.stem)
def test_expected_outputs_for_practice_copies_match_the_stored_outputs(path: Path) -> None:
    for cell in cells(path):
        if cell["cell_type"] != "code":
            continue
        ours = cell.get("metadata", {}).get(METADATA_KEY, {})
        markdown = lambda text: str(MARKDOWN(text))  # noqa: E731  tools/run_notebooks.py's renderer
        shown = expected_outputs(cell["outputs"], markdown) if ours.get("show_expected", True) else []
        assert ours.get("expected") == (shown or None), f"{path.name}: re-run tools/run_notebooks.py"
        assert not [item for item in shown if item.get("text/plain", "").startswith("<IPython.")], (
            f"{path.name}: a rich output kept as its object repr, not as what it renders"
        )


def test_one_provider_count_everywhere_as_the_recordings_index_says() -> None:
    from pi_course.provider.corpus import summary

    counted = re.search(r"来自 (\d+) 个 Provider", summary())
    assert counted is not None
    overview = "".join(source(cell) for cell in cells(ALL[0]) if cell["cell_type"] == "markdown")
    said = re.findall(r"(\d+) (?:个|家)真实 Provider", overview)
    assert said == [counted[1]], (said, counted[1])


@pytest.mark.parametrize("path", ALL, ids=lambda path: path.stem)
def test_no_answer_is_stored_under_an_unwritten_prediction(path: Path) -> None:
    """A cell whose prediction is still ``...`` shows the request for one, and nothing after it."""
    for cell in cells(path):
        if cell["cell_type"] != "code" or not re.search(r"^predicted_\w+ = \.\.\.$", source(cell), re.M):
            continue
        printed = "".join("".join(output.get("text", "")) for output in cell["outputs"])
        assert printed.startswith("先把 ... 换成你的预测"), (path.name, printed)
        assert printed.count("\n") == 1, (path.name, printed)  # the answer waits


@pytest.mark.parametrize("path", ALL, ids=lambda path: path.stem)
def test_prose_names_the_current_modules(path: Path) -> None:
    text = "".join(source(cell) for cell in cells(path))
    assert "pi_course/given.py" not in text and "pi_course/reading.py" not in text


QUESTIONNAIRE = Path(__file__).parents[2] / "notebooks" / "05-8-questionnaire.ipynb"


def test_the_chapter_ends_with_a_questionnaire_whose_answers_are_folded() -> None:
    """fastbook-style: 15-25 questions covering every practice notebook and the break-it, answers folded."""
    assert QUESTIONNAIRE in ALL
    questions = [
        source(cell)
        for cell in cells(QUESTIONNAIRE)
        if cell["cell_type"] == "markdown" and re.match(r"\*\*\d+\. ", source(cell))
    ]
    assert 15 <= len(questions) <= 25, len(questions)
    for question in questions:
        asked, _, rest = question.partition("<details><summary>对照答案</summary>")
        assert rest.strip().endswith("</details>") and rest.strip() != "</details>", question[:60]
        assert "对照答案" not in asked
    headings = "\n".join(source(cell) for cell in cells(QUESTIONNAIRE) if source(cell).startswith("## 05-"))
    for path in ALL[1:-1]:  # 05-1 … 05-7: every practice step, the break-it, the migration, the recordings
        assert f"]({path.name})" in headings, f"no questions on {path.name}"
    asked = [question.partition("<details>")[0].strip() for question in questions]
    thinking = sum(bool(re.search(r"为什么|如果|会怎样|哪一种|哪种|说明了什么", text)) for text in asked)
    assert thinking >= 2 * len(asked) / 3, (
        f"{thinking} of {len(asked)} ask why or what if: the rest is recall"
    )
    bodies = [re.sub(r"^\*\*\d+\. ", "", text) for text in asked]
    assert len(set(bodies)) == len(bodies), "a question asked twice"
    questions_before = "\n".join(source(cell) for path in ALL[:-1] for cell in cells(path))
    for body in bodies:  # not an earlier question word for word
        for sentence in re.split(r"(?<=[？?])", body.rstrip("*")):
            assert len(sentence) < 12 or sentence not in questions_before, sentence
    overview = "\n".join(source(cell) for cell in cells(NOTEBOOKS[0]))
    assert "](05-8-questionnaire.ipynb)" in overview


@pytest.mark.parametrize("path", ALL[:-1], ids=lambda path: path.stem)
def test_each_summary_asks_open_what_if_questions(path: Path) -> None:
    summary = [source(cell) for cell in cells(path) if "## 小结" in source(cell)]
    assert summary, f"{path.name}: no 小结"
    assert len(re.findall(r"^\d+\. 如果", summary[-1], re.MULTILINE)) >= 2, path.name


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.stem)
def test_the_first_box_fits_the_edition_it_is_read_in(path: Path) -> None:
    """The book says how to make a practice copy; the copy and the browser's book do not send there."""
    from pi_course.chapter.notebooks import fit_first_box

    first = source(cells(path)[0])
    assert "两个版本" in first and "practice 05" in first, path.name
    for edition, says in (("practice", "这是你的练习副本"), ("browser-book", "practice/notebooks/")):
        notebook = fit_first_box(json.loads(path.read_text(encoding="utf-8")), edition)  # type: ignore[arg-type]
        fitted = source(notebook["cells"][0])
        assert says in fitted and "python -m pi_course practice" not in fitted, (path.name, edition)
        assert fitted.replace(fitted.split("\n> ")[1].split("\n")[0], "") == first.replace(
            first.split("\n> ")[1].split("\n")[0], ""
        ), "only the edition paragraph changes"


@pytest.mark.parametrize("path", [*NOTEBOOKS[:5], NOTEBOOKS[5]], ids=lambda path: path.stem)
def test_every_question_is_gated_by_a_prediction_in_the_cell_that_answers_it(path: Path) -> None:
    """A 先想一想 question whose answer a code cell prints: that cell asks for a prediction first."""
    from pi_course.notebook.lesson import prediction_cell

    notebook = cells(path)
    for index, cell in enumerate(notebook):
        if cell["cell_type"] != "markdown" or "**先想一想**" not in source(cell):
            continue
        following = [c for c in notebook[index + 1 : index + 4] if c["cell_type"] == "code"]
        assert following, f"{path.name}: no prediction cell after {source(cell)[:80]!r}"
        kinds = [prediction_cell(source(c)) for c in following]
        assert "unwritten" in kinds, f"{path.name}: no prediction asked after {source(cell)[:80]!r}"
