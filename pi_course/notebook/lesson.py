"""Notebooks that run at every stage of a practice copy.

``begin()`` (the first cell of every notebook) installs an IPython exception handler. When a cell
needs a practice step that is not written yet — a stub raises ``NotImplementedError("Lab 5.x …
尚未实现")``, or ``ToolDefinition`` cannot be imported before 5.1 — the cell prints one line naming
the step and shows the output it will produce, taken from the reference run: ``tools/
run_notebooks.py`` stores each code cell's outputs in its metadata (``pi_course.expected``), and a
practice copy strips the outputs but keeps the metadata. The cell then counts as finished, so Run
All goes on. A later ``NameError`` or ``LookupError`` (a name such a cell never defined, a key it
never stored) is explained the same way.

Any other exception asks the probes (:mod:`.stages`) which step of the copy is missing or broken
(the learner's code runs but gets the chapter's fixtures wrong, say the 4/2 slots); that step is
named the same way, with the probe's reason. Only when every step passes its probe is the usual
traceback shown: then the cell itself (an exercise edit) is what failed. Streams do not raise:
``show_events`` and ``final_message`` turn a stream that ended on a stub into the same message.
``require()`` lets a cell stop before output that would mislead, ``unfinished()`` lets it show
the learner's own output first and then the reference's.
"""

from __future__ import annotations

import ast
import html
import json
import os
import re
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pi_course_here import storage_last

from ..chapter import steps as _steps
from ..protocol import AssistantMessage, ModelEvent
from . import freshness, stages
from .display import describe_event
from .tab_autoreload import autoreload_in_a_tab

METADATA_KEY = "pi_course"
_STUB = re.compile(r"Lab (5\.[1-4])\b.*尚未实现")


class SaidInOneLine(Exception):
    """An exception whose whole story is its one line (the handler prints it): IPython stores that
    line, not a formatted traceback, which inspects every loaded module (in a tab: page requests)."""

    def _render_traceback_(self) -> list[str]:
        return [f"{type(self).__name__}: {self}"]


class StepNotDone(SaidInOneLine, NotImplementedError):
    """A stream ended on a practice stub: the cell needs that step first."""


class StepProblem(SaidInOneLine):
    """A step this cell needs is missing or broken (raised by :func:`require`)."""

    def __init__(self, problem: stages.Problem) -> None:
        super().__init__(_problem_line(problem))
        self.problem = problem


def require(*steps: str, allow_broken: bool = False) -> None:
    """Stop the cell, naming the step, unless ``steps`` (and the steps before them) pass their probes.

    ``allow_broken`` stops only for a step not written yet (05-5 breaks 5.2 on purpose).
    """
    last = max(steps)
    found = stages.first_problem(tuple(step for step in _steps.STEP_NUMBERS if step <= last))
    if found is not None and not (allow_broken and found.kind == "broken"):
        raise StepProblem(found)


def unfinished(step: str) -> None:
    """After a cell's own output: if ``step`` is not done yet, say so in one line and show 预期输出.

    Returns nothing, so that as a cell's last line it adds no ``Out[]``.
    """
    found = stages.first_problem(tuple(number for number in _steps.STEP_NUMBERS if number <= step))
    if found is not None and found.step != step and found.step in _steps.STEP_NUMBERS:
        label = _steps.step(step).label
        print(f"上面是你现在的实践 {step}（{label}）代码打印的；要核对它，先得完成前面的步骤：")
    if found is not None:
        _show_problem(found, _session.source)


def missing_step(error: BaseException) -> str | None:
    """The practice step whose absence raised ``error``, if that is what it is."""
    message = str(error)
    found = _STUB.search(message)
    if found and isinstance(error, NotImplementedError):
        return found.group(1)
    if isinstance(error, ImportError) and "ToolDefinition" in message:
        return "5.1"
    if isinstance(error, TypeError) and "'tools'" in message:  # AgentContext without `tools`
        return "5.1"
    return None


def _stop_at_stub(events: Sequence[ModelEvent]) -> None:
    last = events[-1] if events else None
    if last is not None and last.type == "error" and _STUB.search(last.error.error_message or ""):
        raise StepNotDone(last.error.error_message)


