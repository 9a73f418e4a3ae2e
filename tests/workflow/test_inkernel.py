"""``check`` run inside the interpreter (the browser edition's runner), on CPython.

In Pyodide ``check`` cannot start a subprocess: ``pi_course.course.running.inkernel`` runs the red light and
pytest in the kernel. Here that path is forced (``in_a_tab`` patched) and compared with the
subprocess runner on the same trees: the same lines, the same verdict, for the reference, a fresh
practice copy (the first red light), a learner's solution, and typical mistakes (one caught by the
asyncio time bound). Afterwards the kernel's own modules, ``sys.path`` and environment are back.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from learners import apply, mistake

import pi_course
from pi_course.course import check as check_module
from pi_course.course.checker.plugin_path.pi_course_check.contract import TIMEOUT_VARIABLE
from pi_course.course.copies.practice import create_practice
from pi_course.course.running import inkernel
from pi_course.notebook.breakit import ScratchCopy
from pi_course_here import copy_finder, storage_last

pytestmark = pytest.mark.slow  # the comparison runs the subprocess runner too

ROOT = Path(__file__).parents[2]


@pytest.fixture(scope="module")
def starter(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # What `practice 05` makes, made in this process (test_practice runs the command itself).
    return create_practice(tmp_path_factory.mktemp("starter") / "lab")


def both_ways(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], path: Path, **options: object
) -> tuple[tuple[bool, str], tuple[bool, str]]:
    """``check(path=…)``'s verdict and printed lines: by subprocess, then in this interpreter."""
    results = []
    for browser in (False, True):
        with monkeypatch.context() as patch:
            patch.setattr(inkernel, "in_a_tab", lambda browser=browser: browser)
            if browser:
                patch.setattr(subprocess, "Popen", refuse)
                patch.setattr(subprocess, "run", refuse)
            ok = check_module.check(path=path, **options)  # type: ignore[arg-type]
        results.append((ok, capsys.readouterr().out))
    return results[0], results[1]


def refuse(*args: object, **kwargs: object) -> None:
    raise AssertionError("the in-kernel runner started a subprocess")


def test_the_reference_passes_the_same_way(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    by_subprocess, in_kernel = both_ways(monkeypatch, capsys, ROOT)
    assert in_kernel == by_subprocess
    assert in_kernel[0] is True and "第 05 章聚焦测试：11/11" in in_kernel[1]


def test_a_fresh_copy_gets_the_same_first_red_light(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], starter: Path
) -> None:
    by_subprocess, in_kernel = both_ways(monkeypatch, capsys, starter)
    assert in_kernel == by_subprocess
    assert in_kernel[0] is False and "第一次红灯" in in_kernel[1]


def test_a_learners_solution_passes_the_course_and_beyond_checks_the_same_way(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], starter: Path, tmp_path: Path
) -> None:
    copy = tmp_path / "ada"
    shutil.copytree(starter, copy)
    apply(copy, "ada")
    by_subprocess, in_kernel = both_ways(monkeypatch, capsys, copy, beyond=True)
    assert in_kernel == by_subprocess
    assert in_kernel[0] is True and "第 05 章聚焦测试：11/11" in in_kernel[1]


@pytest.mark.parametrize(
    ("module", "correct", "wrong", "line"),
    [
        (
            "adapter.py",
            '"slot": len(self.content)}',
            '"slot": chunk.index}',
            "normalized transport 状态机：2/3 未通过",
        ),
        (  # a read that ignores abort hangs: cancelled by the asyncio time bound, no signal needed
            "transport.py",
            "yield race.iterate(response.aiter_bytes())",
            "yield response.aiter_bytes()",
            "      超过 2 秒没有结束：被阻塞的读取没有被 abort 信号打断",
        ),
    ],
)
def test_a_mistake_reads_the_same_in_kernel(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    starter: Path,
    tmp_path: Path,
    module: str,
    correct: str,
    wrong: str,
    line: str,
) -> None:
    copy = tmp_path / "ada"
    shutil.copytree(starter, copy)
    apply(copy, "ada")
    mistake(copy, module, correct, wrong)
    monkeypatch.setenv(TIMEOUT_VARIABLE, "2")
    by_subprocess, in_kernel = both_ways(monkeypatch, capsys, copy)
    assert in_kernel == by_subprocess
    assert in_kernel[0] is False
    assert any(printed.startswith(line) for printed in in_kernel[1].splitlines()), in_kernel[1]


