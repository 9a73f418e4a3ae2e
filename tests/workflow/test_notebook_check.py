"""A notebook's checkpoint cell, run alone in a fresh kernel, tests the practice copy it belongs to.

Copies are built from the independent learners' code (``tests/workflow/learners/``) at three
stages: stubs, 5.1 done, finished. Each checkpoint cell runs by itself (nbclient, a new kernel
in the copy's ``notebooks/``), before any cell could put the copy on ``sys.path``: the kernel
imports the installed reference, and ``check()`` must still test the copy's files.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from test_stages import apply_steps

pytestmark = [pytest.mark.slow, pytest.mark.notebooks]

ROOT = Path(__file__).parents[2]
NOTEBOOKS = {
    "5.1": "05-1-outbound",
    "5.2": "05-2-state-machine",
    "5.3": "05-3-sse",
    "5.4": "05-4-http-and-redaction",
}


@pytest.fixture(scope="module")
def starter(tmp_path_factory: pytest.TempPathFactory) -> Path:
    copy = tmp_path_factory.mktemp("starter") / "lab"
    result = subprocess.run(
        [sys.executable, "-m", "pi_course", "practice", "05", str(copy)],
        cwd=ROOT, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return copy


def stage(starter: Path, into: Path, learner: str, done: tuple[str, ...]) -> Path:
    copy = Path(shutil.copytree(starter, into / "lab"))
    apply_steps(copy, learner, done)
    return copy


def checkpoint_cells(copy: Path, notebook: str) -> list[str]:
    """The sources of the notebook's cells that call ``check(``."""
    cells = json.loads((copy / "notebooks" / f"{notebook}.ipynb").read_text(encoding="utf-8"))["cells"]
    sources = ["".join(cell["source"]) for cell in cells if cell["cell_type"] == "code"]
    return [source for source in sources if "check(" in source]


def run_alone(copy: Path, source: str) -> str:
    """Run one cell in a fresh kernel in the copy's notebooks/; everything it printed, tracebacks too."""
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source)])
    client = NotebookClient(
        notebook, timeout=240, kernel_name="python3", allow_errors=True,
        resources={"metadata": {"path": str(copy / "notebooks")}},
    )  # fmt: skip
    client.execute()
    texts = []
    for output in notebook.cells[0].outputs:
        if output.output_type == "stream":
            texts.append(output.text)
        elif output.output_type == "error":
            texts.append(f"{output.ename}: {output.evalue}")
        elif "text/plain" in output.get("data", {}):
            texts.append(output.data["text/plain"])
    return "".join(texts)


def test_on_stubs_every_checkpoint_cell_is_red_and_names_the_copy(starter: Path, tmp_path: Path) -> None:
    copy = stage(starter, tmp_path, "ada", ())
    for notebook in NOTEBOOKS.values():
        for source in checkpoint_cells(copy, notebook):
            printed = run_alone(copy, source)
            lines = printed.splitlines()
            assert lines and lines[0] == f"检查的练习副本：{copy}", (notebook, printed)
            assert "：完成" not in printed and "Error:" not in printed, (notebook, printed)
            assert "未完成" in lines[-1] or "第一次红灯" in printed, (notebook, printed)


def test_with_only_5_1_done_later_checkpoints_name_5_2_first(starter: Path, tmp_path: Path) -> None:
    copy = stage(starter, tmp_path, "bo", ("5.1",))
    [cell] = checkpoint_cells(copy, NOTEBOOKS["5.1"])
    assert run_alone(copy, cell).splitlines()[-1] == "实践 5.1：完成"
    for step in ("5.3", "5.4"):
        source = checkpoint_cells(copy, NOTEBOOKS[step])[0]
        printed = run_alone(copy, source)
        lines = printed.splitlines()
        assert lines[1].startswith("先完成实践 5.2（"), printed
        hint_files = [line for line in lines if "sse.py" in line or "transport.py" in line]
        assert not hint_files, printed  # nothing about this step's own files before 5.2 is done
        assert lines[-1].startswith(f"实践 {step}：未完成——先完成实践 5.2"), printed
        assert lines[-2].endswith("未通过"), printed  # this step's own count, after 5.2's reason


