"""The results a practice copy keeps per step: the same verdicts and records as a run without them.

A kept step (and a comparison kept apart from it) is not run again while its files are unchanged;
an edited file, a forged, corrupt or stale entry can only make check run it again. ``check --path``
and ``grade`` never read it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from learners import apply, mistake

from pi_course.course.checker import refcache, stepcache
from pi_course.course.copies.practice import create_practice

pytestmark = pytest.mark.slow

# A 5.3 mistake check catches at once (no test runs to its time bound): a wrong JSON path (the words
# after the path are the learner's own, pi_course/chapter/contract.py).
SSE_MISTAKE = ('"choices must be an array"', '"choice must be an array"')


def cli(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pi_course", *args],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip


def record(copy: Path, *flags: str) -> dict[str, object]:
    """``check 05 --json``'s record, its seconds left out (the one fact that may differ)."""
    result = cli("check", "05", "--json", *flags, cwd=copy)
    found = json.loads(result.stdout)
    found.pop("seconds")
    return found | {"exit": result.returncode, "text": result.stderr}


KEPT_APART = {stepcache.group(number, test) for test, (number, _, _) in stepcache.COMPARISONS.items()}
EVERY_ENTRY = {"5.1", "5.2", "5.3", "5.4"} | KEPT_APART


def kept_steps(copy: Path) -> set[str]:
    """The entries (a step's, a comparison's) the copy's own check would not run again (its own check
    code makes the keys)."""
    code = "from pathlib import Path; from pi_course.course.checker import stepcache as s; p = Path('.').resolve(); "
    code += "print(*sorted(s.load(p, s.step_keys(p))))"
    ran = subprocess.run([sys.executable, "-c", code], cwd=copy, capture_output=True, text=True, check=True)
    return set(ran.stdout.split())


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    copy = create_practice(tmp_path_factory.mktemp("kept") / "lab")
    apply(copy, "ada")
    return copy


@pytest.fixture
def copy(finished: Path, tmp_path: Path) -> Path:
    made = Path(shutil.copytree(finished, tmp_path / "lab"))
    shutil.rmtree(made / stepcache.CACHE_FILE.parent, ignore_errors=True)
    return made


def without_cache(copy: Path) -> dict[str, object]:
    shutil.rmtree(copy / stepcache.CACHE_FILE.parent, ignore_errors=True)
    return record(copy)


def test_kept_steps_give_the_same_record_and_an_edit_reruns_only_what_it_touches(copy: Path) -> None:
    cold = record(copy)
    assert cold["status"] == "done" and kept_steps(copy) == EVERY_ENTRY
    assert record(copy) == cold  # every step kept: nothing ran, the same record
    sse = copy / "pi_course" / "sse.py"
    sse.write_text(sse.read_text(encoding="utf-8") + "\n# an edit\n", encoding="utf-8")
    # sse.py is 5.3's: 5.3 and 5.4 run again, but not the HTTP transport's comparison (ada's transport
    # takes only names the reference's sse.py has, and alone() swaps them for the reference's).
    over_http = stepcache.group("5.3", "test_compare_transport_over_http_with_the_reference")
    assert kept_steps(copy) == {"5.1", "5.2", over_http} | {
        name for name in KEPT_APART if name.startswith("5.2/")
    }
    assert record(copy) == cold
    mistake(copy, "sse.py", *SSE_MISTAKE)
    broken = record(copy)
    assert broken["status"] == "incomplete" and broken["exit"] == 1
    assert broken == without_cache(copy)  # the same facts, kept or not


@pytest.mark.workflow
def test_a_step_asks_the_same_as_the_whole_chapter_and_is_read_from_the_same_kept_results(copy: Path) -> None:
    mistake(copy, "sse.py", *SSE_MISTAKE)
    whole = cli("check", "05", cwd=copy)
    assert whole.stdout.splitlines()[-1].startswith("第 05 章：未完成——实践 5.3 ")
    for step in ("5.3", "5.4"):
        asked = cli("check", "05", "--step", step, cwd=copy)
        assert asked.returncode == 1, asked.stdout
        assert asked.stdout.splitlines()[-1].startswith(f"实践 {step}：未完成——"), asked.stdout
    assert kept_steps(copy) == EVERY_ENTRY
    done = cli("check", "05", "--step", "5.2", cwd=copy)
    assert (done.returncode, done.stdout.splitlines()[-1]) == (0, "实践 5.2：完成")


def forge(copy: Path, secret: bytes | None) -> None:
    """Every kept step rewritten as all passed; signed with ``secret`` (None: the signature left as it was)."""
    path = copy / stepcache.CACHE_FILE
    kept = json.loads(path.read_text(encoding="utf-8"))
    for number, entry in kept["steps"].items():
        for row in entry["cases"]:
            row.update(passed=True, text=None)
        if secret is not None:
            entry["signature"] = stepcache._signature(secret, number, entry["key"], entry["cases"])
    path.write_text(json.dumps(kept, ensure_ascii=False), encoding="utf-8")


