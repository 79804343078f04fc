"""A notebook whose agent call fails: the cell errors (one readable line) and the notebook run fails."""

from __future__ import annotations

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

SETUP = """\
import deerflow_nb as df
from deerflow_nb.testing import ScriptedChatModel, provider_error
agent = df.DeerFlow(model=ScriptedChatModel(responses=[provider_error("auth")]), persistence="memory")
thread = agent.thread()"""
CHAT = 'answer = thread.chat("Summarise data.csv")'
AFTER = 'print("this cell must never run")'


def test_notebook_run_fails_at_the_failed_agent_call(tmp_path):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in (SETUP, CHAT, AFTER)])
    client = NotebookClient(nb, kernel_name="python3", timeout=180, resources={"metadata": {"path": str(tmp_path)}})
    with pytest.raises(CellExecutionError) as caught:
        client.execute()
    assert caught.value.ename == "ModelCallError"
    assert "model_auth" in caught.value.evalue
    failed = nb.cells[1].outputs
    error = next(o for o in failed if o.output_type == "error")
    # one readable line, not a traceback dump
    assert len(error.traceback) == 1 and "ModelCallError" in error.traceback[0]
    assert "Incorrect API key" in error.traceback[0]
    assert not any(o.output_type == "stream" and "Traceback" in o.text for o in failed)
    assert nb.cells[2].outputs == []  # the run stopped at the failure
