"""``check(beyond=True)`` in the browser tab, sites against the last one, as ratios measured in one run.

Each site (a ``build/lite`` made by ``make lite``; the other one from an earlier commit, built the
same way from ``git archive COMMIT``) is served on loopback and opened in Chromium, offline. In its
practice copy's 05-1 notebook ada's solution is written through the site's editor (each tree's own
learner), then ``check(beyond=True)`` runs twice in the same kernel: the first run imports pytest,
hypothesis and the checks; the second is a learner's next run. The two sites take turns, round
after round, so machine load falls on both; each figure is the best of its rounds (seconds of the
kernel's clock). Not part of ``make bench``: it needs two built sites (minutes each).

    .venv/bin/python bench/lite_check.py build/lite /tmp/old/build/lite --rounds 2 [--draws]
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import importlib.util
import os
import shutil
import sys
import tempfile
import threading
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "browser"))

from test_lite import APPEND_AND_RUN, EDIT, Handler, cell_texts, script  # noqa: E402 - as the lite tests drive a site

CHROMIUM = Path("/usr/bin/chromium")
NOTEBOOK = "practice/notebooks/05-1-outbound.ipynb"
TIMED = (
    "import time\nfrom pi_course.course.check import check\n"
    "_started = time.perf_counter()\n_ok = check(beyond=True)\n"
    "print('SECONDS', round(time.perf_counter() - _started, 2), 'DONE' if _ok else 'NOT DONE')"
)


def handler_for(site: Path) -> Any:
    """The lite tests' handler (the app exposed as ``window.jupyterapp``) serving ``site``."""
    handler = type("SiteHandler", (Handler,), {"served": []})
    return functools.partial(handler, directory=str(site))


def finished_files(site: Path, learners: Path) -> dict[str, str]:
    """ada's solution (``learners``: a tree's tests/workflow/learners) applied to the site's practice copy."""
    spec = importlib.util.spec_from_file_location(f"learners_{abs(hash(learners))}", learners / "__init__.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with tempfile.TemporaryDirectory() as scratch:
        shutil.copytree(site / "files" / "practice" / "pi_course", Path(scratch) / "pi_course")
        module.apply(Path(scratch), "ada")
        changed = {}
        for path in sorted((Path(scratch) / "pi_course").glob("*.py")):
            given = site / "files" / "practice" / "pi_course" / path.name
            if path.read_text(encoding="utf-8") != given.read_text(encoding="utf-8"):
                changed[f"practice/pi_course/{path.name}"] = path.read_text(encoding="utf-8")
    return changed


@contextlib.contextmanager
def practice_page(chromium: Any, base: str, files: dict[str, str]) -> Iterator[Any]:
    """A fresh page on the practice copy's 05-1, ``files`` saved through the site's editor."""
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    try:
        page.goto(f"{base}/lab/index.html?path={NOTEBOOK}")
        page.wait_for_function(
            "p => { const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;"
            " return w && w.context && w.context.path === p }",
            arg=NOTEBOOK,
            timeout=180_000,
        )
        for path, text in files.items():
            page.evaluate(EDIT, [path, text])
        yield page
    finally:
        page.close()
        context.close()


def appended(page: Any, source: str) -> str:
    """A cell appended to the notebook and run: what it printed."""
    return cell_texts(page.evaluate(script(APPEND_AND_RUN), source))[-1]


def one_round(chromium: Any, base: str, files: dict[str, str]) -> list[float]:
    """check(beyond=True) twice in one kernel of a fresh page holding ada's files: its seconds."""
    with practice_page(chromium, base, files) as page:
        appended(page, "import pi_course")
        seconds = []
        for _ in range(2):
            printed = appended(page, TIMED)
            line = next((row for row in printed.splitlines() if row.startswith("SECONDS")), None)
            if line is None or not line.endswith(" DONE"):
                raise SystemExit(f"check in the tab did not say 完成:\n{printed[-2000:]}")
            seconds.append(float(line.split()[1]))
        return seconds


DRAWS = """import json, sys
from pathlib import Path
from pi_course.course import drawn, inkernel, testrun
_root = Path('/drive/practice')
_env = testrun._environment(_root)
_env[drawn.SWITCH] = '/tmp/drawn-tab.json'
_command = [sys.executable, '-m', 'pytest', str(_root / 'tests' / 'test_05_compare.py'), '-q',
            '-p', 'pi_course_check.plugin', '-p', 'no:cacheprovider', '-o', 'addopts=']
_status, _output, _ = inkernel.run_python(_command, _root, _env, 900, merged=True)
_drawn = json.loads(Path('/tmp/drawn-tab.json').read_text())
_kept = json.loads(drawn.STORE.read_text())
_same = [where for where in _kept['drawings'] if _drawn['drawings'].get(where) == _kept['drawings'][where]]
print('DRAWS', _status, sys.version.split()[0], _drawn['facts'] == _kept['facts'],
      len(_same), 'of', len(_kept['drawings']), 'drawings the same')
print(_output[-1500:])"""


def draws(chromium: Any, base: str, files: dict[str, str]) -> str:
    """Hypothesis draws the comparisons' inputs in the tab (ada's copy passes them all): the same as kept?"""
    with practice_page(chromium, base, files) as page:
        return appended(page, DRAWS)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sites", nargs="+", type=Path, help="the sites, the one compared with last")
    parser.add_argument("--learners", nargs="+", type=Path, default=None, help="each tree's learners folder")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument(
        "--draws", action="store_true", help="also: do the tab's own draws equal the kept ones?"
    )
    args = parser.parse_args()
    sites: list[Path] = [site.resolve() for site in args.sites]
    learners = args.learners or [site.parents[1] / "tests" / "workflow" / "learners" for site in sites]
    files = [finished_files(site, folder) for site, folder in zip(sites, learners, strict=True)]
    servers = []
    for site in sites:
        server = ThreadingHTTPServer(
            ("127.0.0.1", 0), functools.partial(handler_for(site), directory=str(site))
        )
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
    from playwright.sync_api import sync_playwright

    figures: list[list[list[float]]] = [[] for _ in sites]
    print(f"check(beyond=True) in the tab; load average {os.getloadavg()[0]:.2f} (2 cores shared)")
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=str(CHROMIUM),
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
            ],
        )
        try:
            if args.draws:
                base = f"http://127.0.0.1:{servers[0].server_address[1]}"
                print(draws(chromium, base, files[0]), flush=True)
            for round_ in range(args.rounds):
                for index, server in enumerate(servers):
                    base = f"http://127.0.0.1:{server.server_address[1]}"
                    figures[index].append(one_round(chromium, base, files[index]))
                    print(f"  round {round_ + 1} {sites[index]}: {figures[index][-1]} s", flush=True)
        finally:
            chromium.close()
            for server in servers:
                server.shutdown()
    best = [[min(run[i] for run in runs) for i in (0, 1)] for runs in figures]
    for label, i in (("first check in a kernel", 0), ("next check", 1)):
        for site, figure in zip(sites[:-1], best, strict=False):
            ratio = figure[i] / best[-1][i]
            print(
                f"  {label:<24} {site}: {figure[i]:6.2f} s vs {best[-1][i]:6.2f} s: ratio {ratio:.2f} (goal ≤ 1)"
            )
    print(f"  load average {os.getloadavg()[0]:.2f}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