def test_a_finished_copy_passes_each_checkpoint_cell_alone(starter: Path, tmp_path: Path) -> None:
    copy = stage(starter, tmp_path, "ada", ("5.1", "5.2", "5.3", "5.4"))
    for step, notebook in NOTEBOOKS.items():
        for source in checkpoint_cells(copy, notebook):
            printed = run_alone(copy, source)
            lines = printed.splitlines()
            assert lines[0] == f"检查的练习副本：{copy}", printed
            assert lines[-1] in (f"实践 {step}：完成", "第 05 章：完成"), (notebook, printed)
            assert not [line for line in lines if line.startswith("  ✓")], printed  # passed: one line


def test_outside_a_copy_check_says_it_tests_the_reference(tmp_path: Path) -> None:
    printed = run_alone(ROOT, "from pi_course.course.check import check\ncheck('5.1')")
    assert printed.splitlines()[0] == "检查的是参考实现（../pi_course），不是练习副本", printed


class Kernel:
    """One kernel in a copy's notebooks/, run cell by cell as a learner does (between edits)."""

    def __init__(self, folder: Path) -> None:
        from jupyter_client.manager import start_new_kernel

        self.manager, self.client = start_new_kernel(kernel_name="python3", cwd=str(folder))
        self.printed: list[str] = []

    def run(self, code: str) -> str:
        reply = self.client.execute_interactive(code, timeout=120, output_hook=self._collect)
        assert reply["content"]["status"] in ("ok", "error")
        printed, self.printed = "".join(self.printed), []
        return printed

    def _collect(self, message: dict) -> None:
        content = message["content"]
        if message["msg_type"] == "stream":
            self.printed.append(content["text"])
        elif message["msg_type"] == "error":
            self.printed.append(f"{content['ename']}: {content['evalue']}\n")
        elif message["msg_type"] in ("display_data", "execute_result"):
            self.printed.append(content["data"].get("text/plain", "") + "\n")

    def stop(self) -> None:
        self.client.stop_channels()
        self.manager.shutdown_kernel(now=True)

    def __enter__(self) -> Kernel:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def code_cells(copy: Path, notebook: str) -> list[str]:
    """The notebook's code cells, less those that only take a prediction (they need no step)."""
    cells = json.loads((copy / "notebooks" / f"{notebook}.ipynb").read_text(encoding="utf-8"))["cells"]
    sources = ["".join(cell["source"]) for cell in cells if cell["cell_type"] == "code"]
    return [source for source in sources if not re.fullmatch(r"(?s).*\n\npredict\(\w+\)\n?", source)]


def later(path: Path, text: str) -> None:
    """Write ``text`` with a newer modification time than the kernel has seen (coarse clocks too)."""
    before = path.stat().st_mtime
    path.write_text(text, encoding="utf-8")
    os.utime(path, (before + 2, before + 2))


def test_after_pasting_5_1_into_a_running_kernel_the_next_cell_says_restart(
    starter: Path, tmp_path: Path
) -> None:
    copy = stage(starter, tmp_path, "bo", ())
    cells = code_cells(copy, NOTEBOOKS["5.1"])
    with Kernel(copy / "notebooks") as kernel:
        kernel.run(cells[0])
        assert kernel.run(cells[1]).startswith("需要先完成实践 5.1")
        done = stage(starter, tmp_path / "done", "bo", ("5.1",))
        for name in ("__init__.py", "protocol.py", "outbound.py"):
            later(copy / "pi_course" / name, (done / "pi_course" / name).read_text(encoding="utf-8"))
        for cell in cells[1:3]:  # the next cell and every one after it, until a restart
            printed = kernel.run(cell)
            assert printed.startswith("重启内核：") and len(printed.splitlines()) == 1, printed
    with Kernel(copy / "notebooks") as kernel:  # restarted: the learner's 5.1 runs
        kernel.run(cells[0])
        assert "ToolDefinition 的字段" in kernel.run(cells[1])


# The browser edition, simulated in a kernel: Pyodide's platform, this repository as the wheel.
SIMULATED_TAB = f"""
import sys, sysconfig
sys.platform = "emscripten"
sysconfig.get_paths = lambda *args, **kwargs: {{"purelib": {str(ROOT)!r}}}
"""
# Before an empty cell: which of the copy's files does the kernel look at (a page request each in a tab)?
LOOKED_AT = """
import os, posix
_looked_at, _stat = set(), posix.stat
def _counting(path, *args, **kwargs):
    _looked_at.add(os.fsdecode(path))
    return _stat(path, *args, **kwargs)
posix.stat = os.stat = _counting
"""
STOP_LOOKING = """
posix.stat = os.stat = _stat
print(sorted(os.path.relpath(path, "..") for path in _looked_at if not os.path.relpath(path, "..").startswith(".")))
print(*(type(sys.modules[f"pi_course.{name}"].__spec__.loader).__name__ for name in ("protocol", "seam", "outbound")))
"""


