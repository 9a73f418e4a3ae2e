"""The README's command blocks, pasted as written into a fresh shell in the clone, in order.

A newcomer's shell after ``make lab``: a new ``HOME``, a ``PATH`` without ``.venv/bin`` (here maybe
no ``python`` at all), each block in a new bash started in the clone. Every line runs as written
and must do its job: no traceback, no "command not found", no "No module named"; ``check`` on a
fresh copy may answer 1 (its verdict is 未完成). A line that serves (``serve``, JupyterLab) runs
until it prints its address, then is stopped. ``make`` lines are left to their own tests
(test_make_lab.py for ``make lab``; ``make test``, ``make lite`` are CI's own steps); as root the
JupyterLab line gets the ``--allow-root`` the README tells root to add.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
README = ROOT / "README.md"
SERVES = {"pi_course serve": "http://127.0.0.1:", "jupyter lab": "?token="}  # what it prints once up


def blocks(text: str) -> list[list[str]]:
    """Every ```bash block of the README: its lines, comments and blank lines dropped."""
    found = re.findall(r"```bash\n(.*?)```", text, flags=re.DOTALL)
    return [[line for line in (_command(raw) for raw in block.splitlines()) if line] for block in found]


def _command(line: str) -> str:
    """A line without its trailing comment (a ``#`` after two spaces)."""
    return re.split(r"\s{2,}#", line, maxsplit=1)[0].strip() if not line.lstrip().startswith("#") else ""


@dataclass
class Ran:
    line: str
    code: int
    output: str


def script(lines: list[str], out: Path) -> str:
    """The block as one bash script: each line as written, its output and status kept apart."""
    parts = [
        "set -m",  # each background job its own process group: a server and its children stop together
        f"cd {shlex.quote(str(ROOT))}",
        "served() {  # $1: the log, $2: what the server prints once up, $3: its pid",
        '  for _ in $(seq 1200); do grep -qF -- "$2" "$1" && break; kill -0 "$3" 2>/dev/null || break; sleep 0.2; done',
        '  kill -INT -- -"$3" 2>/dev/null; sleep 1; kill -TERM -- -"$3" 2>/dev/null; wait "$3"; return 0',
        "}",
    ]
    for index, line in enumerate(lines):
        log = shlex.quote(str(out / f"{index}.log"))
        ready = next((text for marker, text in SERVES.items() if marker in line), None)
        if ready is None:
            parts.append(f"{{ {line}\n}} > {log} 2>&1; echo $? > {log}.rc")
        else:
            parts.append(
                f"{{ {line}\n}} > {log} 2>&1 & served {log} {shlex.quote(ready)} $!; echo 0 > {log}.rc"
            )
    return "\n".join(parts) + "\n"


def paste(lines: list[str], home: Path, out: Path) -> list[Ran]:
    out.mkdir(parents=True, exist_ok=True)
    env = {
        "HOME": str(home),
        "PATH": "/usr/local/bin:/usr/bin:/bin",  # a fresh shell: no .venv/bin
        "LANG": os.environ.get("LANG", "C.UTF-8"),
        "TERM": "dumb",
        "BROWSER": "true",  # JupyterLab "opens" the page with a command that does nothing
    }
    subprocess.run(["bash", "-c", script(lines, out)], env=env, cwd=ROOT, timeout=900, check=False)
    return [
        Ran(line, int((out / f"{index}.log.rc").read_text() or "99"), (out / f"{index}.log").read_text())
        for index, line in enumerate(lines)
    ]


def as_root(line: str) -> str:
    """The README says root adds ``--allow-root`` to the JupyterLab line."""
    return f"{line} --allow-root" if "jupyter lab" in line and os.geteuid() == 0 else line


@pytest.mark.slow
@pytest.mark.workflow  # a copy made, checked, opened and graded: make workflows
def test_every_readme_block_works_pasted_into_a_fresh_shell(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    pasted = [
        [as_root(line) for line in block if not line.startswith("make ")]
        for block in blocks(README.read_text())
    ]
    learner, instructor, provider = (
        next(block for block in pasted if any(key in line for line in block))
        for key in ("practice 05", "grade 05", "pi_course serve")
    )
    ran: dict[str, Ran] = {}
    for name, block in (("learner", learner), ("instructor", instructor), ("provider", provider)):
        assert block, name
        for result in paste(block, home, tmp_path / name):
            for bad in (
                "Traceback",
                "command not found",
                "No module named",
                "没有安装 pi-course",
                "：错误：",
            ):
                assert bad not in result.output, f"{result.line}\n{result.output}"
            ran[result.line] = result

    def one(end: str) -> Ran:
        """The one line that ends with ``end`` (the JupyterLab line: that contains it)."""
        [found] = [
            result for line, result in ran.items() if line.endswith(end) or ("jupyter" in end and end in line)
        ]
        return found

    assert learner[0] == "source .venv/bin/activate"
    made = one("practice 05 ~/pi-05")
    assert made.code == 0 and f"练习目录已创建：{home / 'pi-05'}" in made.output, made.output
    assert (home / "pi-05" / "LEARNING.md").is_file()
    first = one("check 05")  # a fresh copy: its first red light, as the README says
    assert first.code == 1 and first.output.strip().splitlines()[-1].startswith(
        "第 05 章：未完成——第一次红灯"
    )
    step = one("--step 5.1")
    assert step.code == 1 and "实践 5.1" in step.output.strip().splitlines()[-1], step.output
    rules = one("--rules")
    assert rules.code == 1 and rules.output.startswith("本章规则：0/"), rules.output
    lab = one("jupyter lab")
    assert "/lab/tree/notebooks/05-0-overview.ipynb?token=" in lab.output, lab.output
    assert f"Serving notebooks from local directory: {home / 'pi-05'}" in lab.output, lab.output

    record = one("--path ~/pi-05 --json")
    assert record.code == 1 and json.loads(record.output.strip().splitlines()[-1])["status"] == "incomplete"
    graded = one("--json ~/class.json")
    assert graded.code == 0, graded.output
    rows = json.loads((home / "class.json").read_text(encoding="utf-8"))
    assert [row["name"] for row in rows] == ["ada"] and (home / "class.html").is_file()
    assert (home / "class.csv").read_text(encoding="utf-8-sig").startswith("student,")

    assert "pi_course 本地 provider：http://127.0.0.1:8765/v1" in one("pi_course serve").output
    chat = one("chat 读取 README.md")
    assert chat.code == 0 and "toolcall_end   #0 read" in chat.output, chat.output
