"""What the beyond checks say when they fail: where the key still is, with the key masked."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).parents[2]


def beyond() -> ModuleType:
    spec = importlib.util.spec_from_file_location("beyond_checks", ROOT / "tests" / "test_05_beyond.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("beyond_checks", module)
    spec.loader.exec_module(module)
    return module


def test_a_key_kept_in_args_behind_a_redacting_str_is_found_in_args_and_repr() -> None:
    checks = beyond()
    key = checks.KEY

    class Redacting(Exception):
        def __str__(self) -> str:
            return str(self.args[0]).replace(key, "[redacted]")

    places = checks.leaks(Redacting(f"proxy refused Bearer {key}"))
    assert places == [
        "错误本身的 repr()：Redacting('proxy refused Bearer «密钥»')",
        "错误本身的 args[0]：'proxy refused Bearer «密钥»'",
    ]
    assert all(key not in place for place in places)


def test_a_key_on_the_chain_names_the_link() -> None:
    checks = beyond()
    try:
        try:
            raise ConnectionError(f"refused {checks.KEY}")
        except ConnectionError:
            raise RuntimeError("[redacted]") from None
    except RuntimeError as error:
        places = checks.leaks(error)
    assert places[0] == "错误.__context__（ConnectionError）的 str()：refused «密钥»"
    assert checks.KEY not in "".join(places)
