"""Autoreload's times in a browser tab: one read of the saved files per cell instead of a stat per file."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest

from pi_course.notebook import freshness, tab_autoreload
from pi_course.notebook.tab_autoreload import SavedTimes, known_sources
from pi_course_here import SourceRead

STORAGE = Path("/drive")
FOLDER = STORAGE / "practice" / "pi_course"
SITE_TIME = 1796426778.936  # what a stat of a file never saved gives (the site's own)


def module(path: Path) -> ModuleType:
    found = ModuleType(path.stem)
    found.__file__ = str(path)
    return found


ADAPTER, SEAM, HELPER = (
    module(FOLDER / "adapter.py"),
    module(FOLDER / "seam.py"),
    module(FOLDER.parent / "helper.py"),
)


class Reloader:
    """The two methods of IPython's ``ModuleReloader`` that SavedTimes wraps, stat'ing a fake disk."""

    def __init__(self, disk: dict[str, float]) -> None:
        self.disk = disk
        self.stats: list[str] = []

    def filename_and_mtime(self, found: ModuleType) -> tuple[str | None, float | None]:
        assert found.__file__ is not None
        self.stats.append(Path(found.__file__).name)
        time = self.disk.get(found.__file__)
        return (found.__file__, time) if time is not None else (None, None)

    def check(self) -> list[tuple[str | None, float | None]]:
        return [self.filename_and_mtime(found) for found in (ADAPTER, SEAM, HELPER)]


class Storage:
    """The saved files a read of the tab's storage returns; counts the reads."""

    def __init__(self, saved: dict[str, str] | Exception | None) -> None:
        self.saved, self.reads = saved, 0

    def __call__(self, prefix: str) -> dict[str, str] | None:
        self.reads += 1
        assert prefix == "practice/pi_course/"
        if isinstance(self.saved, Exception):
            raise self.saved
        if self.saved is None:
            return None
        return {key: when for key, when in self.saved.items() if key.startswith(prefix)}


def wrapped(disk: dict[str, float], storage: Any) -> Reloader:
    reloader = Reloader(disk)
    SavedTimes(reloader, FOLDER, STORAGE, storage)
    return reloader


def test_saved_files_take_their_time_from_one_read_and_the_sites_own_files_one_stat() -> None:
    disk = {str(ADAPTER.__file__): 1.0, str(SEAM.__file__): SITE_TIME, str(HELPER.__file__): 7.0}
    storage = Storage({"practice/pi_course/adapter.py": "2026-12-04T23:39:05.959Z", "practice/x.py": "…"})
    reloader = wrapped(disk, storage)
    first = reloader.check()
    assert first == [
        (ADAPTER.__file__, 1796427545.959),  # as a stat of the saved file gives it, to the millisecond
        (SEAM.__file__, SITE_TIME),
        (HELPER.__file__, 7.0),  # outside the lesson folder: a stat, always
    ]
    assert (storage.reads, reloader.stats) == (1, ["seam.py", "helper.py"])
    assert reloader.check() == first
    assert (storage.reads, reloader.stats) == (2, ["seam.py", "helper.py", "helper.py"])  # seam: remembered

    assert isinstance(storage.saved, dict)
    storage.saved["practice/pi_course/seam.py"] = "2026-12-05T00:00:00.001Z"  # the learner saves seam.py
    del storage.saved["practice/pi_course/adapter.py"]  # and resets adapter.py (deleted: the site's again)
    assert reloader.check()[:2] == [(ADAPTER.__file__, 1.0), (SEAM.__file__, 1796428800.001)]


def test_a_cells_new_modules_take_their_times_from_the_read_before_it() -> None:
    """A module first imported in a cell keeps the time read before that cell: a save during the cell
    (before or after the finder read the file) is newer, so the next check reloads the module."""
    storage = Storage({"practice/pi_course/adapter.py": "2026-12-04T23:39:05.959Z"})
    reloader = wrapped({str(SEAM.__file__): SITE_TIME}, storage)
    reloader.check()  # before the cell
    assert isinstance(storage.saved, dict)
    storage.saved["practice/pi_course/adapter.py"] = "2026-12-05T00:00:00.001Z"  # saved during the cell
    assert reloader.filename_and_mtime(ADAPTER) == (ADAPTER.__file__, 1796427545.959)
    assert reloader.filename_and_mtime(SEAM) == (SEAM.__file__, SITE_TIME)
    assert storage.reads == 1  # no read after the cell
    assert reloader.check()[0] == (ADAPTER.__file__, 1796428800.001)  # newer: autoreload reloads it


