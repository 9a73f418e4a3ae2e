"""How a learner's file is applied to a starter module (tests/workflow/learners: merge())."""

from __future__ import annotations

import ast
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

STARTER = '''\
class Secret:
    """Holds the key."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def redact(self, message: str) -> str:
        """Lab 5.4: Replace the key."""
        raise NotImplementedError("Lab 5.4: redact")

    def __repr__(self) -> str:
        return "[redacted]"
'''


@pytest.fixture(scope="module")
def learners() -> ModuleType:
    path = Path(__file__).parents[1] / "workflow" / "learners" / "__init__.py"
    spec = importlib.util.spec_from_file_location("learners_under_test", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def secret(merged: str, value: str = "k") -> object:
    space: dict[str, object] = {}
    exec(compile(merged, "<merged>", "exec"), space)
    return space["Secret"](value)  # type: ignore[operator]


def test_a_class_holding_only_the_stub_fills_it_and_keeps_the_given_members(learners: ModuleType) -> None:
    own = "class Secret:\n    def redact(self, message):\n        return message.replace(self._value, '*')\n"
    merged = learners.merge(STARTER, own)
    made = secret(merged)
    assert made.redact("a k b") == "a * b"  # type: ignore[attr-defined]
    assert repr(made) == "[redacted]" and made.__slots__ == ("_value",)  # type: ignore[attr-defined]
    assert '"""Lab 5.4: Replace the key."""' in merged  # the starter's signature and docstring stay
    assert "NotImplementedError" not in merged


def test_a_new_method_joins_the_class_and_a_given_one_can_be_replaced(learners: ModuleType) -> None:
    own = (
        "class Secret:\n"
        "    def redact(self, message):\n        return self._mask(message)\n\n"
        "    def _mask(self, message):\n        return message.replace(self._value, '#')\n\n"
        "    def __repr__(self):\n        return 'Secret(…)'\n"
    )
    made = secret(learners.merge(STARTER, own))
    assert made.redact("k") == "#" and repr(made) == "Secret(…)"  # type: ignore[attr-defined]


def test_a_class_that_adds_a_field_or_changes_its_header_replaces_the_starters(learners: ModuleType) -> None:
    for own in (
        "class Secret:\n    extra = 1\n\n    def redact(self, message):\n        return message\n",
        "class Secret(str):\n    def redact(self, message):\n        return message\n",
    ):
        merged = learners.merge(STARTER, own)
        [node] = [n for n in ast.parse(merged).body if isinstance(n, ast.ClassDef)]
        assert ast.unparse(node) == ast.unparse(ast.parse(own).body[0])
