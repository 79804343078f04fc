"""The example notebooks run under ``pytest --nbval-lax`` with their scripted fixtures.

Each notebook runs in a subprocess (a fresh kernel, its own copy of the notebook and
data, an isolated DEER_FLOW_HOME); then the persisted threads and files are checked.
"""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, HumanMessage

import deerflow_nb as df
from deerflow_nb.testing import ScriptedChatModel

from .conftest import prepare, run_nbval


def reopen(env: dict[str, str]) -> df.DeerFlow:
    return df.DeerFlow(home=env["DEER_FLOW_HOME"], model=ScriptedChatModel(responses=[]))


def finals(client: df.DeerFlow, thread_id: str) -> list[str]:
    return [str(m.content) for m in client.thread(thread_id).messages if isinstance(m, AIMessage) and m.content]


def check_nbval(name: str, tmp_path) -> dict[str, str]:
    notebook, env = prepare(name, tmp_path)
    result = run_nbval(notebook, env)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert " passed" in result.stdout and "failed" not in result.stdout
    return env


def test_01_quickstart(tmp_path):
    env = check_nbval("01_quickstart", tmp_path)
    client = reopen(env)
    try:
        [thread] = client.threads()
        answers = finals(client, thread["thread_id"])
        assert answers[0].startswith("I analysed **sales.csv**")
        assert answers[1].startswith("**East** earned the most")  # the follow-up streamed in the widget
        report = client.thread(thread["thread_id"]).artifact("/mnt/user-data/outputs/sales_report.md")[0]
        assert b"| **total** | **1711.25** |" in report
        # the statistics were really computed in the sandbox
        bash = [m for m in client.thread(thread["thread_id"]).messages if getattr(m, "name", None) == "bash"]
        assert "revenue total: 1711.25" in str(bash[0].content)
    finally:
        client.close()


def test_02_human_in_the_loop(tmp_path):
    env = check_nbval("02_human_in_the_loop", tmp_path)
    client = reopen(env)
    try:
        threads = client.threads()
        assert len(threads) == 4
        replies = []
        for info in threads:
            thread = client.thread(info["thread_id"])
            assert thread.pending_input is None  # every question was answered
            replies += [m for m in thread.messages
                        if isinstance(m, HumanMessage) and m.additional_kwargs.get("human_input_response")]
        texts = sorted(str(m.content) for m in replies)
        assert len(replies) == 4
        assert any("Region: North" in t and "Metric: revenue" in t for t in texts)  # chat.respond
        assert any("Region: South" in t and "How many products to list: 2" in t for t in texts)  # respond()
        assert any("Region: East" in t for t in texts)  # responses= dict
        assert "sales.csv" in texts  # the callable picked the first option
    finally:
        client.close()


def test_03_workspace_and_files(tmp_path):
    env = check_nbval("03_workspace_and_files", tmp_path)
    copied = tmp_path / "nb" / "region_summary.csv"
    assert copied.read_text().splitlines() == [
        "region,units,revenue", "East,34,491.00", "North,27,421.50", "South,28,454.50", "West,32,344.25"]
    client = reopen(env)
    try:
        [info] = client.threads()
        changes = client.thread(info["thread_id"]).workspace_changes()
        assert [(c["path"], c["status"]) for c in changes["changes"]] == [
            ("/mnt/user-data/workspace/notes.md", "modified")]
        assert "+- North sells the most Gadgets per sale." in changes["changes"][0]["diff"]
    finally:
        client.close()


def test_05_kernel_data(tmp_path):
    import nbformat
    from nbclient import NotebookClient

    check_nbval("05_kernel_data", tmp_path)
    work = tmp_path / "nb"
    replay = nbformat.read(work / "replay.ipynb", as_version=4)
    assert (work / "deerflow_files" / "uploads" / "sales.parquet").is_file()
    NotebookClient(replay, kernel_name="python3", timeout=120, resources={"metadata": {"path": str(work)}}).execute()
    lines = (work / "deerflow_files" / "outputs" / "by_region.csv").read_text().splitlines()
    assert lines[0] == "region,units,revenue" and lines[1] == "East,34,491.0"


@pytest.mark.parametrize("name", ["01_quickstart", "02_human_in_the_loop", "03_workspace_and_files",
                                  "05_kernel_data", "06_papermill_pipeline"])
def test_notebooks_are_stored_without_outputs(name):
    import nbformat

    from .conftest import NOTEBOOKS

    nb = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    nbformat.validate(nb)
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code")
    assert (NOTEBOOKS / "fixtures" / f"{name}.config.yaml").is_file()
