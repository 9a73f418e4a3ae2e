"""The project's own promises: the focused file, environment.yml in step with pyproject."""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).parent.parent
FOCUSED = ROOT / "tests" / "test_05_provider_adapter.py"


def requirement(spec: str) -> tuple[str, str]:
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


def test_environment_yml_names_the_same_packages_as_pyproject() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    declared = dict(
        requirement(spec) for spec in [*project["dependencies"], *project["optional-dependencies"]["lab"]]
    )
    declared |= {
        name: bound
        for name, bound in map(requirement, project["optional-dependencies"]["dev"])
        if name in ("pytest", "nbval")
    }

    lines = (ROOT / "environment.yml").read_text(encoding="utf-8").splitlines()
    after = lines[lines.index("dependencies:") + 1 :]
    conda = dict(requirement(line[4:]) for line in after if re.fullmatch(r"  - [a-z][^:]*", line))
    python = conda.pop("python")
    conda.pop("pip")
    assert conda == declared
    assert python == project["requires-python"]
    assert any('-e ".[lab,dev]"' in line for line in lines)