def test_a_module_imported_before_any_check_takes_its_time_from_one_read() -> None:
    storage = Storage({"practice/pi_course/adapter.py": "2026-12-04T23:39:05.959Z"})
    reloader = wrapped({str(SEAM.__file__): SITE_TIME}, storage)
    assert reloader.filename_and_mtime(ADAPTER) == (ADAPTER.__file__, 1796427545.959)
    assert reloader.filename_and_mtime(SEAM) == (SEAM.__file__, SITE_TIME)
    assert storage.reads == 1


@pytest.mark.parametrize(
    ("saved", "reads"),
    [(None, 2), ({"practice/pi_course/adapter.py": "yesterday"}, 1), (RuntimeError("no JSPI"), 1)],
    ids=["not-this-sites-storage", "a-time-it-cannot-read", "no-stack-switching"],
)
def test_without_the_storage_autoreload_stats_each_file_as_before(saved: Any, reads: int) -> None:
    disk = {str(ADAPTER.__file__): 1.0, str(SEAM.__file__): 2.0, str(HELPER.__file__): 3.0}
    storage = Storage(saved)
    reloader = wrapped(disk, storage)
    for _ in range(2):
        assert reloader.check() == [(ADAPTER.__file__, 1.0), (SEAM.__file__, 2.0), (HELPER.__file__, 3.0)]
    assert reloader.stats == ["adapter.py", "seam.py", "helper.py"] * 2
    assert storage.reads == reads  # a read that failed once is not tried again


def test_a_fallback_is_said_once_on_stderr_with_its_error(capsys: pytest.CaptureFixture[str]) -> None:
    tab_autoreload._SAID.clear()
    for _ in range(2):  # two kernels' reloaders, each failing: one line
        reloader = wrapped({str(ADAPTER.__file__): 1.0}, Storage(RuntimeError("no JSPI")))
        reloader.check()
    said = capsys.readouterr().err.splitlines()
    assert len(said) == 1 and "cannot be read" in said[0] and "RuntimeError: no JSPI" in said[0]


def test_an_autoreloader_it_cannot_wrap_is_left_alone_and_said_once(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    tab_autoreload._SAID.clear()
    monkeypatch.setattr(sys, "platform", "emscripten")
    reloader = SimpleNamespace()  # an IPython whose reloader has no check or filename_and_mtime
    for _ in range(2):
        tab_autoreload.autoreload_in_a_tab(reloader, FOLDER)
    said = capsys.readouterr().err.splitlines()
    assert len(said) == 1 and "AttributeError" in said[0] and vars(reloader) == {}


def read_by_the_finder(name: str, path: Path, source: str) -> ModuleType:
    """A module as a copy's CopyFinder loads it: compiled from what it read, never read again."""
    spec = importlib.util.spec_from_file_location(
        name, path, loader=SourceRead(name, str(path), source.encode())
    )
    assert spec is not None and spec.loader is not None
    found = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(found)
    return found


def test_deduperreload_gets_the_source_the_finder_compiled_instead_of_reading_the_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    source = "VALUE = '读过一次'\n"
    found = read_by_the_finder("copy_lesson", tmp_path / "copy_lesson.py", source)  # no such file on disk
    monkeypatch.setitem(sys.modules, "copy_lesson", found)
    updated: list[bool] = []
    deduper = SimpleNamespace(source_by_modname={}, update_sources=lambda: updated.append(True))
    known_sources(deduper)
    deduper.update_sources()
    assert deduper.source_by_modname["copy_lesson"] == source and updated == [True]
    assert "json" not in deduper.source_by_modname  # not the finder's: deduperreload reads it as before


def test_the_first_look_at_a_lesson_files_dataclasses_is_the_source_it_was_compiled_from(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = tmp_path / "pi_course" / "protocol.py"  # never written: reading it would find nothing
    found = read_by_the_finder(
        "pi_course.protocol",
        path,
        "from dataclasses import dataclass\n\n@dataclass\nclass AgentContext:\n    tools: list\n",
    )
    monkeypatch.setitem(sys.modules, "pi_course.protocol", found)
    monkeypatch.setattr(freshness, "_parsed", {})
    assert freshness.field_mismatch(tmp_path, mtimes={"pi_course.protocol": 1.0}) is None
    assert freshness._parsed[path] == (1.0, {"AgentContext": {"tools"}})