def test_the_kernels_own_modules_path_and_environment_are_put_back(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], starter: Path
) -> None:
    def tree_modules() -> dict[str, object]:
        roots = ("pi_course", "conftest", "test_05_provider_adapter", "test_05_beyond", "test_05_rules")
        return {name: module for name, module in sys.modules.items() if name.split(".")[0] in roots}

    modules = tree_modules()
    path, environ = list(sys.path), dict(os.environ)
    monkeypatch.setattr(inkernel, "in_a_tab", lambda: True)
    check_module.check("5.1", path=starter)
    assert "第一次红灯" in capsys.readouterr().out
    assert tree_modules() == modules  # the same module objects: the run's own are gone
    assert sys.modules["pi_course"] is pi_course
    assert (sys.path, dict(os.environ)) == (path, environ)


def test_the_tree_under_test_is_imported_not_the_kernels(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    (tree / "pi_course").mkdir(parents=True)
    (tree / "pi_course" / "__init__.py").write_text("WHERE = 'the tree under test'\n")
    status, out, err = inkernel.run_code(
        "import os, pi_course; print(pi_course.WHERE, os.environ['MARK'])", tree, {"MARK": "env"}
    )
    assert (status, out, err) == (0, "the tree under test env\n", "")
    assert sys.modules["pi_course"] is pi_course


def test_red_light_failures_and_exits_are_reported_like_a_process(tmp_path: Path) -> None:
    status, _, err = inkernel.run_code("import nothing_here_at_all", tmp_path, {})
    assert (
        status == 1 and err.splitlines()[-1] == "ModuleNotFoundError: No module named 'nothing_here_at_all'"
    )
    assert inkernel.run_code("raise SystemExit(3)", tmp_path, {})[0] == 3
    with pytest.raises(ValueError, match="python -m pytest"):
        inkernel.pytest_arguments(["python", "-c", "pass"])


def test_in_a_browser_tab_the_tooling_loads_from_the_wheel_and_the_verdict_stays_the_copys(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], starter: Path, tmp_path: Path
) -> None:
    """The browser edition (simulated: Pyodide's platform, this repository as the installed wheel):
    the copy's lesson modules (read by its ``CopyFinder``) and tests run, its ``chapter``/``course``/
    ``notebook``/``provider`` come from the wheel; a mistake and a module that does not import read as they do elsewhere."""
    copy = tmp_path / "ada"
    shutil.copytree(starter, copy)
    apply(copy, "ada")
    mistake(copy, "adapter.py", '"slot": len(self.content)}', '"slot": chunk.index}')
    where = (
        "import pi_course.adapter as a, pi_course.course.check as c\n"
        "print(a.__file__, type(a.__spec__.loader).__name__)\nprint(c.__file__)"
    )
    with monkeypatch.context() as patch:
        patch.setattr(inkernel, "in_a_tab", lambda: True)
        patch.setattr(subprocess, "Popen", refuse)
        patch.setattr(sysconfig, "get_paths", lambda *args, **kwargs: {"purelib": str(ROOT)})
        patch.setattr(sys, "platform", "emscripten")
        patch.setattr(inkernel, "BROWSER_STORAGE", tmp_path)  # the copy is in the "browser's storage"
        loaded = inkernel.run_code(where, copy, {})
        kernels = copy_finder(copy / "pi_course")  # what begin() installs in a kernel of the copy
        sys.meta_path.insert(0, kernels)
        try:  # a check of another tree from that kernel imports that tree's pi_course
            other = inkernel.run_code("import pi_course.adapter as a\nprint(a.__file__)", ROOT, {})
        finally:
            sys.meta_path.remove(kernels)
        sys.path.insert(0, str(copy))  # as the copy's first cell does in its kernel
        try:  # a run sees the tree once, not the kernel's folders in storage (a request per import)
            run_path = inkernel.run_code("import sys\nprint(*sys.path, sep='\\n')", copy, {})[1]
            with inkernel.read_into_memory(copy) as tree:  # what check() reads: lesson files only
                in_memory = {path.name for path in (tree / "pi_course").iterdir()}
        finally:
            sys.path.remove(str(copy))
        (copy / "learner_helper.py").write_text("GREETING = 'hi'\n", encoding="utf-8")  # at the root,
        outbound = copy / "pi_course" / "outbound.py"  # imported by a lesson file: in the memory copy too
        outbound.write_text(outbound.read_text(encoding="utf-8") + "\nimport learner_helper  # noqa\n")
        mistaken = check_module.check(path=copy, verbose=True)  # pytest's report names the copy
        broken = copy / "pi_course" / "sse.py"
        broken.write_text(
            broken.read_text(encoding="utf-8").replace("class SSEDecoder:", "class SSEDecoder", 1)
        )
        not_importing = check_module.check(path=copy)
        scratch = ScratchCopy(copy)  # 05-5's copy of the copy: only what does not load from the wheel
    try:
        held = {path.relative_to(scratch.path).as_posix() for path in scratch.path.rglob("*.py")}
    finally:
        scratch.remove()
    printed = capsys.readouterr().out
    assert loaded == (
        0,
        f"{copy / 'pi_course' / 'adapter.py'} SourceRead\n{ROOT / 'pi_course' / 'course' / 'check.py'}\n",
        "",
    )
    assert other == (0, f"{ROOT / 'pi_course' / 'adapter.py'}\n", "")
    assert [entry for entry in run_path.splitlines() if Path(entry).is_relative_to(tmp_path)] == [str(copy)]
    assert "adapter.py" in in_memory and not in_memory & {"chapter", "course", "notebook", "provider"}
    assert (mistaken, not_importing) == (False, False)
    assert "出站转换：1/1 通过" in printed and "normalized transport 状态机：2/3 未通过" in printed, printed
    assert f"rootdir: {copy / 'tests'}" in printed and "pi-course-check-" not in printed  # read into memory
    assert "pi_course/adapter.py" in held  # the tooling is the wheel's, through the copy's finder alone
    assert not any(name.split("/")[1] in ("chapter", "course", "notebook", "provider") for name in held)
    assert (
        "pi_course/sse.py 第 " in printed and "SyntaxError: expected ':'（pi_course 无法导入）" in printed
    ), printed


def test_in_a_browser_tab_the_folders_in_storage_are_searched_after_the_installed_packages(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """An import of an installed package stats each folder before it on ``sys.path``: in a tab, a
    request to the page for each folder in the browser's storage (the notebook's own, the copy's)."""
    notebooks, root, site = tmp_path / "copy" / "notebooks", str(tmp_path / "copy"), "/lib/site-packages"
    notebooks.mkdir(parents=True)
    monkeypatch.chdir(notebooks)
    monkeypatch.setattr(sys, "path", [root, "", "/lib/python314.zip", site])
    storage_last(tmp_path)  # not in a tab: nothing moves
    assert sys.path == [root, "", "/lib/python314.zip", site]
    monkeypatch.setattr(sysconfig, "get_paths", lambda *args, **kwargs: {"purelib": site})
    monkeypatch.setattr(sys, "platform", "emscripten")
    storage_last(tmp_path)
    assert sys.path == ["/lib/python314.zip", site, root, ""]