def show_events(events: Sequence[ModelEvent]) -> None:
    """Print one line per event; a stream that ended on a practice stub names the step instead."""
    _stop_at_stub(events)
    for event in events:
        print(describe_event(event))


def final_message(events: Sequence[ModelEvent]) -> AssistantMessage:
    """The message the terminal event carries, ``done`` or ``error`` alike (a practice stub: the step)."""
    _stop_at_stub(events)
    last = events[-1]
    if last.type == "done":
        return last.message
    if last.type == "error":
        return last.error
    raise ValueError(f"the stream has not ended: its last event is {last.type}")


class PredictionNeeded(SaidInOneLine):
    """An exercise cell reached its answer before the learner wrote a prediction: stop it there."""


ASK = "先把 ... 换成你的预测，再运行这一格（参考答案在下面折叠的「对照答案」里）。"
ASK_ABOVE = (
    "先在上面那一格写下你的预测（把 my_… = ... 里的 ... 换掉）并运行它，再运行这一格："
    "这一格的输出就是答案，写下预测之后才显示。"
)
ASK_QUESTION = (
    "先写下你对上面问题的预测（把 my_… = ... 里的 ... 换掉），再运行："
    "这一格的输出就是答案，写下预测之后才显示。"
)


def unwritten(prediction: object) -> bool:
    """``...`` anywhere in a prediction (a dict of predictions may be half written)."""
    if prediction is ...:
        return True
    if isinstance(prediction, dict):
        return any(unwritten(value) for value in prediction.values())
    if isinstance(prediction, list | tuple):
        return any(unwritten(value) for value in prediction)
    return False


def practice_copy() -> bool:
    return getattr(sys.modules.get("pi_course"), "EDITION", "reference") == "practice"


def predict(*predictions: object) -> None:
    """The answer to the question above (the rest of the cell) only after the learner predicted it.

    In a practice copy an unwritten prediction (``...``) stops the cell with one line, the way
    :func:`reveal` does; a written one is printed, and the cell's output follows. The reference
    edition is the book with stored outputs: there the cell goes on and prints nothing extra.
    """
    if not practice_copy():
        return
    if any(unwritten(prediction) for prediction in predictions):
        here = re.search(r"^\s*\w+ = \.\.\.", _session.source, re.MULTILINE) or not _session.source
        ask = ASK_QUESTION if here else ASK_ABOVE  # the prediction may sit in the cell above
        if _session.handler:
            raise PredictionNeeded(ask)
        print(ask)
        return
    _say_predictions(predictions, _this_cell())


def _say_predictions(predictions: Sequence[object], cell: Mapping[str, Any], below: bool = True) -> None:
    """The learner's predictions, then a verdict for each one the cell stores an answer to.

    ``below``: the cell goes on to show the answer (not so where only the learner's own run can).
    """
    _session.judged = _session.run
    shown = predictions[0] if len(predictions) == 1 else tuple(predictions)
    where = "答案在下面" if below else "这一格的答案要等上面说的那一步完成、再运行才算得出来"
    # The 看答案 fold follows the cell where the prediction is written; later cells echo it from below.
    fold = "这一格下面" if re.search(r"^\s*my_\w+\s*=", _session.source, re.MULTILINE) else "上面"
    print(f"你的预测：{shown!r}（{where}；为什么，展开{fold}折叠的「看答案」）")
    answers = cell.get("metadata", {}).get(METADATA_KEY, {}).get("answers") or []
    for number, (prediction, answer) in enumerate(zip(predictions, answers, strict=False), 1):
        if answer:
            print(judge(prediction, answer, number if len(predictions) > 1 else None))


