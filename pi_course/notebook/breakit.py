"""05-5's experiment: the learner makes their adapter take the Provider index as its content slot.

The chapter asks the learner to edit their own ``adapter.py`` (``content_index = chunk.index``), run
the 5.2 tests, read the first difference, and restore the line. :func:`adapter_state` reads the
file and says which state it is in (as written, broken, restored), naming the line.

Before the learner has edited anything (and in the reference run that stores 05-5's outputs),
the notebook shows what the edit will do by simulation:

Whatever the adapter looks like, the slot of a new tool is "how many blocks content already
holds", so it calls ``len(content)`` while a tool chunk is being handled. The experiment shadows
``len`` inside ``pi_course.adapter`` for the duration: during a tool chunk, the length of a list of
content blocks is reported as that chunk's Provider ``index``. That is exactly the chapter's
mistake ``content_index = chunk.index``, applied to the learner's own code. The focused tests see
it through a scratch copy whose ``conftest.py`` switches it on; the package on disk is untouched.
"""

from __future__ import annotations

import ast
import builtins
import importlib
import shutil
import tempfile
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pi_course_here import copy_without_the_wheel, edition_of

from ..chapter.steps import FOCUSED_TEST
from .partial_model import provider_index_slots

FIRED_MARK = "confused-len-fired"


@dataclass
class _State:
    current: object = None  # the chunk the adapter is handling right now
    fired: bool = False  # the confused len() changed at least one answer
    marker: Path | None = None
    measured: dict[int, int] = field(default_factory=dict)  # provider index → the real length, first time

    @property
    def swaps(self) -> list[tuple[int, int]]:
        """(Provider index, the real length) for each index whose first answer was confused."""
        return [(index, real) for index, real in self.measured.items() if index != real]

    @property
    def slots(self) -> dict[int, int]:
        """The content slot the adapter was given for each Provider index it measured: the index itself.

        Pass it to ``PartialStepper(..., slots=...)``: an adapter that fails on its first write
        emits no event naming the slot, so the stepper learns it here.
        """
        return {index: index for index in self.measured}


_state = _State()


def _is_content(value: object) -> bool:
    return isinstance(value, list | tuple) and all(
        getattr(block, "type", None) in ("text", "toolCall") for block in value
    )


def confused_len(value: Any) -> int:
    """``len``, except that a content list measured during a tool chunk answers the chunk's index."""
    chunk = _state.current
    if getattr(chunk, "type", None) == "tool" and _is_content(value):
        index: int = chunk.index  # type: ignore[attr-defined]
        real = builtins.len(value)
        _state.measured.setdefault(index, real)
        if index != real and not _state.fired:
            _state.fired = True
            if _state.marker is not None:
                _state.marker.write_text("fired\n", encoding="utf-8")
        return index
    return builtins.len(value)


class Watched:
    """A transport wrapper that tells ``confused_len`` which chunk the adapter is handling."""

    def __init__(self, transport: Any) -> None:
        self.transport = transport

    async def stream(self, request: Any, *, signal: Any = None) -> AsyncIterator[Any]:
        try:
            async for chunk in self.transport.stream(request, signal=signal):
                _state.current = chunk
                yield chunk
        finally:
            _state.current = None


def _patch() -> Callable[[], None]:
    adapter = importlib.import_module("pi_course.adapter")
    missing = object()
    previous = adapter.__dict__.get("len", missing)
    adapter.len = confused_len  # type: ignore[attr-defined]

    def restore() -> None:
        if previous is missing:
            del adapter.len
        else:
            adapter.len = previous  # type: ignore[attr-defined]

    return restore


@contextmanager
def confused_indexes() -> Iterator[_State]:
    """Inside the block, ``pi_course.adapter`` confuses the two indexes (use :class:`Watched`)."""
    _state.fired = False
    _state.measured.clear()
    restore = _patch()
    try:
        yield _state
    finally:
        restore()


def enable_for_tests(marker: Path) -> None:
    """For the scratch copy's ``conftest.py``: every ``fixed_transport`` is watched from now on."""
    package = importlib.import_module("pi_course")
    adapter = importlib.import_module("pi_course.adapter")
    original = adapter.fixed_transport

    def watched_fixed_transport(chunks: Any) -> Watched:
        return Watched(original(chunks))

    package.fixed_transport = watched_fixed_transport  # type: ignore[attr-defined]
    adapter.fixed_transport = watched_fixed_transport  # type: ignore[attr-defined]
    _state.marker = marker
    _patch()