def test_a_forged_or_corrupt_cache_only_costs_time(copy: Path) -> None:
    """(A stale one: the edits of the first test.)"""
    mistake(copy, "sse.py", *SSE_MISTAKE)
    honest = record(copy)
    assert honest["status"] == "incomplete"
    forge(copy, None)  # all green, but not signed with the user's key
    assert record(copy) == honest
    (copy / stepcache.CACHE_FILE).write_text('{"steps": {"5.3": [1, 2', encoding="utf-8")  # cut short
    assert record(copy) == honest
    (copy / stepcache.CACHE_FILE).write_text('{"steps": {"5.3": {"key": 1}}}', encoding="utf-8")
    assert record(copy) == honest


@pytest.mark.workflow
def test_check_path_and_grade_never_read_the_copys_cache(copy: Path, tmp_path: Path) -> None:
    mistake(copy, "sse.py", *SSE_MISTAKE)
    honest = record(copy)
    key = stepcache.signing_key()
    assert key is not None
    forge(copy, key)  # signed with the user's own key: the copy's own check would trust it
    assert record(copy)["status"] == "done"
    outside = cli("check", "05", "--path", str(copy), "--json", "--sandbox", "none", cwd=tmp_path)
    assert json.loads(outside.stdout)["status"] == "incomplete" == honest["status"]
    graded = cli("grade", "05", str(copy), "--sandbox", "none", cwd=tmp_path)
    assert "未完成" in graded.stdout or "incomplete" in graded.stdout, graded.stdout


# --- the reference's side of the transport comparisons, kept (pi_course/course/checker/refcache.py) --------

# mei's own mistake (tests/workflow/test_learners.py): only the transport comparison of 5.4 sees it.
EMPTY_KEY_MISTAKE = (
    '        if self._value == "":\n            return message  # an empty key: "".replace would put [redacted] between every character\n',
    "",
)  # fmt: skip
REFERENCE_KEPT = stepcache.REFERENCE_FILE.with_name("reference-transport.json")


def without_step_results(copy: Path) -> dict[str, object]:
    (copy / stepcache.CACHE_FILE).unlink()
    return record(copy)


def test_the_kept_reference_side_gives_the_same_record_and_outlives_an_edit_of_the_learners_own_types(
    copy: Path,
) -> None:
    cold = record(copy)
    kept = copy / REFERENCE_KEPT
    first = kept.read_bytes()
    assert cold["status"] == "done" and b'"entries"' in first
    assert without_step_results(copy) == cold  # every comparison ran again, the transport's on kept ones
    assert kept.read_bytes() == first  # nothing new to keep: the reference's side was not run again
    protocol = copy / "pi_course" / "protocol.py"
    source = protocol.read_text(encoding="utf-8")
    protocol.write_text(
        source.replace("class ToolDefinition:\n", 'class ToolDefinition:\n    """Mine."""\n\n')
    )
    assert record(copy) == cold and kept.read_bytes() == first  # ToolDefinition: not the transport's
    protocol.write_text(
        source.replace("class AbortError(Exception):\n", 'class AbortError(Exception):\n    """Mine."""\n\n')
    )
    assert record(copy) == cold and kept.read_bytes() != first  # AbortError: the transport raises it


@pytest.mark.workflow
def test_a_forged_reference_side_only_costs_time_and_check_path_and_grade_never_read_it(
    tmp_path: Path,
) -> None:
    copy = create_practice(tmp_path / "lab")
    apply(copy, "mei")
    mistake(copy, "transport.py", *EMPTY_KEY_MISTAKE)
    honest = record(copy)
    assert honest["status"] == "incomplete" and (copy / REFERENCE_KEPT).is_file()
    # The same copy with its mistake as the reference: what a forger would keep as the reference's side.
    twin = Path(shutil.copytree(copy, tmp_path / "forger"))
    target = twin / "pi_course" / "course" / "target-05" / "transport.py"
    target.write_text((copy / "pi_course" / "transport.py").read_text(encoding="utf-8"), encoding="utf-8")
    shutil.rmtree(twin / stepcache.CACHE_FILE.parent)
    assert record(twin)["status"] == "done"
    signature, _, body = (copy / REFERENCE_KEPT).read_bytes().partition(b"\n")
    stored = json.loads(body)
    stored["entries"] = json.loads((twin / REFERENCE_KEPT).read_bytes().partition(b"\n")[2])["entries"]
    forged = json.dumps(stored).encode()
    (copy / REFERENCE_KEPT).write_bytes(signature + b"\n" + forged)  # not signed with the user's key
    assert without_step_results(copy) == honest
    key = stepcache.signing_key()
    assert key is not None
    (copy / REFERENCE_KEPT).write_bytes(refcache._signature(key, forged).encode() + b"\n" + forged)
    assert without_step_results(copy)["status"] == "done"  # signed with the user's own key: trusted
    outside = cli("check", "05", "--path", str(copy), "--json", "--sandbox", "none", cwd=tmp_path)
    assert json.loads(outside.stdout)["status"] == "incomplete"
    graded = cli("grade", "05", str(copy), "--sandbox", "none", cwd=tmp_path)
    assert "未完成" in graded.stdout or "incomplete" in graded.stdout, graded.stdout
