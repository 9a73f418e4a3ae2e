"""argparse that speaks the learner's language: Chinese usage, help and one-line errors with the fix.

argparse writes its own words in English (``usage:``, ``the following arguments are required``);
the course's terminal output is Chinese throughout, so its parser says them in Chinese.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar, NoReturn

from .exits import EXIT_USAGE

# argparse's error messages (Python 3.11-3.13), as patterns, and what each says in Chinese.
_MESSAGES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern, re.DOTALL), chinese)
    for pattern, chinese in (
        (r"the following arguments are required: (?P<names>.+)", "缺少参数 {names}"),
        (r"unrecognized arguments: (?P<args>.+)", "不认识的参数：{args}"),
        (r"invalid choice: (?P<value>.+?) \(choose from (?P<choices>.+)\)",
         "{value} 不是可选的值（可选：{choices}）"),
        (r"expected one argument", "后面要跟一个值"),
        (r"expected at most one argument", "后面最多跟一个值"),
        (r"expected at least one argument", "后面至少要跟一个值"),
        (r"expected (?P<count>\d+) arguments?", "后面要跟 {count} 个值"),
        (r"not allowed with argument (?P<other>.+)", "不能和 {other} 一起用"),
        (r"ignored explicit argument (?P<value>.+)", "不接受值 {value}"),
        (r"invalid (?P<kind>\S+) value: (?P<value>.+)", "{value} 不是有效的值"),
        (r"one of the arguments (?P<names>.+) is required", "{names} 必须给出一个"),
        (r"ambiguous option: (?P<option>\S+) could match (?P<matches>.+)",
         "{option} 不明确：可能是 {matches}"),
        (r"argument (?P<name>\S+): (?P<message>.+)", "参数 {name}：{message}"),
    )
)  # fmt: skip


def in_chinese(message: str, names: Mapping[str, str] | None = None) -> str:
    """argparse's English message said in Chinese; a message it does not know (the course's own) as it is.

    ``names``: what to call an argument whose metavar is not a word (``05`` is the chapter).
    """
    for pattern, chinese in _MESSAGES:
        found = pattern.fullmatch(message)
        if found is not None:
            parts = found.groupdict()
            if "message" in parts:  # argument X: <argparse's message about it>
                parts["message"] = in_chinese(parts["message"], names)
            if "name" in parts:
                parts["name"] = (names or {}).get(parts["name"], parts["name"])
            if "names" in parts:  # the arguments still missing: "05, DIR"
                parts["names"] = "、".join(
                    (names or {}).get(name, name) for name in parts["names"].split(", ")
                )
            return chinese.format(**parts)
    return message


class _Formatter(argparse.HelpFormatter):
    """``用法：`` where argparse writes ``usage:``."""

    def add_usage(
        self,
        usage: str | None,
        actions: Iterable[argparse.Action],
        groups: Iterable[argparse._MutuallyExclusiveGroup],
        prefix: str | None = None,
    ) -> None:
        super().add_usage(usage, actions, groups, "用法：" if prefix is None else prefix)


class ChineseParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose usage, help and errors are Chinese; an error is one line with the usage."""

    names: ClassVar[Mapping[str, str]] = {}  # an argument's metavar → what an error calls it

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        add_help = kwargs.get("add_help", True)
        kwargs["add_help"] = False  # argparse's own -h says it in English
        super().__init__(*args, **kwargs)
        self._positionals.title = "参数"
        self._optionals.title = "选项"
        if add_help:
            self.add_argument(
                "-h", "--help", action="help", default=argparse.SUPPRESS, help="显示这段说明并退出"
            )

    def error(self, message: str) -> NoReturn:
        said = in_chinese(message, self.names)
        if message.startswith("the following arguments are required"):  # the fix is the usage itself
            said += "，应写成 " + " ".join(self.format_usage().split()).removeprefix("用法：")
        self.exit(EXIT_USAGE, f"{self.prog}：错误：{said}（{self.prog} --help 有详细说明）\n")
