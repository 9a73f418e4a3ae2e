"""The project's own promises: the focused file, environment.yml in step with pyproject."""

from __future__ import annotations

import ast
import importlib.metadata
import json
import re
import sys
import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).parents[2]
FOCUSED = ROOT / "tests" / "test_05_provider_adapter.py"


def requirement(spec: str) -> tuple[str, str]:
    """A requirement's name and version bound (its environment marker left out)."""
    spec = spec.partition(";")[0]
    name, bound = re.fullmatch(r"([A-Za-z0-9_.-]+)\s*(.*)", spec.strip()).groups()  # type: ignore[union-attr]
    return name.lower().replace("_", "-"), bound.replace(" ", "")


def test_the_focused_file_holds_the_eleven_tests_and_nothing_else() -> None:
    tree = ast.parse(FOCUSED.read_text(encoding="utf-8"))
    tests = [
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test")
    ]
    counts = {
        key: sum(name.startswith(f"test_{key}") for name in tests)
        for key in ("outbound", "normalized_transport", "sse", "fetch_transport")
    }
    assert counts == {"outbound": 1, "normalized_transport": 3, "sse": 5, "fetch_transport": 2}
    assert len(tests) == 11
    # `-k` matches substrings: no test may answer to another step's keyword.
    for key in counts:
        assert sum(key in name.lower() for name in tests) == counts[key], key


def extras() -> tuple[dict[str, Any], dict[str, list[str]]]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return project, project["optional-dependencies"]


def test_environment_yml_names_the_same_packages_as_pyproject() -> None:
    project, optional = extras()
    declared = dict(requirement(spec) for spec in [*project["dependencies"], *optional["lab"]])

    lines = (ROOT / "environment.yml").read_text(encoding="utf-8").splitlines()
    after = lines[lines.index("dependencies:") + 1 :]
    conda = dict(requirement(line[4:]) for line in after if re.fullmatch(r"  - [a-z][^:]*", line))
    python = conda.pop("python")
    conda.pop("pip")
    assert conda == declared
    assert python == project["requires-python"]
    assert any('-e ".[lab]"' in line for line in lines)


def test_lab_is_all_a_learner_needs_and_dev_adds_the_contributors_tools() -> None:
    _, optional = extras()
    lab = {requirement(spec)[0] for spec in optional["lab"]}
    dev = {requirement(spec)[0] for spec in optional["dev"]}
    # `check` runs pytest (with anyio's plugin) and compares on inputs hypothesis generates;
    # instructors run nbval; the notebooks compare against httpx-sse and openai-python; the local
    # provider needs the [serve] extra.
    assert {
        "pytest",
        "anyio",
        "hypothesis",
        "nbval",
        "httpx-sse",
        "openai",
        "jupyterlab",
        "ipywidgets",
    } <= lab
    assert {requirement(spec)[0] for spec in optional["serve"]} <= lab
    assert "pi-course[lab]" in optional["dev"]
    assert {"ruff", "mypy", "playwright", "hatchling", "pytest-xdist"} <= dev
    assert not (lab & dev)


def third_party_imports(source: str) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names - set(sys.stdlib_module_names) - {"pi_course", "pi_course_here", "__future__"}


def test_every_module_a_learner_runs_is_installed_by_lab() -> None:
    """The package, every notebook and the files `check` runs import only base and [lab] packages."""
    sources = [path.read_text(encoding="utf-8") for path in (ROOT / "pi_course").rglob("*.py")]
    sources += [
        (ROOT / "tests" / name).read_text(encoding="utf-8")
        for name in ("conftest.py", "test_05_provider_adapter.py", "test_05_beyond.py", "test_05_rules.py")
        if (ROOT / "tests" / name).is_file()
    ]
    for notebook in (ROOT / "notebooks").glob("*.ipynb"):
        cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
        for cell in cells:
            if cell["cell_type"] == "code":
                code = "".join(cell["source"])
                # IPython magics are not Python: drop %/! lines before parsing.
                sources.append(
                    "\n".join(line for line in code.splitlines() if not line.lstrip().startswith(("%", "!")))
                )
    modules = set().union(*map(third_party_imports, sources))

    project, optional = extras()
    allowed = {requirement(spec)[0] for spec in [*project["dependencies"], *optional["lab"]]}
    allowed |= {"ipython", "ipykernel", "nbformat", "nbclient", "jupyter-client"}  # come with jupyterlab
    allowed |= {
        "pyodide"
    }  # the browser runtime's own module, imported only there (course/running/inkernel.py)
    distributions = importlib.metadata.packages_distributions()
    missing = {
        module: distributions.get(module, [module])
        for module in modules
        if not {name.lower() for name in distributions.get(module, [module])} & allowed
    }
    assert missing == {}


def test_the_browser_edition_carries_the_hypothesis_release_lab_pins() -> None:
    """check's generated inputs come from one hypothesis release everywhere: the same verdict in a tab."""
    _, optional = extras()
    pinned = [spec for spec in optional["lab"] if spec.startswith("hypothesis")]
    assert len(pinned) == 1 and "==" in pinned[0], pinned
    lite = (Path(__file__).parents[2] / "tools" / "lite" / "requirements.txt").read_text(encoding="utf-8")
    assert pinned[0] in lite.splitlines()


def test_jupyterlab_saves_widget_state_wherever_the_course_is_installed_and_in_the_tab() -> None:
    """A stepper saved, closed and reopened comes back from the saved state (browser test:
    ``test_a_notebook_saved_closed_and_reopened_shows_its_stepper_again``): the wheel puts the
    default where JupyterLab reads packages' defaults, and the browser edition's overrides say it too."""
    from jupyterlab_server.settings_utils import _get_overrides

    plugin = "@jupyter-widgets/jupyterlab-manager:plugin"
    schema = Path(sys.prefix, "share/jupyter/labextensions/@jupyter-widgets/jupyterlab-manager")
    schema = schema / "schemas/@jupyter-widgets/jupyterlab-manager/plugin.json"
    assert "saveState" in json.loads(schema.read_text(encoding="utf-8"))["properties"]
    shared = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["hatch"]["build"]
    [(source, target)] = shared["targets"]["wheel"]["shared-data"].items()
    assert target == "etc/jupyter/labconfig/default_setting_overrides.d/pi-course.json"
    assert json.loads((ROOT / source).read_text(encoding="utf-8")) == {plugin: {"saveState": True}}
    installed, error = _get_overrides(str(ROOT / "build" / "no-app-settings"))
    assert not error and installed.get(plugin) == {"saveState": True}, "re-run make: .venv predates it"
    lite = json.loads((ROOT / "tools" / "lite" / "overrides.json").read_text(encoding="utf-8"))
    assert lite[plugin] == {"saveState": True}