@pytest.mark.parametrize("tab", [False, True], ids=["lab", "simulated-tab"])
def test_a_lesson_file_that_does_not_import_is_one_line_first(
    starter: Path, tmp_path: Path, tab: bool
) -> None:
    """In a simulated browser tab also: before a cell only the lesson files are looked at (the given
    code is left out of autoreload), and the copy's finder reads them (the first cell's import, an edit)."""
    copy = stage(starter, tmp_path, "bo", ("5.1",))
    cells = code_cells(copy, NOTEBOOKS["5.1"])
    outbound = copy / "pi_course" / "outbound.py"
    source = outbound.read_text(encoding="utf-8")
    broken = source.replace("def to_provider_tools(", "def to_provider_tools(:", 1)
    number = (
        broken.splitlines().index(next(line for line in broken.splitlines() if "to_provider_tools(:" in line))
        + 1
    )
    with Kernel(copy / "notebooks") as kernel:
        if tab:
            kernel.run(SIMULATED_TAB)
        kernel.run(cells[0])
        later(outbound, broken)
        user = next(cell for cell in cells if "to_provider_messages(" in cell)
        lines = kernel.run(user).splitlines()
        assert lines[0].startswith(f"pi_course/outbound.py 第 {number} 行：SyntaxError"), lines
        assert len([line for line in lines if line.startswith("Traceback")]) == 0  # folded: HTML only
        later(outbound, source)  # fixed: the cell runs again, no restart needed
        assert "pi_course/outbound.py" not in kernel.run(user)
        if tab:
            kernel.run(LOOKED_AT)
            kernel.run("pass")
            looked_at, loader = kernel.run(STOP_LOOKING).splitlines()
            files = ast.literal_eval(looked_at)
            assert "pi_course/outbound.py" in files and "pi_course/protocol.py" in files, files
            assert not [file for file in files if file.count("/") > 1], files  # no tooling file
            # protocol and seam come with the package, outbound after an edit: all by CopyFinder
            assert loader == "SourceRead SourceRead SourceRead"


# During one cell: every folder listed, file opened or looked at in the copy (a page request each in a tab).
WATCH_THE_COPY = """
import io, os, posix
_copy_root = os.path.dirname(os.getcwd())
_watched, _originals = [], {}
def _watching(owner, name):
    original = _originals[owner, name] = getattr(owner, name)
    def watched(path, *args, **kwargs):
        if isinstance(path, (str, bytes, os.PathLike)):
            where = os.path.relpath(os.fsdecode(path), _copy_root)
            if not where.startswith(".."):
                _watched.append((name, where))
        return original(path, *args, **kwargs)
    setattr(owner, name, watched)
for _name in ("stat", "listdir", "scandir"):
    _watching(posix, _name)
    _watching(os, _name)
_watching(io, "open")
_watching(io, "open_code")
"""
STOP_WATCHING = """
for (_owner, _name), _original in _originals.items():
    setattr(_owner, _name, _original)
print(sorted(set(_watched)))
"""


def test_in_a_tab_the_first_cell_lists_no_folder_of_the_copy_and_reads_each_module_once(
    starter: Path, tmp_path: Path
) -> None:
    """The first cell chooses the copy through ``pi_course_here`` (installed), so a finder is in place
    before the copy's package is imported: no folder of the copy is listed, no bytecode looked for,
    the tooling comes from the wheel, and each of the copy's files is read once."""
    copy = stage(starter, tmp_path, "bo", ("5.1",))
    cells = code_cells(copy, NOTEBOOKS["5.1"])
    with Kernel(copy / "notebooks") as kernel:
        kernel.run(SIMULATED_TAB)
        # the copy's folder stands for the browser's storage, as /drive/practice does in a tab
        kernel.run(f"import pi_course_here; pi_course_here.storage_last.__defaults__ = ({str(tmp_path)!r},)")
        kernel.run(WATCH_THE_COPY)
        assert "练习副本" in kernel.run(cells[0])
        watched = ast.literal_eval(kernel.run(STOP_WATCHING))
        loaded = kernel.run("print(sorted(name for name in sys.modules if name.startswith('pi_course')))")
    assert [w for w in watched if w[0] in ("listdir", "scandir")] == [], watched
    read = [where for name, where in watched if name in ("open", "open_code")]
    assert "pi_course/__init__.py" in read and "pi_course/protocol.py" in read, watched
    assert len(read) == len(set(read)), read  # each once
    assert [where for where in read if where.count("/") > 1 or "__pycache__" in where] == [], read
    assert "pi_course.chapter" in loaded and "pi_course.notebook.lesson" in loaded, loaded


