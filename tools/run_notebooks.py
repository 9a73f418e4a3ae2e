"""Execute notebooks top to bottom in place and save real outputs plus widget state.

``make notebooks`` runs this. Each notebook gets a fresh python3 kernel started in its own
folder, exactly as nbval and JupyterLab run it. Each code cell's readable outputs are also kept in
its metadata: a practice copy strips the outputs and shows these where a step is still missing.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from pi_course.notebook.lesson import store_expected


def execute(path: Path) -> float:
    notebook = nbformat.read(path, as_version=4)
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    start = time.perf_counter()
    client = NotebookClient(
        notebook,
        timeout=300,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
        store_widget_state=True,
    )
    client.execute()
    store_expected(notebook)  # a practice copy strips outputs and shows these as 预期输出
    nbformat.write(notebook, path)
    return time.perf_counter() - start


def main(paths: list[str]) -> None:
    for name in paths:
        seconds = execute(Path(name))
        print(f"executed {name} in {seconds:.1f} s")


if __name__ == "__main__":
    main(sys.argv[1:])
