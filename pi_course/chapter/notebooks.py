"""The chapter's notebooks, in reading order, listed once; and their first box per edition.

Tests, docs and the overview notebook's map read this list; a notebook added to ``notebooks/``
is one line here (a test fails while a ``notebooks/*.ipynb`` is missing from it). The practice
notebooks are the steps' own (:attr:`.steps.Step.notebook`): each ends with its step's checkpoint.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from .steps import STEPS

NOTEBOOKS: tuple[str, ...] = (
    "05-0-overview",
    *(step.notebook for step in STEPS),  # 05-1 … 05-4
    "05-5-break-it",
    "05-6-migration",
    "05-7-real-providers",
    "05-8-questionnaire",
)


Edition = Literal["book", "browser-book", "practice"]

BOX = re.compile(r"^> \*\*两个版本\*\*.*$", re.MULTILINE)
"""The paragraph every lesson notebook opens with (the book's text is the one stored).

The book says how to get a practice copy from a terminal; a practice copy is that copy already,
and the browser edition has no terminal: its copy sits in ``practice/``.
"""

_SAYS: dict[Edition, str] = {
    "browser-book": (
        "> **两个版本**：这里的 `notebooks/` 是参考版，像一本书，每一格下面都存着参考实现跑出的真实输出，"
        "可以直接读。要**先预测、再看答案**，打开左边 `practice/notebooks/` 里的同名笔记本："
        "那是你的练习副本，不带任何输出，问题下面那一格要你先写下预测，才会显示答案。第一格代码会打印你现在用的是哪一版。"
    ),
    "practice": (
        "> **这是你的练习副本**：格子下面没有存着输出，要你自己运行。问题下面那一格要你先写下预测"
        "（把 `...` 换掉），才会显示答案，并判一判对不对；还没完成的实践，格子会说缺哪一步，"
        "再给出参考实现的预期输出。第一格代码会打印你现在用的是哪一版。"
    ),
}


def fit_first_box(notebook: dict[str, Any], edition: Edition) -> dict[str, Any]:
    """``notebook`` (nbformat JSON) with its first Markdown cell's edition paragraph for ``edition``."""
    if edition == "book":
        return notebook
    for cell in notebook.get("cells", []):
        if cell.get("cell_type") != "markdown":
            continue
        text = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        if BOX.search(text):
            cell["source"] = BOX.sub(lambda _: _SAYS[edition], text)
        break
    return notebook
