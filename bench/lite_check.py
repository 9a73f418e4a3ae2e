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
import functools
import importlib.util
import json
import os
import shutil
import sys
import tempfile
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = Path("/usr/bin/chromium")
NOTEBOOK = "practice/notebooks/05-1-outbound.ipynb"
TIMED = (
    "import time\nfrom pi_course.course.check import check\n"
    "_started = time.perf_counter()\n_ok = check(beyond=True)\n"
    "print('SECONDS', round(time.perf_counter() - _started, 2), 'DONE' if _ok else 'NOT DONE')"
)
# The page's own editor and a cell appended and run (as tests/browser/test_lite.py drives them).
EDIT = """async ([path, text]) => {
  const app = window.jupyterapp, notebook = app.shell.currentWidget;
  const editor = await app.commands.execute('docmanager:open', {path, factory: 'Editor'});
  await editor.context.ready;
  editor.context.model.sharedModel.setSource(text);
  await editor.context.save();
  editor.close();
  if (notebook) app.shell.activateById(notebook.id);
}"""
APPEND_AND_RUN = """async (source) => {
  const app = window.jupyterapp, panel = app.shell.currentWidget;
  await panel.context.ready;
  await panel.sessionContext.ready;
  const notebook = panel.content;
  notebook.activeCellIndex = notebook.model.cells.length - 1;
  await app.commands.execute('notebook:insert-cell-below');
  notebook.activeCell.model.sharedModel.setSource(source);
  await app.commands.execute('notebook:run-cell');
  const outputs = notebook.activeCell.model.outputs.toJSON();
  return outputs.map(o => o.text ? [].concat(o.text).join('') : JSON.stringify(o)).join('\\n');
}"""


def handler_for(site: Path) -> type[SimpleHTTPRequestHandler]:
    class Handler(SimpleHTTPRequestHandler):
        """The site as files, the app exposed as ``window.jupyterapp`` (as the lite tests do)."""

        def do_GET(self) -> None:
            path = urlsplit(self.path).path
            if path.endswith("/jupyter-lite.json") and path.count("/") == 1:
                config = json.loads((site / "jupyter-lite.json").read_text())
                config["jupyter-config-data"]["exposeAppInBrowser"] = "true"
                body = json.dumps(config).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return
            super().do_GET()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


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


def one_round(chromium: Any, base: str, files: dict[str, str]) -> list[float]:
    """A fresh page: ada's files saved, then check(beyond=True) twice in one kernel; its seconds."""
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
        page.evaluate(APPEND_AND_RUN, "import pi_course")
        seconds = []
        for _ in range(2):
            printed = page.evaluate(APPEND_AND_RUN, TIMED)
            line = next((row for row in printed.splitlines() if row.startswith("SECONDS")), None)
            if line is None or not line.endswith(" DONE"):
                raise SystemExit(f"check in the tab did not say 完成:\n{printed[-2000:]}")
            seconds.append(float(line.split()[1]))
        return seconds
    finally:
        page.close()
        context.close()


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
        return str(page.evaluate(APPEND_AND_RUN, DRAWS))
    finally:
        page.close()
        context.close()


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
