"""The reference's side of a comparison, kept (pi_course/course/checker/refcache.py): keyed by what it reads.

Of protocol.py the key takes only the statements the HTTP transport's reference side can reach: the
learner's own ToolDefinition and AgentContext may change without running the reference again; any
change that can reach it, or code the analysis cannot follow, changes the key.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pi_course.chapter.steps import STEPS
from pi_course.course.checker import refcache
from pi_course.course.checker.plugin_path.pi_course_check.contract import REFERENCE_VARIABLE
from pi_course.course.copies.starters import make_starter, reference_sources

COMPARE = Path(__file__).resolve().parents[1] / "test_05_compare.py"
# What the transport's reference side reads of protocol.py (its modules' imports, the test's names).
ROOTS = {"AbortController", "AbortError", "AbortSignal", "Usage", "aclose_iterator"}
ADA = Path(__file__).resolve().parents[1] / "workflow" / "learners" / "ada" / "protocol.py"


@pytest.fixture(scope="module")
def protocol() -> str:
    """The reference's protocol.py as a learner finishes it: the starter, ada's 5.1 appended."""
    starter = make_starter(reference_sources()["protocol.py"])
    own = ADA.read_text(encoding="utf-8").replace("from __future__ import annotations\n", "")
    return starter + "\n\n" + own


def part(source: str) -> str:
    return refcache.protocol_part(source, ROOTS)


def test_the_roots_are_what_the_transports_reference_side_reads() -> None:
    source = COMPARE.read_text(encoding="utf-8")
    import ast

    tree = ast.parse(source)
    reached = refcache.reached_names(tree, source, "reference_transport")
    assert reached & refcache.imported_names(tree, "pi_course", level=0) == {
        "AbortController", "AbortError", "FinishChunk", "TextChunk", "ToolChunk",
    }  # fmt: skip
    sources = reference_sources()
    assert refcache.protocol_names_read(ast.parse(sources["transport.py"])) == {"AbortError", "AbortSignal"}
    assert refcache.protocol_names_read(ast.parse(sources["sse.py"])) == {"Usage", "aclose_iterator"}


@pytest.mark.parametrize(
    "edit",
    [
        ("# a comment\n", "the learner's comment"),
        ("_edited = 1\n", "a new name nothing reads"),
        (
            '@dataclass(frozen=True)\nclass ToolDefinition:\n    """Another."""\n\n    name: str = "x"\n',
            "ToolDefinition again",
        ),
        (
            "@dataclass\nclass AgentContext:\n    messages: tuple[int, ...] = field(default_factory=tuple)\n",
            "AgentContext",
        ),
        ("def helper(x, y=2):\n    return AbortError(x)\n", "a helper nothing calls"),
    ],
    ids=lambda edit: edit[1],
)
def test_the_learners_own_code_does_not_change_the_key(protocol: str, edit: tuple[str, str]) -> None:
    assert part(protocol + "\n" + edit[0]) == part(protocol)


@pytest.mark.parametrize(
    "edit",
    [
        ("Usage = dict\n", "a name the transport reads bound again"),
        ("AbortError.__str__ = lambda self: 'x'\n", "a statement that does something"),
        ("@functools.cache\ndef helper():\n    pass\n", "a decorator that is not dataclass"),
        ("class Helper(Exception):\n    pass\n", "a class with a base"),
        ("@dataclass\nclass Helper:\n    x: int = print('made')\n", "a default that runs code"),
        ("import json\n", "an import"),
    ],
    ids=lambda edit: edit[1],
)
def test_what_can_reach_the_transport_changes_the_key(protocol: str, edit: tuple[str, str]) -> None:
    assert part(protocol + "\n" + edit[0]) != part(protocol)


def test_a_change_inside_what_the_transport_reads_changes_the_key(protocol: str) -> None:
    assert "class AbortError(Exception):" in protocol
    edited = protocol.replace("class AbortError(Exception):", "class AbortError(RuntimeError):", 1)
    assert part(edited) != part(protocol)
    # ... and what it reads in turn: AbortController's methods read AbortSignal's.
    assert "def aborted(self) -> bool:" in protocol
    assert part(protocol.replace("def aborted(self) -> bool:", "def aborted(self) -> int:", 1)) != part(
        protocol
    )


@pytest.mark.parametrize(
    "unsure",
    [
        "_names = globals()\n",
        "def helper():\n    import pi_course\n\n\nhelper()\n",
        "exec('Usage = 1')\n",
        "class ToolDefinition:\n    pass\n\n\ndef dataclass(cls):\n    return cls\n",
    ],
    ids=["globals", "an-import-in-a-def", "exec-without-namespace", "dataclass-bound-again"],
)
def test_code_the_analysis_cannot_follow_puts_the_whole_file_in_the_key(protocol: str, unsure: str) -> None:
    """(A def nothing kept reads may do anything: it never runs.)"""
    whole = protocol + "\n" + unsure
    assert len(refcache.reached_statements(whole, ROOTS)) == len(refcache.ast.parse(whole).body)
    assert part(whole + "\n_edited = 1\n") != part(whole)


def test_without_postponed_annotations_the_whole_file_is_kept(protocol: str) -> None:
    eager = protocol.replace("from __future__ import annotations\n", "", 1)
    assert len(refcache.reached_statements(eager, ROOTS)) == len(refcache.ast.parse(eager).body)


def kept(tmp_path: Path, context: str = "c") -> refcache.Kept:
    return refcache.Kept(tmp_path / "reference-transport.json", context)


def test_a_kept_observation_comes_back_and_nothing_else_does(tmp_path: Path) -> None:
    writing = kept(tmp_path)
    writing.put("input", {"chunks": [["text", "读"]], "结束": None, "响应已关闭": True})
    writing.put("a tuple", ("not", "json"))  # would come back a list: not kept
    writing.put("a NaN", [float("nan")])  # never equal to itself
    writing.put("an int key", {1: "one"})  # would come back a string key
    writing.save()
    reading = kept(tmp_path)
    assert reading.get("input") == (True, {"chunks": [["text", "读"]], "结束": None, "响应已关闭": True})
    assert reading.get("a tuple") == reading.get("a NaN") == reading.get("an int key") == (False, None)
    assert kept(tmp_path, "another context").get("input") == (False, None)


def test_a_forged_or_corrupt_file_is_not_read(tmp_path: Path) -> None:
    writing = kept(tmp_path)
    writing.put("input", ["the reference's"])
    writing.save()
    path = tmp_path / "reference-transport.json"
    signature, _, body = path.read_bytes().partition(b"\n")
    forged = json.loads(body)
    forged["entries"] = {digest: ["the learner's"] for digest in forged["entries"]}
    path.write_bytes(signature + b"\n" + json.dumps(forged).encode())
    assert kept(tmp_path).get("input") == (False, None)
    path.write_bytes(signature + b"\n" + body[:-5])
    assert kept(tmp_path).get("input") == (False, None)
    path.write_bytes(b"")
    assert kept(tmp_path).get("input") == (False, None)


def test_it_is_off_unless_the_runner_sets_its_variable(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv(REFERENCE_VARIABLE, raising=False)
    off = refcache.opened("transport", COMPARE, "reference_transport", ("transport.py", "sse.py"))
    off.put("input", [1])
    assert off.path is None and off.get("input") == (False, None)
    monkeypatch.setenv(REFERENCE_VARIABLE, str(tmp_path / "reference.json"))
    on = refcache.opened("transport", COMPARE, "reference_transport", ("transport.py", "sse.py"))
    assert on.path == tmp_path / "reference-transport.json"


def test_the_lesson_files_are_the_steps() -> None:
    assert refcache.PROTOCOL in {file.removeprefix("pi_course/") for step in STEPS for file in step.files}