def _predicted(source: str, namespace: Mapping[str, object]) -> list[object] | None:
    """The values ``predict(...)`` in ``source`` would have been given, read from the kernel."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "predict":
            names = [arg.id for arg in node.args if isinstance(arg, ast.Name)]
            if len(names) == len(node.args) and all(name in namespace for name in names):
                return [namespace[name] for name in names]
            return None
    return None


def _this_cell() -> dict[str, Any]:
    """The running cell as the reference notebook has it (its stored answers), or ``{}``."""
    from IPython import get_ipython

    shell = get_ipython()
    found = find_cell(_session.source, Path.cwd(), _notebook_name(shell), _session.cell_id)
    return found or {}


def _plain(value: object) -> object:
    """A prediction as compared: a string without its quotes, spaces or case; a number as itself."""
    if isinstance(value, str):
        return value.strip().strip("'\"“”「」").strip().casefold()
    return value


#: A yes/no question answered in words, the same in every notebook (「不会」 to 「会……吗？」).
YES_NO = {
    True: ("true", "yes", "是", "是的", "会", "能", "对", "可以", "有"),
    False: ("false", "no", "否", "不", "不是", "不会", "不能", "不对", "不可以", "没有", "不同", "不一样"),
}


def judge(prediction: object, answer: Mapping[str, Any], number: int | None = None) -> str:
    """✓ or ✗ for one prediction, with the answer's one-line why.

    ``answer`` holds ``value`` (what the reference prints) and ``why``; optionally ``accept``
    (other ways to say it), ``synonyms`` (a word → the answer's word, for the items of a set)
    and ``contains`` (a free sentence is right when it holds this; a list: any one of these,
    each a string or a list of strings the sentence holds all of).
    """
    value = answer["value"]
    synonyms = {_plain(key): _plain(word) for key, word in answer.get("synonyms", {}).items()}

    def said(item: object) -> object:
        plain = _plain(str(item) if not isinstance(item, bool | int | float) else item)
        return synonyms.get(plain, plain) if isinstance(plain, str) else plain

    accepted = [said(item) for item in [value, *answer.get("accept", [])] if not isinstance(item, list)]
    if isinstance(value, list):
        items = prediction if isinstance(prediction, set | frozenset | list | tuple) else [prediction]
        right = {said(item) for item in items} == {said(item) for item in value}
    elif "contains" in answer:
        sentence = str(_plain(str(prediction)))
        wanted = answer["contains"]
        ways = [wanted] if isinstance(wanted, str) else wanted
        right = any(
            all(str(_plain(part)) in sentence for part in ([way] if isinstance(way, str) else way))
            for way in ways
        )
    elif isinstance(value, bool):  # 0 == False: a bool answer takes a bool, or one of its words
        words = [item for item in accepted if isinstance(item, str)] + list(YES_NO[value])
        right = prediction is value or (isinstance(prediction, str) and said(prediction) in words)
    else:
        right = not isinstance(prediction, bool) and (
            said(prediction) in accepted or said(str(prediction)) in [str(item) for item in accepted]
        )
    which = f"第 {number} 个预测" if number else "预测"
    why = answer.get("why", "")
    if right:
        return f"✓ {which}对了：{why}" if why else f"✓ {which}对了。"
    shown = set(value) if isinstance(value, list) else value  # a list answer is compared as a set
    return f"✗ {which}不对：你写的是 {prediction!r}，答案是 {shown!r}。{why}"


def verdict(prediction: object, actual: object, why: str = "") -> None:
    """✓ or ✗ for a prediction whose answer only the learner's own run knows (05-5's broken adapter).

    Nothing while the prediction is unwritten: :func:`predict` has already asked for it.
    """
    if not unwritten(prediction):
        print(judge(prediction, {"value": actual, "why": why}))


def reveal(prediction: object, actual: object) -> None:
    """An exercise's answer only after the learner wrote a prediction (``...`` means not yet).

    In a kernel set up by :func:`begin`, an unwritten prediction stops the cell with one line
    (nothing after ``reveal()`` prints the answer either) and Run All goes on. Elsewhere it
    prints that line and returns. With a prediction it prints the prediction beside the result.
    It returns nothing: as a cell's last line it must add no ``Out[]``.
    """
    if unwritten(prediction):
        if _session.handler:
            raise PredictionNeeded(ASK)
        if _session.asked != _session.run or not _session.run:  # once per cell run, not per reveal()
            print(ASK)
        _session.asked = _session.run
        return
    same = prediction == actual or (isinstance(prediction, set | frozenset) and prediction == set(actual))  # type: ignore[call-overload]
    shown = sorted(actual) if isinstance(actual, set | frozenset) else actual
    print(f"你的预测：{prediction!r}")
    print(f"实际结果：{shown!r}")
    print("✓ 一样" if same else "✗ 不一样：对照提示再想一想，哪里和你想的不同？")


# --- the reference outputs a practice copy shows ---------------------------------------------------


def expected_outputs(
    outputs: Iterable[Mapping[str, Any]], markdown: Callable[[str], str] | None = None
) -> list[dict[str, str]]:
    """The parts of a code cell's outputs a learner can read without the kernel (text and HTML).

    A Markdown output (05-7's tables) keeps its source as text and, given ``markdown`` (the
    reference run's renderer), the HTML it renders to: the 预期输出 box then shows the table, not
    ``<IPython.core.display.Markdown object>``.
    """
    kept: list[dict[str, str]] = []
    for output in outputs:
        if output.get("output_type") == "stream" and output.get("name") == "stdout":
            kept.append({"text/plain": _joined(output.get("text", ""))})
        elif output.get("output_type") in ("execute_result", "display_data"):
            data = output.get("data", {})
            item = {mime: _joined(data[mime]) for mime in ("text/plain", "text/html") if mime in data}
            if "text/markdown" in data:
                item["text/plain"] = _joined(data["text/markdown"])
                if markdown is not None and "text/html" not in item:
                    item["text/html"] = _left_aligned(markdown(item["text/plain"]))
            if item:
                kept.append(item)
    return kept


def _left_aligned(rendered: str) -> str:
    """Table cells as JupyterLab's Markdown shows them: its HTML outputs right-align every cell."""
    return re.sub(r"<(t[hd])>", r'<\1 style="text-align:left">', rendered)


def _joined(value: str | list[str]) -> str:
    return value if isinstance(value, str) else "".join(value)


def store_expected(notebook: dict[str, Any], markdown: Callable[[str], str] | None = None) -> None:
    """Copy every code cell's readable outputs into its metadata (the reference run does this).

    Other keys under ``pi_course`` (a question's ``answers``) are written by hand and kept.
    """
    for cell in notebook["cells"]:
        if cell["cell_type"] != "code":
            continue
        metadata = cell.setdefault("metadata", {})
        ours = dict(metadata.get(METADATA_KEY, {}))
        ours.pop("expected", None)
        expected = expected_outputs(cell.get("outputs", []), markdown)
        if expected and ours.get("show_expected", True):
            ours["expected"] = expected
        if ours:
            metadata[METADATA_KEY] = ours
        else:
            metadata.pop(METADATA_KEY, None)


def _source(cell: Mapping[str, Any]) -> str:
    return _joined(cell.get("source", "")).strip()


_PLACEHOLDER = re.compile(r"\\\.\\\.\\\.")  # "..." once re.escape()d
_COMMENT = re.compile(r"\s+#[^\"']*$")


def same_cell(reference: str, edited: str) -> bool:
    """``edited`` is the reference cell with its predictions written: each ``...`` may have become
    anything on its line (a comment after it dropped or kept), every other line is as it was.
    """
    ours, theirs = reference.strip().splitlines(), edited.strip().splitlines()
    if len(ours) != len(theirs):
        return False
    for line, written in zip(ours, theirs, strict=True):
        if line.rstrip() == written.rstrip():
            continue
        if "..." not in line:
            return False
        code = _COMMENT.sub("", line.rstrip())
        pattern = _PLACEHOLDER.sub(".+", re.escape(code)) + r"(\s*#.*)?"
        if not re.fullmatch(pattern, written.rstrip()):
            return False
    return True


def find_cell(
    source: str, folder: Path, preferred: str | None = None, cell_id: str | None = None
) -> dict[str, Any] | None:
    """The reference cell a learner's cell is, in ``folder``'s notebooks: by the cell id JupyterLab
    sends, else by its source (exact, or with its predictions written).
    """
    paths = sorted(folder.glob("*.ipynb"))
    if preferred:
        paths.sort(key=lambda path: path.name != Path(preferred).name)
    code: list[dict[str, Any]] = []
    for path in paths:
        try:
            cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        except (OSError, ValueError, KeyError):
            continue
        code += [cell for cell in cells if isinstance(cell, dict) and cell.get("cell_type") == "code"]
    wanted = source.strip()
    for found in (
        (cell for cell in code if cell_id and cell.get("id") == cell_id),
        (cell for cell in code if _source(cell) == wanted),
        (cell for cell in code if same_cell(_source(cell), wanted)),
    ):
        for cell in found:
            return cell
    return None


def find_expected(
    source: str, folder: Path, preferred: str | None = None, cell_id: str | None = None
) -> list[dict[str, str]] | None:
    """The stored reference outputs of this cell (see :func:`find_cell`)."""
    cell = find_cell(source, folder, preferred, cell_id)
    stored = cell.get("metadata", {}).get(METADATA_KEY, {}).get("expected") if cell else None
    return list(stored) if stored else None


def _step_line(step: str) -> str:
    return f"{_stub_lead(step)}。"


def _stub_lead(step: str) -> str:
    practice = _steps.step(step)
    return f"需要先完成实践 {step}（{practice.label}）：{'、'.join(practice.files)} 里还是占位实现"


def _lead(problem: stages.Problem) -> str:
    """The step a cell needs and why, without the sentence's end (see :func:`_cascade_line`)."""
    label = _steps.step(problem.step).label if problem.step in _steps.STEP_NUMBERS else ""
    if problem.kind == "missing" and stages.STUB.search(problem.why):
        return _stub_lead(problem.step)
    if problem.kind == "missing":
        return f"需要先完成实践 {problem.step}（{label}）：{problem.why}"
    return f"实践 {problem.step}（{label}）的代码还有问题：{problem.why}"


def _problem_line(problem: stages.Problem) -> str:
    """One line naming the step a cell needs and why it cannot run as the prose says."""
    if problem.kind == "broken":
        return f"{_lead(problem)}。这一格用到了它。"
    return f"{_lead(problem)}。"


def _cascade_line(lead: str, error: BaseException) -> str:
    """A name or key an earlier cell would have made: the step that stopped that cell is the cause."""
    name = getattr(error, "name", None) if isinstance(error, NameError) else None
    made = f"定义 {name} 的那一格" if isinstance(name, str) and name else "算出这一格要用的结果的那一格"
    return f"{lead}；上面{made}也是因此停下的。"


def expected_bundle(expected: Sequence[Mapping[str, str]] | None, note: str | None = None) -> dict[str, str]:
    """预期输出 as a display bundle: plain text for any frontend, a labelled box for JupyterLab.

    ``note`` says what the output is of, where that is not the cell as the learner has it (an exercise).
    """
    if not expected:
        note = "（这一格改动过，找不到参考实现的输出。）"
        return {"text/plain": f"预期输出：{note}", "text/html": f"<p><b>预期输出</b>{html.escape(note)}</p>"}
    plain = "\n".join(
        item.get("text/plain", "").rstrip("\n")
        for item in expected
        if not item.get("text/plain", "").startswith("<IPython.core.display.")  # its HTML is the output
    )
    parts = []
    for item in expected:
        if "text/html" in item:
            parts.append(item["text/html"])
        else:
            parts.append(f'<pre style="margin:0">{html.escape(item.get("text/plain", ""))}</pre>')
    box = (
        '<div style="border-left:4px solid var(--jp-warn-color1, #f0a000);padding:4px 10px;'
        'background:var(--jp-layout-color2, transparent);color:var(--jp-ui-font-color1, inherit)">'
        '<div style="font-weight:bold;margin-bottom:4px">预期输出（参考实现的真实输出）</div>'
        # a long table (05-7's 42 recordings) scrolls inside the box: the cells after it stay in reach
        f'<div style="max-height:32em;overflow:auto">{"".join(parts)}</div></div>'
    )
    said = f"（{note}）" if note else ""
    box = box.replace(
        "预期输出（参考实现的真实输出）</div>", f"预期输出（参考实现的真实输出）{html.escape(said)}</div>"
    )
    return {"text/plain": f"预期输出{said}：\n" + plain, "text/html": box}


# --- the IPython side ----------------------------------------------------------------------------


@dataclass
class _Session:
    source: str = ""
    cell_id: str | None = None  # the running cell's notebook id, when the frontend says it
    missing: list[str] = field(default_factory=list)  # steps this kernel has met, in order
    causes: dict[str, str] = field(default_factory=dict)  # step -> what stopped a cell, said
    handled: bool = False
    run: int = 0  # cells run since begin() (0: not in IPython)
    asked: int = -1  # the run in which reveal() last asked for a prediction
    judged: int = -1  # the run in which the predictions were last said and judged
    handler: bool = False  # begin() installed the handler: reveal() may stop a cell
    stale: freshness.Stale | None = None  # this cell must not run: the line says why
    restart: freshness.Stale | None = None  # found once, said before every cell until a restart


_session = _Session()


def begin() -> None:
    """Open a notebook: autoreload on, the practice-stage handler installed, the edition said (idempotent)."""
    from IPython import get_ipython

    shell = get_ipython()
    if shell is None:
        return
    if freshness.autoreloader(shell) is None:  # an edit to pi_course/*.py is seen by the next cell
        shell.run_line_magic("load_ext", "IPython.extensions.autoreload")
    shell.run_line_magic("autoreload", "2")
    _session.missing.clear()
    _session.causes.clear()
    for name, hook in (("pre_run_cell", _before), ("post_run_cell", _after)):
        for registered in list(shell.events.callbacks[name]):
            if getattr(registered, "__name__", "") == hook.__name__ and registered.__module__ == __name__:
                shell.events.unregister(name, registered)
        shell.events.register(name, hook)
    shell.set_custom_exc((Exception,), _handler)
    _session.handler = True
    reloader = freshness.autoreloader(shell)
    if reloader is not None:
        reloader.hide_errors = True  # a failed reload is said in one line before the cell, not 35
        for name in [name for name in sys.modules if _tooling(name)]:
            reloader.mark_module_skipped(name)  # given code: no stat of its files before every cell
        root = _lesson_root()
        if root is not None:  # in a browser tab: no request to the page per lesson file and cell
            autoreload_in_a_tab(reloader, root / "pi_course")
    shell.ast_transformers[:] = [t for t in shell.ast_transformers if not isinstance(t, _StopStaleCell)]
    shell.ast_transformers.append(_StopStaleCell())
    storage_last()  # in a browser tab: an import of an installed package asks the page nothing
    package = sys.modules.get("pi_course")  # the copy's own, as use_beside_notebooks() chose it
    if package is not None:
        print(package.describe_edition())


class CellStopped(SaidInOneLine):
    """The kernel's lesson code is not what the files say (see :mod:`.freshness`): the cell did not run."""

    def __init__(self, found: freshness.Stale) -> None:
        super().__init__(found.line)
        self.found = found


class _StopStaleCell(ast.NodeTransformer):
    """An AST transformer (it runs after ``pre_run_cell``): a cell that must not run only raises."""

    def visit(self, node: ast.AST) -> ast.AST:
        if _session.stale is None or not isinstance(node, ast.Module):
            return node
        call = f"__import__('sys').modules[{__name__!r}]._raise_stale()"
        return ast.fix_missing_locations(ast.parse(call))


def _raise_stale() -> None:
    found, _session.stale = _session.stale, None
    if found is not None:
        raise CellStopped(found)


def _tooling(name: str) -> bool:
    """A module of one of ``pi_course``'s tooling subpackages (the lesson modules sit at the top)."""
    top, _, rest = name.partition(".")
    subpackage = sys.modules.get(f"pi_course.{rest.split('.')[0]}")
    return top == "pi_course" and bool(rest) and hasattr(subpackage, "__path__")


def _lesson_root() -> Path | None:
    """The tree whose ``pi_course`` this kernel imported (a copy, or the reference)."""
    file = getattr(sys.modules.get("pi_course"), "__file__", None)
    # Not resolve(): the module files are named by the same unresolved path; and in a browser tab
    # each component resolve() looks at is a request to the page (before every cell).
    return Path(os.path.abspath(file)).parents[1] if file else None


def _before(info: Any) -> None:
    _session.source = getattr(info, "raw_cell", "") or ""
    _session.cell_id = getattr(info, "cell_id", None)  # JupyterLab sends it; nbclient and a tab do not
    _session.handled = False
    _session.run += 1
    _session.stale = None
    if _session.restart is not None:
        _session.stale = _session.restart
        return
    from IPython import get_ipython

    root = _lesson_root()
    found = freshness.stale(get_ipython(), root) if root is not None else None
    if found is not None and found.restart:
        _session.restart = found
    _session.stale = found


def _after(result: Any) -> None:
    if _session.handled:
        result.error_in_exec = None  # the cell said what it needs: Run All goes on
        _session.handled = False


def _handler(
    shell: Any, etype: type[BaseException], value: BaseException, tb: Any, tb_offset: Any = None
) -> None:
    if isinstance(value, StepProblem):
        _show_problem(value.problem, _session.source, shell)
        return None
    root = _lesson_root()
    not_yet = missing_step(value) is not None  # 5.1's types not written yet: a step, not a typo
    broken = freshness.import_failure(value, root) if root is not None and not not_yet else None
    if broken is not None:  # a lesson file that does not import: its line first, the traceback folded
        value = CellStopped(broken)
    if isinstance(value, CellStopped):  # one line; Run All stops here (the cells after would mislead)
        print(value)
        if value.found.details:
            from IPython import display as ipython_display

            show: Callable[..., Any] = ipython_display.display
            show(freshness.bundle(value.found), raw=True)
        return None
    if isinstance(value, PredictionNeeded):  # the answer waits for the prediction
        print(value)
        _session.handled = True
        return None
    step = missing_step(value)
    cascade = step is None and isinstance(value, (NameError, LookupError)) and bool(_session.missing)
    if step is None and not cascade:
        found = stages.first_problem()
        if found is None:  # every step works: the cell itself failed
            shell.showtraceback((etype, value, tb), tb_offset=tb_offset)
            return None
        _show_problem(found, _session.source, shell)
        return None
    if step is None:
        step = _session.missing[0]
        lead = _session.causes.get(step) or _stub_lead(step)
        _show(_cascade_line(lead, value), _session.source, shell)
        return None
    if step not in _session.missing:
        _session.missing.append(step)
        _session.causes[step] = _stub_lead(step)
    _show(_step_line(step), _session.source, shell)
    return None


def _show_problem(problem: stages.Problem, source: str, shell: Any = None) -> None:
    if problem.step not in _session.missing:
        _session.missing.append(problem.step)
        _session.causes[problem.step] = _lead(problem)
    _show(_problem_line(problem), source, shell)


EXERCISE_LATER = (
    "这是一道练习：写下预测、完成上面那一步之后再运行这一格，它会把你的预测和实际结果并排给出"
    "（参考答案在下面折叠的「对照答案」里）。"
)
EXERCISE_PREDICTED = (
    "这是一道练习，你的预测已经写好：完成上面那一步之后再运行这一格，它会把你的预测和实际结果并排给出"
    "（参考答案在下面折叠的「对照答案」里）。"
)
OWN_CODE_ONLY = (
    "这一格跑的是你自己的代码，没有可以代替它的预期输出：先完成上面说的那一步，再从这本笔记本的开头运行。"
)
PREDICT_FIRST = (
    "预期输出（参考实现的真实输出）就是上面那个问题的答案：先写下你的预测（把 my_… = ... 里的 ... 换掉），"
    "再运行，预期输出才会显示。"
)


def prediction_cell(source: str, namespace: Mapping[str, object] | None = None) -> str:
    """What kind of cell this is, read from its code: ``exercise`` (it calls ``reveal()``),
    ``unwritten`` or ``written`` (it calls ``predict()``), or ``plain``.

    A prediction written in an earlier cell is looked up in ``namespace`` (the kernel's); without
    one, or not there yet, it counts as unwritten: the answer waits rather than shows too early.
    """
    parsed = _assignments_and_calls(source)
    if parsed is None:  # IPython syntax (magics): not a prediction cell of the course
        return "plain"
    assigned, calls = parsed
    if any(call.func.id == "reveal" for call in calls):  # type: ignore[attr-defined]
        return "exercise"
    asked = [arg for call in calls if call.func.id == "predict" for arg in call.args]  # type: ignore[attr-defined]
    if not asked:
        return "plain"
    return "unwritten" if _any_open(asked, assigned, namespace) else "written"


def exercise_predicted(source: str, namespace: Mapping[str, object] | None = None) -> bool:
    """Whether an exercise cell's ``reveal()`` predictions are all written (no ``...`` left)."""
    parsed = _assignments_and_calls(source)
    if parsed is None:
        return False
    assigned, calls = parsed
    asked = [call.args[0] for call in calls if call.func.id == "reveal" and call.args]  # type: ignore[attr-defined]
    return bool(asked) and not _any_open(asked, assigned, namespace)


def _assignments_and_calls(source: str) -> tuple[dict[str, ast.expr], list[ast.Call]] | None:
    """A cell's ``name = value`` bindings and its calls of plain names; None where it is not Python."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    assigned: dict[str, ast.expr] = {}
    calls: list[ast.Call] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    assigned[target.id] = node.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            calls.append(node)
    return assigned, calls


def _any_open(
    asked: Sequence[ast.expr], assigned: dict[str, ast.expr], namespace: Mapping[str, object] | None
) -> bool:
    """Whether any of ``asked`` still holds ``...``, followed through the cell's own assignments."""

    def open_(node: ast.expr) -> bool:
        if isinstance(node, ast.Name) and node.id in assigned:
            return open_(assigned.pop(node.id))  # pop: a name bound to itself cannot loop
        if isinstance(node, ast.Name):  # written in an earlier cell, if at all
            return namespace is None or unwritten(namespace.get(node.id, ...))
        if isinstance(node, ast.Constant):
            return node.value is ...
        if isinstance(node, ast.Dict):
            return any(open_(value) for value in node.values)
        if isinstance(node, ast.List | ast.Tuple):
            return any(open_(item) for item in node.elts)
        return False

    return any(open_(arg) for arg in asked)


def _notebook_name(shell: Any) -> str | None:
    """The running notebook's path, where the frontend tells the kernel (JupyterLab does)."""
    notebook = shell.user_ns.get("__session__") if shell is not None else None
    notebook = notebook or os.environ.get("JPY_SESSION_NAME")
    return notebook if isinstance(notebook, str) else None


def _show(line: str, source: str, shell: Any = None) -> None:
    """The one line, then the reference's output of this cell; the cell counts as finished."""
    from IPython import display as ipython_display
    from IPython import get_ipython

    shell = shell or get_ipython()
    display: Callable[..., Any] = ipython_display.display
    print(line)
    kind = prediction_cell(source, shell.user_ns if shell is not None else None)
    if kind == "exercise":  # the reference ran it unanswered: its only output is the request to predict
        written = exercise_predicted(source, shell.user_ns if shell is not None else None)
        print(EXERCISE_PREDICTED if written else EXERCISE_LATER)
        _session.handled = True
        return
    if kind == "unwritten":  # the reference's output is this question's answer: not before the prediction
        print(PREDICT_FIRST)
        _session.handled = True
        return
    cell = find_cell(source, Path.cwd(), _notebook_name(shell), _session.cell_id) or {}
    ours = cell.get("metadata", {}).get(METADATA_KEY, {})
    predicted = _predicted(source, shell.user_ns) if shell is not None and kind == "written" else None
    if predicted is not None and _session.judged != _session.run:  # it stopped before predict()
        _say_predictions(predicted, cell, below=ours.get("show_expected", True) is not False)
    if ours.get("show_expected", True) is False:  # the book's output would speak of the book, not the copy
        print(OWN_CODE_ONLY)
        _session.handled = True
        return
    display(expected_bundle(ours.get("expected"), ours.get("expected_note")), raw=True)
    _session.handled = True