def test_05_5_shows_the_learners_own_break_and_says_restored_only_after_one(
    starter: Path, tmp_path: Path
) -> None:
    copy = stage(starter, tmp_path, "ada", ("5.1", "5.2", "5.3", "5.4"))
    cells = code_cells(copy, "05-5-break-it")
    asked = next(cell for cell in cells if "my_first_slot = ..." in cell)
    predicted = asked.replace("my_first_slot = ...", 'my_first_slot = "error"')
    stepper = next(cell for cell in cells if "PartialStepper(" in cell)
    restore = next(cell for cell in cells if "restoring=True" in cell)
    adapter = copy / "pi_course" / "adapter.py"
    source = adapter.read_text(encoding="utf-8")
    with Kernel(copy / "notebooks") as kernel:
        for cell in cells[:2]:
            kernel.run(cell)
        waiting = kernel.run(asked)
        assert "先写下你对上面问题的预测" in waiting and "第一处不同" not in waiting, waiting
        simulated = kernel.run(predicted)
        assert "这一次是模拟" in simulated and "第一处不同在第 1 条事件" in simulated, simulated
        assert "2/3 通过" in simulated and "3/3" not in simulated, simulated  # the scratch copy's tests
        assert "[4] 不存在" in kernel.run(stepper)
        assert kernel.run(restore).startswith("没有改坏过："), "nothing was broken: not 已恢复"
        later(adapter, source.replace('"slot": len(self.content)}', '"slot": chunk.index}'))
        own = kernel.run(predicted)
        assert "改坏的是磁盘上的文件" in own and "这一次是模拟" not in own, own
        assert "第一处不同在第 1 条事件" in own and "记成了槽位 4（应为 0）" in own, own
        assert "2/3" in own, own  # check() on the file itself
        shown = kernel.run(stepper)
        assert "[4] 不存在" in shown and "#4" in shown and "—" not in shown.split("tool_buffers", 1)[1], shown
        assert "call-4" not in shown  # ada's adapter makes up no placeholder id
        later(adapter, source)
        restored = kernel.run(restore)
        assert restored.startswith("已恢复：") and "一条不差 ✓" in restored and "3/3 通过" in restored, (
            restored
        )


def test_an_exercise_edit_without_a_prediction_shows_no_answer_and_with_one_compares(tmp_path: Path) -> None:
    """05-2 exercise 2 as a learner does it: the edit first (prediction left ...), then the prediction."""
    cells = code_cells(ROOT, "05-2-state-machine")
    exercise = next(cell for cell in cells if "predicted_end = ..." in cell)
    edited = exercise.replace(
        """ToolChunk(2, arguments_delta='"pi"}')""", """ToolChunk(2, arguments_delta='"pi"}}')"""
    )
    assert edited != exercise
    with Kernel(ROOT / "notebooks") as kernel:
        for cell in cells[: cells.index(exercise)]:
            kernel.run(cell)
        printed = kernel.run(edited)
        assert printed.startswith("先把 ... 换成你的预测") and printed.count("\n") == 1, printed
        assert "error" not in printed and "done" not in printed
        compared = kernel.run(edited.replace("predicted_end = ...", 'predicted_end = "done"'))
        assert compared.splitlines()[:3] == [
            "你的预测：'done'",
            "实际结果：'error'",
            compared.splitlines()[2],
        ]
        assert compared.splitlines()[2].startswith("✗ 不一样"), compared


def test_the_first_cell_run_after_the_checkpoint_cell_still_loads_the_copys_files(
    starter: Path, tmp_path: Path
) -> None:
    """The checkpoint cell first imports the installed pi_course; the first cell then puts the copy's in."""
    copy = stage(starter, tmp_path, "ada", ())
    cells = code_cells(copy, NOTEBOOKS["5.1"])
    with Kernel(copy / "notebooks") as kernel:
        assert "未完成" in kernel.run(checkpoint_cells(copy, NOTEBOOKS["5.1"])[0])
        kernel.run(cells[0])
        assert kernel.run("print(pi_course.__file__)").strip() == str(copy / "pi_course" / "__init__.py")
        assert kernel.run(cells[1]).startswith("需要先完成实践 5.1")  # the copy's stubs, not the reference
