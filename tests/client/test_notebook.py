"""``thread.to_notebook()``: the agent's work as cells that reproduce its output files in a kernel."""

from __future__ import annotations

import json

import nbformat
import pandas as pd
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from nbclient import NotebookClient

from deerflow_nb.client.notebook import build_cells
from tests.client.test_parity import agent  # noqa: F401  (the embedded / server parity fixture)


def _sources(cells):
    return [(c["cell_type"], c["source"]) for c in cells]


def test_cells_from_messages():
    messages = [
        HumanMessage("<attached_data>\n- sales: ...\n</attached_data>\n\nPlot sales", additional_kwargs={"run_id": "r1"}),
        AIMessage("First I load the data.", tool_calls=[
            {"name": "bash", "id": "c1", "args": {"command": "python - <<'EOF'\nimport pandas as pd\n"
                                                                "pd.read_parquet('/mnt/user-data/uploads/sales.parquet')\nEOF"}},
            {"name": "read_file", "id": "c2", "args": {"path": "/mnt/user-data/uploads/sales.parquet"}},
            {"name": "bash", "id": "c3", "args": {"command": "false"}}]),
        ToolMessage("ok", tool_call_id="c1"), ToolMessage("..", tool_call_id="c2"),
        ToolMessage("[exit code 1]", tool_call_id="c3", status="error"),
        AIMessage("", tool_calls=[
            {"name": "write_file", "id": "c4", "args": {"path": "/mnt/user-data/workspace/a.py",
                                                        "content": "open('/mnt/user-data/outputs/x.txt')\n"}},
            {"name": "bash", "id": "c5", "args": {"command": "cd /mnt/user-data/workspace\npython a.py"}},
            {"name": "bash", "id": "c6", "args": {"command": "ls /mnt/user-data/outputs"}}]),
        AIMessage("Done: **x.txt**."),
        HumanMessage("again", additional_kwargs={"run_id": "r2"}), AIMessage("Second run."),
    ]
    cells = build_cells(messages, root="local", thread_id="t1")
    sources = _sources(cells)[2:]
    assert sources[0] == ("markdown", "**User:** Plot sales")  # the data block is not repeated
    assert sources[1] == ("markdown", "First I load the data.")
    assert sources[2] == ("code", "import pandas as pd\npd.read_parquet('local/uploads/sales.parquet')")
    assert sources[3][0] == "code" and "Path('local/workspace/a.py').write_text(\"open('local/outputs/x.txt')\\n\")" \
        in sources[3][1]  # the failed `false` and the read are left out; scripts get local paths too
    assert sources[4] == ("code", "%%bash\ncd local/workspace\npython a.py")
    assert sources[5] == ("code", "!ls local/outputs")
    assert sources[6:] == [("markdown", "Done: **x.txt**."), ("markdown", "**User:** again"),
                           ("markdown", "Second run.")]
    only = _sources(build_cells(messages, run_id="r2"))[2:]
    assert only == [("markdown", "**User:** again"), ("markdown", "Second run.")]


def test_exported_notebook_reproduces_the_outputs(agent, tmp_path):  # noqa: F811
    thread = agent.thread()
    sales = pd.DataFrame({"region": ["north", "south"], "amount": [1.5, 2.0]})
    thread.chat("please copy all uploads", data={"sales": sales, "params": {"k": 1}})
    thread.chat("write notes.txt")
    cells = thread.to_notebook()
    assert ("code", "!cp deerflow_files/uploads/* deerflow_files/outputs/") in _sources(cells)
    path = thread.to_notebook(tmp_path / "replay.ipynb")
    assert path == tmp_path / "replay.ipynb" and json.loads(path.read_text())["nbformat"] == 4
    assert sorted(p.name for p in (tmp_path / "deerflow_files" / "uploads").iterdir()) == ["params.json",
                                                                                         "sales.parquet"]
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, kernel_name="python3", timeout=120, resources={"metadata": {"path": str(tmp_path)}}).execute()
    produced = tmp_path / "deerflow_files" / "outputs"
    expected = {o["path"].rsplit("/", 1)[-1]: thread.artifact(o["path"])[0] for o in thread.outputs()}
    assert set(expected) == {"sales.parquet", "params.json", "notes.txt"}
    assert {p.name: p.read_bytes() for p in produced.iterdir()} == expected
    run_id = next(m for m in reversed(thread.messages) if m.type == "human").additional_kwargs["run_id"]
    assert [c["source"] for c in thread.to_notebook(run_id=run_id)][2] == "**User:** write notes.txt"
