"""Each step's last results, kept in the practice copy so a check re-runs only the steps that changed.

A step's entry holds the test cases its run left (:class:`.results.Case`: focused tests, beyond
checks, rule checks, comparisons), under a key made of the content of every file the step depends
on (the copy's ``pi_course/`` and ``tests/`` less the lesson files of later steps), the course's
version, the running check code and the Python. An entry is signed with a key kept outside the
copy (in the user's cache folder), so a forged, corrupt or stale entry is just not found: it can
only cost the time of running that step again. ``grade`` and ``check --path`` never read it.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import importlib.metadata
import json
import os
import secrets
import sys
from collections.abc import Iterable
from pathlib import Path

from ..chapter.steps import STEPS, Step
from .results import Case

CACHE_FILE = Path(".pi_course") / "check-cache.json"  # inside the copy, beside pi_course/ and tests/
FORMAT = 1
_RUNNING = Path(__file__).resolve().parent  # the check code doing the run (its plugin included)
_SKIPPED = {"__pycache__", ".hypothesis", ".pytest_cache"}


def _signing_key() -> bytes | None:
    """The user's own key, outside every copy; ``None`` when it cannot be kept (no cache then)."""
    home = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "pi_course"
    path = home / "check-key"
    with contextlib.suppress(OSError, ValueError):
        if not path.is_file():
            home.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w", encoding="ascii") as file:
                file.write(secrets.token_hex(32))
        key = path.read_text(encoding="ascii").strip()
        return bytes.fromhex(key) if len(key) == 64 else None
    return None


def _course_version() -> str:
    try:
        return importlib.metadata.version("pi-course")
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def _files(folder: Path) -> Iterable[Path]:
    for path in sorted(folder.rglob("*")):
        if path.is_file() and not _SKIPPED.intersection(path.parts) and path.suffix != ".pyc":
            yield path


def _digests(root: Path) -> dict[str, str]:
    """Every file the tests can read, by its path in the copy."""
    found = {}
    running = () if _RUNNING.is_relative_to(root.resolve()) else (_RUNNING,)  # the installed check code
    for folder in (root / "pi_course", root / "tests", *running):
        for path in _files(folder):
            with contextlib.suppress(OSError):
                shown = (
                    str(path.relative_to(root))
                    if folder != _RUNNING
                    else f"<running>/{path.relative_to(folder)}"
                )
                found[shown] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def step_keys(root: Path, steps: tuple[Step, ...] = STEPS) -> dict[str, str]:
    """Each step's key: the content it depends on (later steps' lesson files left out), versions, settings."""
    digests = _digests(root)
    settings = sorted((name, value) for name, value in os.environ.items() if name.startswith("PI_COURSE_"))
    keys = {}
    for index, step in enumerate(steps):
        own = {file for earlier in steps[: index + 1] for file in earlier.files}
        later = {file for other in steps[index + 1 :] for file in other.files} - own
        facts = {
            "format": FORMAT,
            "course": _course_version(),
            "python": sys.version,
            "settings": settings,
            "step": step.number,
            "files": {name: digest for name, digest in digests.items() if name not in later},
        }
        keys[step.number] = hashlib.sha256(json.dumps(facts, sort_keys=True).encode()).hexdigest()
    return keys


def _signature(secret: bytes, number: str, key: str, cases: list[dict[str, object]]) -> str:
    body = json.dumps([number, key, cases], sort_keys=True, ensure_ascii=False)
    return hmac.new(secret, body.encode("utf-8"), hashlib.sha256).hexdigest()


def _row(case: Case) -> dict[str, object]:
    return {"file": case.file, "name": case.name, "passed": case.passed, "text": case.text,
            "properties": case.properties}  # fmt: skip


def _case(row: dict[str, object]) -> Case:
    file, name, passed, text, properties = (
        row[field] for field in ("file", "name", "passed", "text", "properties")
    )
    if not (isinstance(file, str) and isinstance(name, str) and isinstance(passed, bool)):
        raise ValueError("not a case")
    if not (text is None or isinstance(text, str)) or not isinstance(properties, dict):
        raise ValueError("not a case")
    return Case(file, name, passed, text, {str(k): str(v) for k, v in properties.items()})


def load(root: Path, keys: dict[str, str]) -> dict[str, list[Case]]:
    """The kept cases of each step whose entry matches its key and is signed; anything else: not found."""
    secret = _signing_key()
    if secret is None:
        return {}
    try:
        entries = json.loads((root / CACHE_FILE).read_text(encoding="utf-8"))["steps"]
    except (OSError, ValueError, KeyError, TypeError):
        return {}
    found: dict[str, list[Case]] = {}
    for number, key in keys.items():
        with contextlib.suppress(KeyError, TypeError, ValueError, AttributeError):
            entry = entries[number]
            rows = entry["cases"]
            if entry["key"] != key or not hmac.compare_digest(
                str(entry["signature"]), _signature(secret, number, key, rows)
            ):
                continue
            found[number] = [_case(row) for row in rows]
    return found


def store(root: Path, keys: dict[str, str], results: dict[str, list[Case]]) -> None:
    """Keep these steps' cases beside the other steps' entries; a copy not writable keeps nothing."""
    secret = _signing_key()
    if secret is None:
        return
    path = root / CACHE_FILE
    try:
        entries = json.loads(path.read_text(encoding="utf-8"))["steps"]
        if not isinstance(entries, dict):
            entries = {}
    except (OSError, ValueError, KeyError, TypeError):
        entries = {}
    for number, cases in results.items():
        rows = [_row(case) for case in cases]
        signature = _signature(secret, number, keys[number], rows)
        entries[number] = {"key": keys[number], "cases": rows, "signature": signature}
    with contextlib.suppress(OSError):
        path.parent.mkdir(exist_ok=True)
        partial = path.with_name(path.name + f".{os.getpid()}")
        partial.write_text(
            json.dumps({"format": FORMAT, "steps": entries}, ensure_ascii=False), encoding="utf-8"
        )
        partial.replace(path)
