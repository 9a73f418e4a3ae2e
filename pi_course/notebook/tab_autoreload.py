"""Autoreload in a browser tab, without a request to the page for each lesson file.

Before every cell autoreload asks for the time of each lesson file it loaded, and for each new
module it reads the source once (for its "deduper"); in a tab each ask is a request to the page
(5-17 ms). JupyterLite keeps every file the learner saved in IndexedDB (database ``JupyterLite
Storage - <baseUrl>``, store ``files``, keyed by path, with its ``last_modified``); a file never
saved is the site's own and keeps its time. So one read of that store (about 3 ms) gives every
lesson file's time, and the copy's finder already holds the source each module was compiled from.
Both lean on what IPython and JupyterLite do not promise (the reloader's methods, the store's
layout): when either fails, autoreload asks as before, and says so once on stderr, with the error.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from types import ModuleType
from typing import Any

from pi_course_here import BROWSER_STORAGE, compiled_source, in_a_tab

Times = tuple[str | None, float | None]
# The saved files under a path prefix, {path: last_modified}; null when this site has no storage.
READ_SAVED = """async (prefix) => {
  const lite = 'JupyterLite Storage - ';
  const names = (await indexedDB.databases()).map((found) => found.name)
    .filter((name) => name.startsWith(lite))
    .filter((name) => [location.pathname, location.href].some((at) => at.startsWith(name.slice(lite.length))))
    .sort((a, b) => b.length - a.length);
  if (names.length === 0) return null;
  const db = await new Promise((ok, failed) => {
    const opening = indexedDB.open(names[0]);
    opening.onsuccess = () => ok(opening.result);
    opening.onerror = () => failed(opening.error);
  });
  try {
    if (!db.objectStoreNames.contains('files')) return null;
    const found = {};
    const files = db.transaction('files', 'readonly').objectStore('files');
    await new Promise((ok, failed) => {
      const reading = files.openCursor(IDBKeyRange.bound(prefix, prefix + '\\uffff'));
      reading.onsuccess = () => {
        const at = reading.result;
        if (!at) return ok();
        found[at.key] = at.value.last_modified;
        at.continue();
      };
      reading.onerror = () => failed(reading.error);
    });
    return found;
  } finally {
    db.close();
  }
}"""


def read_saved(prefix: str) -> dict[str, str] | None:
    """``{path: last_modified}`` of the files saved under ``prefix``, in one read of the tab's storage."""
    from pyodide.code import run_js  # type: ignore[import-not-found]
    from pyodide.ffi import run_sync  # type: ignore[import-not-found]

    found = run_sync(run_js(f"({READ_SAVED})")(prefix))
    return None if found is None else dict(found.to_py())


class SavedTimes:
    """An autoreload ``ModuleReloader`` whose times for the files in ``folder`` (in ``storage``) come
    from one read of the saved files per check (it wraps ``check`` and ``filename_and_mtime``)."""

    def __init__(
        self,
        reloader: Any,
        folder: Path,
        storage: Path = BROWSER_STORAGE,
        read: Callable[[str], dict[str, str] | None] = read_saved,
    ) -> None:
        self.storage, self._read = storage, read
        self.folder = folder
        self._stat: Callable[[ModuleType], Times] = reloader.filename_and_mtime
        self._check: Callable[..., Any] = reloader.check
        self._checking = False
        self._saved: dict[str, float] | None = None  # read as the last check began: key → its time
        self._site: dict[str, float] = {}  # a file never saved: the site's own, whose time stays
        reloader.filename_and_mtime, reloader.check = self.filename_and_mtime, self.check
        reloader.saved_times = self

    @property
    def folder(self) -> Path:
        return self._folder

    @folder.setter
    def folder(self, folder: Path) -> None:
        self._folder = folder
        self._inside = f"{folder}{os.sep}"  # plain strings: a Path per module costs 30 ms a cell
        self._key = f"{folder.relative_to(self.storage).as_posix()}/"  # the storage's key prefix

    def check(self, *args: Any, **kwargs: Any) -> Any:
        self._checking, self._saved = True, self.saved_now()
        try:
            return self._check(*args, **kwargs)
        finally:
            # The cell's new modules take their times from this read too: a file saved during the
            # cell is then newer than the time kept for it, and the next check reloads it.
            self._checking = False

    def filename_and_mtime(self, module: ModuleType) -> Times:
        file = getattr(module, "__file__", None)
        if not (isinstance(file, str) and file.startswith(self._inside) and file.endswith(".py")):
            return self._stat(module)  # not a lesson file (most of sys.modules: this runs for each)
        if not self._checking and self._saved is None:  # no read before this cell (the first one)
            self._saved = self.saved_now()
        saved = self._saved
        if saved is None:
            return self._stat(module)
        key = self._key + file.removeprefix(self._inside)
        if key in saved:
            return file, saved[key]
        if file not in self._site:
            name, time = self._stat(module)
            if time is None:
                return name, time
            self._site[file] = time
        return file, self._site[file]

    def saved_now(self) -> dict[str, float] | None:
        try:
            found = self._read(self._key)
            return None if found is None else {key: _seconds(when) for key, when in found.items()}
        except Exception as error:  # no IndexedDB, no stack switching, a time it cannot read: stat as before
            self._read = lambda prefix: None
            falls_back("the saved files' times cannot be read", error)
            return None


def _seconds(when: str) -> float:
    """An ISO time as the seconds a ``stat`` of that file gives (whole milliseconds, as JavaScript)."""
    return round(datetime.fromisoformat(when).timestamp() * 1000) / 1000


def known_sources(deduper: Any) -> None:
    """IPython's deduperreload reads each new module's source; a module the copy's finder read gets
    the source it was compiled from instead (it wraps ``update_sources``)."""
    update = deduper.update_sources

    def update_sources() -> None:
        for name, module in list(sys.modules.items()):
            if name not in deduper.source_by_modname and (source := compiled_source(module)) is not None:
                deduper.source_by_modname[name] = source
        update()

    deduper.update_sources = update_sources


def autoreload_in_a_tab(reloader: Any, folder: Path) -> None:
    """In a browser tab, ``reloader`` (autoreload's) asks the page nothing about the lesson files in
    ``folder`` (installed once; a later call moves it to ``folder``); elsewhere it stays as it is."""
    installed = getattr(reloader, "saved_times", None)
    if not in_a_tab() or not folder.is_relative_to(BROWSER_STORAGE):
        return
    if isinstance(installed, SavedTimes):
        installed.folder = folder
        return
    try:
        SavedTimes(reloader, folder)
        if getattr(reloader, "deduper_reloader", None) is not None:  # IPython 9
            known_sources(reloader.deduper_reloader)
    except AttributeError as error:  # an IPython whose reloader has other methods: leave it as it is
        falls_back("IPython's autoreloader is not the one this wraps", error)


_SAID: set[str] = set()  # the reasons already said in this kernel


def falls_back(why: str, error: BaseException) -> None:
    """Say once, on stderr, that autoreload in this tab asks the page about each file again, and why."""
    if why in _SAID:
        return
    _SAID.add(why)
    print(
        f"pi_course: autoreload in this tab asks the page about each lesson file before every cell "
        f"(slower): {why} ({type(error).__name__}: {error})",
        file=sys.stderr,
    )
