"""The learner mid-way: every notebook of a practice copy runs to its end at every stage.

Copies are built from the independent learners' code (``tests/workflow/learners/``), never from
the reference: fresh; after 5.1; after 5.1 and 5.2; after 5.1-5.3 (only the 5.3 functions of a
learner's ``transport.py``, so the 5.4 starters stay); and complete with each typical mistake.
Each stage is its own test (so pytest-xdist spreads them over the cores); its copy's notebooks run
under ``--nbval-lax`` in one pytest process, with a small plugin that records every cell's outputs. Then, per copy: nbval-lax passed, no output holds
a traceback, a cell that needs a missing step said which one, and each checkpoint cell names its
step (passed, or not yet).
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from learners import LEARNERS, merge, mistake, new_copy

from pi_course.chapter.steps import STEPS
from pi_course.notebook.lesson import prediction_cell

pytestmark = [pytest.mark.slow, pytest.mark.notebooks]  # make stages, not make test

ROOT = Path(__file__).parents[2]
LABELS = {step.number: step.label for step in STEPS}
EXPECTED = {step.number: step.expected for step in STEPS}
CHECKPOINTS = {"05-1": "5.1", "05-2": "5.2", "05-3": "5.3", "05-4": "5.4"}
# What a learner module holds when it has no stub of its own to say so (5.1's new types and export).
MODULE_STEP = {"protocol.py": "5.1", "__init__.py": "5.1", "outbound.py": "5.1", "adapter.py": "5.2"}
MODULE_STEP |= {"sse.py": "5.3", "transport.py": "5.3"}
STUB = re.compile(r'NotImplementedError\("Lab (5\.\d)|# starter: Lab (5\.\d)')


@dataclass(frozen=True)
class Stage:
    learner: str
    done: tuple[str, ...]
    broken: str | None = None  # the step a mistake breaks (its focused tests fail)
    mistake: tuple[str, str, str] | None = None  # (module, the learner's text, the mistaken text)
    chapter_says: str = ""  # what 05-4's checkpoints must print (a beyond check: 5.4's own names it)


ALL = ("5.1", "5.2", "5.3", "5.4")
STAGES = {
    "fresh": Stage("ada", ()),
    "5.1": Stage("bo", ("5.1",)),
    "5.1-5.2": Stage("ada", ("5.1", "5.2")),
    "5.1-5.3": Stage("bo", ("5.1", "5.2", "5.3")),
    "index-as-slot": Stage(
        "ada", ALL, "5.2", ("adapter.py", '"slot": len(self.content)}', '"slot": chunk.index}')
    ),
    "no-snapshot-clone": Stage(
        "ada", ALL, "5.2",
        ("adapter.py", "self.streaming.with_content(tuple(self.content))", "self.streaming.with_content(self.content)"),
    ),
    "one-read-as-events": Stage(
        "bo", ALL, "5.3", ("sse.py", "self._buffer = lines.pop()", 'self._buffer = ""  # every read taken as whole lines')
    ),
    "key-in-context": Stage(
        "ada", ALL, None,
        ("transport.py",
         "failure = ProviderTransportError(self._key.redact(str(error) or type(error).__name__))",
         "raise ProviderTransportError(self._key.redact(str(error) or type(error).__name__)) from None"),
        chapter_says="✗ 密钥不在错误、错误链",
    ),
}  # fmt: skip

RECORDER = """
import json, os
import pytest

@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    if call.when != "call" or not hasattr(item, "test_outputs"):
        return
    texts = []
    for output in item.test_outputs or []:
        if output.get("output_type") == "error":
            texts.append("Traceback: " + output.get("ename", "") + ": " + output.get("evalue", ""))
        texts.append(output.get("text", "") or "")
        texts.append((output.get("data") or {}).get("text/plain", ""))
    record = {"notebook": os.path.basename(str(item.parent.fspath)), "source": item.cell.source,
              "outcome": outcome.get_result().outcome, "output": "".join(texts)}
    with open(os.environ["STAGE_RECORD"], "a", encoding="utf-8") as file:
        file.write(json.dumps(record, ensure_ascii=False) + "\\n")
"""


def stubs_by_step(starter: str) -> dict[str, str]:
    """The starter's stub functions: name → the step whose stub it is."""
    lines = starter.splitlines()
    found = {}
    for node in ast.walk(ast.parse(starter)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            marker = STUB.search("\n".join(lines[node.lineno - 1 : node.end_lineno]))
            if marker:
                found[node.name] = marker.group(1) or marker.group(2)
    return found


def apply_steps(copy: Path, learner: str, done: tuple[str, ...]) -> None:
    """Write the learner's code for the steps in ``done`` only (their other stubs stay stubs)."""
    for path in sorted((LEARNERS / learner).glob("*.py")):
        if MODULE_STEP[path.name] not in done:
            continue
        target = copy / "pi_course" / path.name
        starter = target.read_text(encoding="utf-8")
        stubs = stubs_by_step(starter)
        source = path.read_text(encoding="utf-8")
        lines = source.splitlines(keepends=True)
        for node in reversed(ast.parse(source).body):  # drop the functions of steps not done
            if (
                isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
                and stubs.get(node.name, "5.1") not in done
            ):
                first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                del lines[first - 1 : node.end_lineno]
        target.write_text(merge(starter, "".join(lines)), encoding="utf-8")


@dataclass
class Run:
    returncode: int
    summary: str
    cells: list[dict[str, str]]
    seconds: float

    def outputs(self, notebook: str) -> str:
        return "\n".join(cell["output"] for cell in self.cells if cell["notebook"].startswith(notebook))


def run_notebooks(copy: Path) -> Run:
    record = copy.parent / f"{copy.name}.jsonl"
    plugin_dir = copy.parent / f"{copy.name}-plugin"
    plugin_dir.mkdir()
    (plugin_dir / "stage_recorder.py").write_text(RECORDER, encoding="utf-8")
    env = dict(os.environ, STAGE_RECORD=str(record), PYTHONPATH=str(plugin_dir))
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "--nbval-lax", "--nbval-current-env", "-p", "stage_recorder",
         "-p", "no:randomly", "-p", "no:cacheprovider", "-o", "addopts=", "notebooks"],
        cwd=copy, env=env, capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    seconds = time.monotonic() - started
    cells = (
        [json.loads(line) for line in record.read_text(encoding="utf-8").splitlines()]
        if record.exists()
        else []
    )
    return Run(result.returncode, result.stdout[-6000:] + result.stderr[-2000:], cells, seconds)