_CONFTEST_TAIL = """

# 05-5：让 adapter 把 Provider index 当成 content 槽位（只在这个临时副本里）
from pathlib import Path as _Path

from pi_course.notebook.breakit import FIRED_MARK as _MARK, enable_for_tests as _enable

_enable(_Path(__file__).parent.parent / _MARK)
"""


class ScratchCopy:
    """A temporary copy of this tree's ``pi_course`` and focused tests, with the mistake switched on."""

    def __init__(self, root: Path) -> None:
        self.path = Path(tempfile.mkdtemp(prefix="pi-course-break-it-"))
        copy_without_the_wheel(root / "pi_course", self.path / "pi_course")
        tests = root / "tests" if (root / "tests").is_dir() else root / "pi_course" / "_course" / "tests"
        (self.path / "tests").mkdir()
        for name in (FOCUSED_TEST, "conftest.py"):
            shutil.copyfile(tests / name, self.path / "tests" / name)
        conftest = self.path / "tests" / "conftest.py"
        conftest.write_text(conftest.read_text(encoding="utf-8") + _CONFTEST_TAIL, encoding="utf-8")

    @property
    def fired(self) -> bool:
        """Whether the tests' adapter ever measured content during a tool chunk."""
        return (self.path / FIRED_MARK).exists()

    def remove(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)

    def __repr__(self) -> str:
        return "ScratchCopy(pi_course + 聚焦测试，混淆两种 index)"


# --- the learner's own edit: which state is adapter.py in? ---------------------------------------


@dataclass(frozen=True)
class AdapterState:
    """Where the learner's adapter stands in the experiment."""

    state: str  # "as-written" | "broken" | "unknown"
    line: int | None = None  # 1-based line number in adapter.py
    text: str = ""
    seen_broken: bool = False  # this kernel has read the file broken before (only then is it 已恢复)
    reference: bool = False  # the reference package: the learner has no file of theirs to edit here

    def describe(self, *, restoring: bool = False) -> str:
        """Where the file stands and what to do next; ``restoring`` for the last step, putting it back."""
        where = f"pi_course/adapter.py 第 {self.line} 行：{self.text.strip()}" if self.line else ""
        if self.reference and restoring:
            return (
                "参考实现的文件没有动过：上面那次「改坏以后」是模拟的。亲手改坏、再改回来，要在练习副本里做。"
            )
        if self.reference:
            found = f"参考实现里是 {where}" if where else "参考实现里也找不到那一行"
            return (
                f"这里读的是参考实现（书），不是你的代码：{found}。\n"
                "  参考实现的文件不归你改，这一本只能用模拟演示改坏。要亲手改坏，打开你的练习副本里的"
                "这一本，改副本里 pi_course/adapter.py 中你自己写的那一行。"
            )
        if restoring and self.state == "as-written" and self.seen_broken:
            return f"已恢复：{where}\n  新工具的槽位又记成 content 当时的长度。"
        if restoring and self.state == "as-written":
            return (
                f"没有改坏过：{where}\n"
                "  上面那次「改坏以后」是模拟出来的。想亲手看一次真的改坏，回到第二步改这一行。"
            )
        if restoring and self.state == "broken":
            return f"还是改坏的：{where}\n  把 Provider index 改回 len(…)，保存，再运行这一格。"
        if self.state == "as-written":
            return (
                f"原样：{where}\n"
                "  新工具的槽位记的是 content 当时的长度。把这里的 len(…) 改成 chunk.index"
                "（你的代码里 Provider index 叫什么名字就写什么），保存，再运行下面几格。"
            )
        if self.state == "broken":
            return (
                f"已改坏：{where}\n  槽位记成了 Provider index。运行下面几格，看会发生什么；看完改回 len(…)。"
            )
        return (
            "没找到给新工具分配槽位的那一行（5.2 还没写，或者写法和课程料想的不同）。"
            "请自己在 pi_course/adapter.py 里找：工具第一次出现时，记下它 content 槽位的那一行。"
        )


_seen_broken: set[Path] = set()  # adapter files this kernel has read in their broken state


def _reference_edition(path: Path) -> bool:
    """Whether ``path`` is the reference's adapter (its package says so), not a file a learner edits.

    Read from the file's own package, not from the kernel's import: a browser tab imports the
    reference from the Python install, and a scratch file has no package at all (a learner's).
    """
    return (path.parent / "__init__.py").is_file() and edition_of(path.parent) == "reference"


def adapter_state(path: Path) -> AdapterState:
    """Read ``adapter.py`` at ``path``: the tool-slot line as written, broken, or not found."""
    found = _read_state(path)
    if found.state == "broken":
        _seen_broken.add(path.resolve())
    return replace(found, seen_broken=path.resolve() in _seen_broken, reference=_reference_edition(path))


