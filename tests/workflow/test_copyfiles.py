"""A practice copy's files from a notebook (``reset``, ``download_copy``) and LEARNING.md's two editions."""

from __future__ import annotations

import json
import re
import zipfile
from pathlib import Path

import pytest

from pi_course.course.copies.practice import create_practice, learning_md
from pi_course.notebook.copyfiles import CopyFileError, download_copy, reset

ROOT = Path(__file__).parents[2]


@pytest.fixture(scope="module")
def copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return create_practice(tmp_path_factory.mktemp("copyfiles") / "mine")  # what `practice 05` makes


def test_reset_puts_back_only_the_named_file(copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    outbound, sse = copy / "pi_course" / "outbound.py", copy / "pi_course" / "sse.py"
    starter = outbound.read_text(encoding="utf-8")
    outbound.write_text(starter.replace("NotImplementedError", "ValueError"), encoding="utf-8")
    sse.write_text(sse.read_text(encoding="utf-8") + "# my note\n", encoding="utf-8")
    reset("outbound.py", start=copy / "notebooks")
    assert outbound.read_text(encoding="utf-8") == starter
    assert sse.read_text(encoding="utf-8").endswith("# my note\n")
    said = capsys.readouterr().out
    assert "已把 pi_course/outbound.py 恢复成起点版本" in said and "重启内核" in said
    reset("pi_course/outbound.py", start=copy)
    assert "本来就是起点版本" in capsys.readouterr().out


def test_reset_refuses_a_file_the_starter_does_not_have(copy: Path) -> None:
    with pytest.raises(CopyFileError, match="不是练习副本起点里的文件"):
        reset("pi_course/mine.py", start=copy)
    with pytest.raises(CopyFileError, match="不在练习副本里"):
        reset("outbound.py", start=ROOT / "notebooks")


def test_download_copy_zips_the_copy_with_the_learners_edits(copy: Path) -> None:
    edited = copy / "pi_course" / "adapter.py"
    edited.write_text(edited.read_text(encoding="utf-8") + "# edited by the learner\n", encoding="utf-8")
    (copy / "pi_course" / "__pycache__").mkdir(exist_ok=True)
    (copy / "pi_course" / "__pycache__" / "x.pyc").write_bytes(b"\0")
    target = download_copy(start=copy)
    assert target is not None and target.parent == copy.parent
    with zipfile.ZipFile(target) as archive:
        names = archive.namelist()
        assert (
            archive.read(f"{copy.name}/pi_course/adapter.py").decode().endswith("# edited by the learner\n")
        )
        json.loads(archive.read(f"{copy.name}/notebooks/05-1-outbound.ipynb"))
    assert f"{copy.name}/LEARNING.md" in names
    assert not any("__pycache__" in name for name in names)


def test_learning_md_editions_name_what_each_can_run() -> None:
    terminal, browser = learning_md("terminal"), learning_md("browser")
    for text in (terminal, browser):
        assert not re.search(r"@[A-Z_]+@|<!-- (BEGIN|END) (terminal|browser)", text)
    assert "python -m pi_course check 05 --step 5.1" in terminal and "reset(" not in terminal
    assert 'check(step="5.1")' in browser and "reset(" in browser and "download_copy()" in browser
    # The browser's only terminal commands are under "带回本地" (a local install after the download).
    local = browser.index("## 带回本地")
    outside = browser[:local] + browser[browser.index("\n## ", local + 1) :]
    assert "python -m pi_course" not in outside
    index = json.loads((ROOT / "pi_course" / "provider" / "recordings" / "index.json").read_text())
    providers = len({entry["provider"] for entry in index["recordings"] if entry["provider"]})
    for text in (terminal, browser):
        assert re.findall(r"(\d+) 家真实 provider", text) == [str(providers)]
