"""Install as written: the README promises nothing an index cannot deliver, and the release is ready.

pi-course is not on PyPI yet. The README must not tell anyone to ``pip install pi-course`` by name;
what it does say (a clone, a wheel built by ``make dist``) must match the project's version and
what the wheel holds. The release workflow publishes by trusted publishing on a tag.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def test_the_readme_installs_from_a_clone_or_a_wheel_never_from_an_index() -> None:
    by_name = re.findall(r"pip install [\"']?pi-course\b", README)
    assert by_name == [], by_name
    assert "not on PyPI yet" in README and "还没有发布到 PyPI" in README
    assert 'pip install ".[lab]"' in README
    wheels = set(re.findall(r"pi_course-([\w.]+)-py3-none-any\.whl", README))
    assert wheels == {PROJECT["version"]}


def test_the_release_workflow_publishes_by_trusted_publishing_on_a_tag() -> None:
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "release.yml").read_text(encoding="utf-8"))
    assert workflow[True] == {"push": {"tags": ["v*"]}}  # YAML 1.1 reads the key `on` as True
    publish = workflow["jobs"]["publish"]
    assert publish["environment"]["name"] == "pypi"
    assert publish["permissions"] == {"id-token": "write"}
    assert [step["uses"] for step in publish["steps"]][-1] == "pypa/gh-action-pypi-publish@release/v1"
    assert "password" not in str(publish) and "token" not in str(publish).replace("id-token", "")
    assert workflow["permissions"] == {"contents": "read"}


@pytest.mark.slow
def test_the_wheel_carries_grade_and_the_copy_workflow(tmp_path: Path) -> None:
    built = subprocess.run(
        [sys.executable, "-m", "hatchling", "build", "-t", "wheel", "-d", str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr
    [wheel] = tmp_path.glob(f"pi_course-{PROJECT['version']}-py3-none-any.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for name in ("pi_course/course/grade/runner.py", "pi_course/course/running/sandbox.py",
                 "pi_course/course/copies/templates/classroom.yml"):  # fmt: skip
        assert name in names