def stepper_slots(experiment: _State, chunks: Sequence[Any], path: Path) -> dict[int, int]:
    """The slot each Provider index was given, for ``PartialStepper(slots=…)``.

    The simulation measured them; the learner's own break records the Provider index itself
    (``content_index = chunk.index``), whether or not an event reported it before the failure.
    """
    if experiment.fired:
        return experiment.slots
    if adapter_state(path).state == "broken":
        return provider_index_slots(chunks)
    return {}


def _read_state(path: Path) -> AdapterState:
    try:
        source = path.read_text(encoding="utf-8")
        tree = ast.parse(source)
    except (OSError, SyntaxError, ValueError):
        return AdapterState("unknown")
    lines = source.splitlines()
    found = find_slot(tree)
    if found is None:
        return AdapterState("unknown")
    state, number = found
    return AdapterState(state, number, lines[number - 1] if number <= len(lines) else "")


# The slot line, read from the code (never from comments or docstrings). A new tool's slot is the
# value some statement stores: assigned to a name or an item, passed as an argument or keyword,
# put in a dict or a list. Written right, that value is ``len(<content>)``; broken, the Provider
# index (``chunk.index``, or a name bound to it such as ``index``). Text slots (a target or
# keyword named ``text…``) and ``len(self.chunks)`` are not it.

_LOOKUPS = frozenset({"get", "setdefault", "pop", "__getitem__", "__contains__"})


def _names(node: ast.AST) -> str:
    """The identifiers in ``node``, joined: what a target or keyword is called."""
    parts = []
    for inner in ast.walk(node):
        if isinstance(inner, ast.Name):
            parts.append(inner.id)
        elif isinstance(inner, ast.Attribute):
            parts.append(inner.attr)
        elif isinstance(inner, ast.Constant) and isinstance(inner.value, str):
            parts.append(inner.value)
    return " ".join(parts).lower()


def _is_len(node: ast.expr) -> bool:
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "len"):
        return False
    return len(node.args) == 1 and "chunk" not in _names(node.args[0])


def _index_names(function: ast.AST) -> set[str]:
    """Names bound to a chunk's Provider index in ``function`` (``case ToolChunk(index=index)``, …)."""
    bound = set()
    for node in ast.walk(function):
        if isinstance(node, ast.MatchClass):
            for key, pattern in zip(node.kwd_attrs, node.kwd_patterns, strict=False):
                if key == "index" and isinstance(pattern, ast.MatchAs) and pattern.name:
                    bound.add(pattern.name)
        elif isinstance(node, ast.Assign) and getattr(node.value, "attr", None) == "index":
            bound.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return bound


def _is_provider_index(node: ast.expr, names: set[str]) -> bool:
    if isinstance(node, ast.Attribute) and node.attr == "index" and "chunk" in _names(node.value):
        return True
    return isinstance(node, ast.Name) and node.id in names


def _stored_values(function: ast.AST) -> Iterator[tuple[str, ast.expr]]:
    """(what it is stored as, the value) for every value a statement in ``function`` stores."""
    for node in ast.walk(function):
        if isinstance(node, ast.Assign):
            name = " ".join(_names(target) for target in node.targets)
            yield name, node.value
        elif isinstance(node, ast.AnnAssign | ast.AugAssign) and node.value is not None:
            yield _names(node.target), node.value
        elif isinstance(node, ast.Call):
            called = node.func.attr if isinstance(node.func, ast.Attribute) else ""
            if called not in _LOOKUPS:
                yield from (("", arg) for arg in node.args)
            yield from ((keyword.arg or "", keyword.value) for keyword in node.keywords)
        elif isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                yield (_names(key) if key is not None else ""), value
        elif isinstance(node, ast.List | ast.Tuple) and isinstance(node.ctx, ast.Load):
            yield from (("", item) for item in node.elts)


def find_slot(tree: ast.AST) -> tuple[str, int] | None:
    """("as-written" | "broken", line) of the statement that gives a new tool its content slot."""
    functions = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    broken: tuple[str, int] | None = None
    for function in functions:
        names = _index_names(function)
        attributes = (n for n in ast.walk(function) if isinstance(n, ast.Attribute))
        if not names and not any(attribute.attr == "index" for attribute in attributes):
            continue  # no Provider index in sight: not where tools are handled
        for stored_as, value in _stored_values(function):
            if "text" in stored_as:
                continue
            if _is_len(value):
                return "as-written", value.lineno
            slotlike = not stored_as or any(word in stored_as for word in ("slot", "index", "position"))
            if broken is None and slotlike and _is_provider_index(value, names) and stored_as != "id":
                broken = ("broken", value.lineno)
    return broken
