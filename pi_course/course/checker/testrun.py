"""Run chapter 05's tests in a fresh pytest process; :mod:`.results` reads back what it left.

The tests run in ``python -m pytest`` with the chosen tree first on ``sys.path``, so a practice
copy is tested as it is on disk, and a notebook kernel's own event loop and imports are never
involved. Two sets, counted apart:

* the course's 11 focused tests (``tests/test_05_provider_adapter.py``), counted per practice
  step exactly as the chapter counts them (1/1, 3/3, 5/5, 2/2, 11/11);
* the checks "beyond the chapter" (``tests/test_05_beyond.py``), each tied to the last practice
  step it needs (its ``@pytest.mark.step``): it counts only once that step and every step
  before it pass, and is *pending* until then;
* the checks of the chapter's rules (``tests/test_05_rules.py``), run with the beyond checks and
  read per rule of ``pi_course/chapter/rules.py`` by :mod:`.rulestate`, and with them the
  comparison with the reference (``tests/test_05_compare.py``), each of its checks a rule's evidence.

Nothing here can hang: every test has a time bound (the runner's own pytest plugin,
:mod:`pi_course_check.plugin`, applies it; :mod:`pi_course_check.contract` holds what both sides
agree on) and each process has one too (``RUN_TIMEOUT``). What the process leaves behind (junit XML
with the plugin's facts, or its progress file when it had to be stopped) is read back by
:mod:`.results` into a :class:`~.facts.Report`; :mod:`.advice` turns it into next steps. Before the
tests, :mod:`.redlight` imports the tree alone.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

from ...chapter.steps import BEYOND_TEST, FOCUSED_TEST, STEPS, Step
from ..copies.locate import (
    beyond_test_file,
    compare_test_file,
    course_root,
    focused_test_file,
    rules_test_file,
)
from ..edition import CHECK_VERBOSE
from ..running import inkernel
from . import stepcache
from .facts import Report
from .import_failure import ERROR_LINE, blames_the_package, import_failure_from_text
from .plugin_path.pi_course_check.contract import (
    PLUGIN,
    PROGRESS_VARIABLE,
    REFERENCE_VARIABLE,
    STEPS_VARIABLE,
    TEST_TIMEOUT,
    TIMEOUT_VARIABLE,
    Fact,
    step_selection,
)
from .redlight import red_light
from .results import STEP_KEYWORDS, Case, collection_error, read_cases, read_progress, report_of
from .stubs import defined_functions, starter_forms

PLUGIN_PATH = Path(__file__).resolve().parent / "plugin_path"  # first on the test process's sys.path
RUN_TIMEOUT = 90.0  # seconds for each process (the red light's import, pytest), whatever happens inside it


def _environment(root: Path, progress: Path | None = None) -> dict[str, str]:
    env = dict(os.environ)
    # The plugin's folder holds nothing else, so the tree under test cannot shadow it.
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PLUGIN_PATH), str(root), env.get("PYTHONPATH")]))
    env.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    # Only the plugins the chapter's tests use (-p below): an installed plugin's package is otherwise
    # re-rewritten for pytest's assertions at every run (no bytecode is written), half a second.
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    env.setdefault(TIMEOUT_VARIABLE, f"{TEST_TIMEOUT:g}")
    if progress is not None:
        env[PROGRESS_VARIABLE] = str(progress)
    env.pop(REFERENCE_VARIABLE, None)  # set below only for `check` in a copy (stepcache.reference_file)
    # The same report everywhere: some kernels force colour, and pytest prints full, untruncated
    # assertion diffs when it sees a CI variable.
    for variable in ("FORCE_COLOR", "PY_COLORS", "CLICOLOR_FORCE", "CI", "BUILD_NUMBER"):
        env.pop(variable, None)
    return env


def run_tests(
    steps: tuple[Step, ...] = STEPS,
    path: str | Path | None = None,
    *,
    beyond: bool = False,
    verbose: bool = False,
    tests: Path | None = None,
    kept: bool = False,
) -> Report:
    """Run the focused tests of ``steps`` (with ``beyond``: their beyond checks, rules and comparisons too).

    ``tests`` is the folder holding the chapter's test files; by default the tree's own. ``kept``:
    steps whose results the copy keeps for its current content are not run again (:mod:`.stepcache`).
    """
    root = course_root(path)
    with inkernel.read_into_memory(root) as tree:  # in a browser tab: the copy's files, read once
        cache = root if kept and tree == root and not verbose else None
        report = _run_tests_in(tree, steps, beyond=beyond, verbose=verbose, tests=tests, cache=cache)
    return report if tree == root else replace(report, output=report.output.replace(str(tree), str(root)))


def _run_tests_in(
    root: Path,
    steps: tuple[Step, ...],
    *,
    beyond: bool,
    verbose: bool,
    tests: Path | None,
    cache: Path | None,
) -> Report:
    red = red_light(root, _environment(root))
    if red is not None:
        return red
    test_file = focused_test_file(tests or root)
    files = [test_file]
    beyond_file = beyond_test_file(tests or root) if beyond else None
    beyond_note = None
    if beyond and beyond_file is None:
        beyond_note = f"本章之外的检查：没有找到 tests/{BEYOND_TEST}，跳过"
    if beyond_file is not None:
        files.append(beyond_file)
    rules_file = rules_test_file(tests or root) if beyond else None
    if rules_file is not None:
        files.append(rules_file)
        compare_file = compare_test_file(tests or root)
        if compare_file is not None:  # read with the rule checks: each one is a rule's evidence
            files.append(compare_file)
    whole = beyond_file is not None and rules_file is not None  # a step's whole result: what is kept
    wanted = stepcache.entries(steps, apart=whole)  # a step's, and its comparisons kept apart
    keys = stepcache.step_keys(cache) if cache is not None else {}
    found = stepcache.load(cache, {name: keys[name] for name in wanted}) if cache else {}
    if not whole:  # focused tests alone: a kept step gives its focused tests
        found = {name: [case for case in cases if case.file == FOCUSED_TEST] for name, cases in found.items()}
    missing = set(wanted) - set(found)
    to_run = tuple(step for step in steps if any(name.partition("/")[0] == step.number for name in missing))
    running = {step.number for step in to_run}
    # A kept entry of a step that runs again (its comparison changed, or the rest of it): not run again.
    skip = sorted(
        {case.name for name, kept in found.items() if name.partition("/")[0] in running for case in kept}
    )
    cases = [case for kept in found.values() for case in kept]
    output = ""
    if to_run:
        ran = _pytest(
            root,
            files,
            to_run,
            test_file.parent,
            verbose=verbose,
            with_beyond=beyond_file is not None,
            skip=skip,
            kept=cache,
        )
        if isinstance(ran, Report):
            return replace(ran, rule_checks=ran.rule_checks if rules_file is not None else None)
        fresh, output = ran
        cases += fresh
        if cache is not None and whole and "Interrupted: " not in output:  # a stopped session keeps nothing
            entries: dict[str, list[Case]] = {name: [] for name in missing}
            for case in fresh:
                entries.setdefault(stepcache.group_of(case), []).append(case)
            kept_now = {name: got for name, got in entries.items() if name in missing and _timeless(got)}
            stepcache.store(cache, keys, kept_now)
    report = report_of(cases, steps, with_beyond=beyond_file is not None)
    stopped = None
    interrupted = re.search(r"Interrupted: (.*?) !*$", output, re.MULTILINE)
    if interrupted:
        stopped = f"测试提前停止：{interrupted[1]}"
    return Report(
        report.passed,
        failures=report.failures,
        details=report.details,
        beyond=report.beyond,
        beyond_note=beyond_note,
        stopped=stopped,
        output=output,
        starter_forms=starter_forms(root),
        rule_checks=report.rule_checks if rules_file is not None else None,
        outcomes=report.outcomes,
        compared=report.compared,
        defined=defined_functions(root),
    )


def _timeless(cases: list[Case]) -> bool:
    """No test of the step ran past its bound: a result that depends on time is never kept."""
    return not any(Fact.TIMEOUT in case.properties for case in cases)


def _pytest(
    root: Path,
    files: list[Path],
    steps: tuple[Step, ...],
    rootdir: Path,
    *,
    verbose: bool,
    with_beyond: bool,
    skip: list[str] | None = None,
    kept: Path | None = None,
) -> tuple[list[Case], str] | Report:
    """One pytest process over ``steps``' tests (less those named in ``skip``): their cases and its
    report, or a Report saying why none. ``kept``: the copy whose reference observations it may keep."""
    with tempfile.TemporaryDirectory() as scratch:
        junit = Path(scratch) / "junit.xml"
        progress = Path(scratch) / "progress.jsonl"
        env = _environment(root, progress)
        env[STEPS_VARIABLE] = step_selection(STEP_KEYWORDS, [step.number for step in steps], skip or [])
        if kept is not None:
            env[REFERENCE_VARIABLE] = str(kept / stepcache.REFERENCE_FILE)
        command = [
            sys.executable, "-m", "pytest", *map(str, files),
            "-vv" if verbose else "-q", "-p", PLUGIN, "-p", inkernel.ANYIO_PLUGIN, "-p", "no:cacheprovider",
            "--rootdir", str(rootdir), "-o", "addopts=", "--color=no", "--code-highlight=no",
            f"--junitxml={junit}",
        ]  # fmt: skip
        returncode, output, _ = inkernel.run_python(command, root, env, RUN_TIMEOUT, merged=True)
        if returncode is None or not junit.exists():
            return read_progress(
                progress, steps, output, returncode, bound=RUN_TIMEOUT, with_beyond=with_beyond
            )
        collection = collection_error(junit)
        if collection is not None:  # nothing ran: say why in the red light's words
            blamed = blames_the_package(collection, root)
            line = import_failure_from_text(collection, root) if blamed else _collection_failure(collection)
            return Report({}, line, import_error=blamed, output=output)
        return read_cases(junit), output


def _collection_failure(text: str) -> str:
    """A test file that does not import, for a reason outside pi_course."""
    errors = [found["error"] for line in text.splitlines() if (found := ERROR_LINE.match(line))]
    last = errors[-1] if errors else "（没有报告）"
    return f"聚焦测试无法收集：{last}。用 {CHECK_VERBOSE} 查看 pytest 的完整报告。"
