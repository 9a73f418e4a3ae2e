"""Execute notebooks top to bottom in place and save real outputs plus widget state.

``make notebooks`` runs this. Each notebook gets a fresh python3 kernel started in its own
folder, exactly as nbval and JupyterLab run it. Each code cell's readable outputs are also kept in
its metadata: a practice copy strips the outputs and shows these where a step is still missing.

Running it twice with no change leaves ``git diff`` empty: no execution timestamps, stream
output merged however the kernel happened to flush it, and widget model ids renumbered in the
order a reader meets them (the kernel makes random ones).
"""

from __future__ import annotations

import json
import re
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import mistune
import nbformat
from nbclient import NotebookClient

from pi_course.notebook.lesson import store_expected


def execute(path: Path) -> float:
    notebook = nbformat.read(path, as_version=4)
    # What ipykernel installs: a notebook that says otherwise opens in JupyterLab marked unsaved.
    kernelspec = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    notebook.metadata["kernelspec"] = kernelspec
    start = time.perf_counter()
    client = NotebookClient(
        notebook,
        timeout=300,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
        store_widget_state=True,
        record_timing=False,
    )
    client.execute()
    for cell in notebook.cells:
        cell.metadata.pop("execution", None)  # timestamps stored by an earlier nbclient run
        if cell.cell_type == "code":
            cell.outputs = merge_streams(cell.outputs)
    notebook = renumber_widgets(notebook, path.name)
    store_expected(notebook, markdown_html)  # a practice copy strips outputs and shows these as 预期输出
    nbformat.write(notebook, path)
    return time.perf_counter() - start


MARKDOWN = mistune.create_markdown(escape=False, plugins=["table", "strikethrough"])


def markdown_html(text: str) -> str:
    """A Markdown output as HTML, tables included, as JupyterLab renders it (nbconvert's renderer)."""
    return str(MARKDOWN(text))


def merge_streams(outputs: list[Any]) -> list[Any]:
    """Join consecutive stream outputs of one name: how the kernel split them is timing."""
    merged: list[Any] = []
    for output in outputs:
        previous = merged[-1] if merged else None
        if output.output_type == "stream" and previous is not None and previous.output_type == "stream" \
                and previous.name == output.name:  # fmt: skip
            previous.text += output.text
        else:
            merged.append(output)
    return merged


MODEL_REF = re.compile(r"IPY_MODEL_([0-9a-f]{32})")
MODEL_ID = re.compile(r"(?<![0-9a-f])[0-9a-f]{32}(?![0-9a-f])")
VIEW = "application/vnd.jupyter.widget-view+json"
STATE = "application/vnd.jupyter.widget-state+json"


def renumber_widgets(notebook: Any, name: str) -> Any:
    """Give widget models ids that depend only on the notebook's content.

    Order: the views in output order, then what each model refers to, then models nobody
    refers to (links), by their state once the known ids are replaced.
    """
    state = notebook.metadata.get("widgets", {}).get(STATE, {}).get("state", {})
    if not state:
        return notebook
    order: list[str] = []

    def visit(model_id: str) -> None:
        if model_id in state and model_id not in order:
            order.append(model_id)
            for ref in MODEL_REF.findall(json.dumps(state[model_id], sort_keys=True)):
                visit(ref)

    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            view = output.get("data", {}).get(VIEW)
            if view:
                visit(view["model_id"])
    new_id = {old: uuid.uuid5(uuid.NAMESPACE_URL, f"pi-course/{name}/{n}").hex for n, old in enumerate(order)}
    while len(new_id) < len(state):
        rest = sorted((replace_ids(json.dumps(state[old], sort_keys=True), new_id), old)
                      for old in state if old not in new_id)  # fmt: skip
        for _, old in rest:
            new_id[old] = uuid.uuid5(uuid.NAMESPACE_URL, f"pi-course/{name}/{len(new_id)}").hex
    text = replace_ids(nbformat.writes(notebook), new_id)
    renumbered = nbformat.reads(text, as_version=4)
    widgets = renumbered.metadata["widgets"][STATE]
    widgets["state"] = dict(sorted(widgets["state"].items()))
    return renumbered


def replace_ids(text: str, new_id: dict[str, str]) -> str:
    return MODEL_ID.sub(lambda match: new_id.get(match.group(), match.group()), text)


def main(paths: list[str]) -> None:
    for name in paths:
        seconds = execute(Path(name))
        print(f"executed {name} in {seconds:.1f} s")


if __name__ == "__main__":
    main(sys.argv[1:])