@pytest.fixture(scope="session")
def starter(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One fresh practice copy per test process; every stage copies it."""
    return new_copy(tmp_path_factory.mktemp("stages") / "starter", cwd=ROOT)


def build_and_run(starter: Path, base: Path, name: str) -> Run:
    """One stage's copy, made from the starter, and its notebooks run under nbval-lax."""
    stage = STAGES[name]
    copy = base / name
    shutil.copytree(starter, copy)
    apply_steps(copy, stage.learner, stage.done)
    if stage.mistake:
        mistake(copy, *stage.mistake)
    run = run_notebooks(copy)
    print(f"\nstage {name}: notebooks ran in {run.seconds:.1f} s")
    return run


def problems(name: str, run: Run) -> list[str]:
    """What is wrong with one stage's run: empty when every notebook taught as it should."""
    stage, found = STAGES[name], []
    if run.returncode != 0:
        found.append(f"nbval-lax failed:\n{run.summary}")
    notebooks = {cell["notebook"] for cell in run.cells}
    if len(notebooks) != len(list((ROOT / "notebooks").glob("05-*.ipynb"))):
        found.append(f"only these notebooks ran: {sorted(notebooks)}")
    found += [
        f"{cell['notebook']}: {cell['output'][-1500:]}" for cell in run.cells if "Traceback" in cell["output"]
    ]

    printed = "\n".join(cell["output"] for cell in run.cells)
    said = set(re.findall(r"需要先完成实践 (5\.\d)", printed))
    missing = {step for step in ALL if step not in stage.done}
    if not said <= missing or (missing and min(missing) not in said):
        found.append(f"cells ask for {sorted(said)}; missing: {sorted(missing)}")
    blamed = set(re.findall(r"实践 (5\.\d)（[^）]*）的代码还有问题", printed))
    if not blamed <= ({stage.broken} if stage.broken else set()):
        found.append(f"cells blame {sorted(blamed)}; broken: {stage.broken}")
    for cell in run.cells:
        kind = prediction_cell(cell["source"])
        step_line = "需要先完成实践" in cell["output"] or "的代码还有问题" in cell["output"]
        if kind in ("exercise", "unwritten"):  # the reference's output would answer it: no 预期输出
            if "预期输出：" in cell["output"] or (step_line and "预测" not in cell["output"]):
                found.append(f"{cell['notebook']}: an answer before the prediction: {cell['output'][:300]}")
        elif step_line and "预期输出" not in cell["output"]:
            found.append(f"{cell['notebook']}: a step line without 预期输出: {cell['output'][:300]}")

    for notebook, step in CHECKPOINTS.items():
        cells = [
            cell for cell in run.cells if cell["notebook"].startswith(notebook) and "check(" in cell["source"]
        ]
        if not cells:
            found.append(f"{notebook}: no checkpoint cell ran")
            continue
        said_there = cells[0]["output"]
        passed = f"{LABELS[step]}：{EXPECTED[step]}/{EXPECTED[step]} 通过"
        if step in stage.done and stage.broken != step:
            ok = passed in said_there
        else:  # its own step, or the first step to fix (a fresh copy's first red light names 5.1)
            first = min(missing | ({stage.broken} if stage.broken else set()))
            ok = (LABELS[step] in said_there or f"实践 {first}" in said_there) and passed not in said_there
        if not ok:
            found.append(f"{notebook}'s checkpoint does not name {step} as it stands: {said_there}")
    # 05-4's two checkpoints: check("5.4"), then the whole chapter's check() once 5.4 is done.
    last = [cell for cell in run.cells if cell["notebook"].startswith("05-4") and "check(" in cell["source"]]
    if not any("check()" in cell["source"] for cell in last):
        found.append("05-4: no whole-chapter checkpoint ran")
    if not any(stage.chapter_says in cell["output"] for cell in last):
        found.append(f"05-4's checkpoints lack {stage.chapter_says!r}")
    return found


# 05-5 reads the learner's own adapter: what it must find there, per stage.
BREAK_IT = {
    "index-as-slot": ("已改坏：pi_course/adapter.py 第", "normalized transport 状态机：2/3"),
    "5.1-5.2": ("原样：pi_course/adapter.py 第",),
}


@pytest.mark.parametrize("name", list(STAGES))
def test_every_notebook_at_this_stage_runs_to_its_end_and_names_what_is_missing(
    name: str, starter: Path, tmp_path: Path
) -> None:
    run = build_and_run(starter, tmp_path, name)
    found = problems(name, run)
    break_it = run.outputs("05-5")
    if not all(text in break_it for text in BREAK_IT.get(name, ())):
        found.append(f"05-5 did not find {BREAK_IT[name]}: {break_it[:800]}")
    assert not found, f"[{name}]\n" + "\n".join(found)
