"""Saved outputs are final: a notebook executed headlessly keeps each chat cell's answer.

nbclient, papermill and ``nbconvert --execute`` record only the messages of the cell that is running;
a chat cell's answer arrives later, from the run streaming in the background. These tests execute
notebooks the way those tools do and read the saved file.
"""

from __future__ import annotations

import os
import subprocess
import sys

import nbformat
from nbclient import NotebookClient

from .conftest import prepare


def _execute(notebook, env, monkeypatch):
    for key in [k for k in list(os.environ) if k.startswith(("DEER_FLOW_", "JUPYTER"))]:
        monkeypatch.delenv(key, raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    nb = nbformat.read(notebook, as_version=4)
    NotebookClient(nb, kernel_name="python3", timeout=240, resources={"metadata": {"path": str(notebook.parent)}}
                   ).execute()
    nbformat.write(nb, notebook)
    return nb


def _saved_text(cell) -> str:
    return "\n".join("".join(out.get("data", {}).get("text/plain", "")) for out in cell.outputs
                     if out.output_type in ("display_data", "execute_result"))


def test_the_quickstarts_chat_cells_keep_their_answers(tmp_path, monkeypatch):
    notebook, env = prepare("01_quickstart", tmp_path)
    nb = _execute(notebook, env, monkeypatch)
    cells = {"".join(c.source).split("\n")[0]: c for c in nb.cells if c.cell_type == "code"}
    follow_up = _saved_text(cells['chat = thread.ui("Which product sold the most units, and how many?")'])
    assert "You: Which product sold the most units, and how many?" in follow_up
    assert "DeerFlow: **East** earned the most" in follow_up  # the answer, saved in the cell that asked
    assert follow_up.count("You: ") == 2 and "[tool bash: success]" in follow_up
    # the HTML export without the widget state (as GitHub shows it) draws the saved fallback
    html = subprocess.run([sys.executable, "-m", "jupyter", "nbconvert", "--to", "html", "--stdout",
                           "--ClearMetadataPreprocessor.enabled=True", str(notebook)],
                          env={**os.environ, **env}, capture_output=True, text=True, check=True).stdout
    assert "<strong>East</strong> earned the most: 491.00" in html and "widget-view" not in html


def test_a_deerflow_cell_keeps_its_answer(tmp_path, monkeypatch):
    notebook, env = prepare("01_quickstart", tmp_path)
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("%load_ext deerflow_nb"),
        nbformat.v4.new_code_cell("%%deerflow\nWrite a sales report"),
        # the run ends in the background while this cell runs: the update is a message of this cell
        nbformat.v4.new_code_cell("import asyncio\nchat = _\nawait asyncio.shield(chat.task)"),
    ])
    nbformat.write(nb, notebook)
    nb = _execute(notebook, env, monkeypatch)
    saved = _saved_text(nb.cells[1])
    assert "You: Write a sales report" in saved
    assert "DeerFlow: I analysed **sales.csv**" in saved
