"""notebooks/04_skills_and_memory.ipynb runs under ``pytest --nbval-lax`` with its scripted fixture."""

from __future__ import annotations

from pathlib import Path

from langchain_core.messages import ToolMessage

import deerflow_nb as df
from deerflow_nb.testing import ScriptedChatModel

from .conftest import prepare, run_nbval


def test_04_skills_and_memory(tmp_path: Path):
    notebook, env = prepare("04_skills_and_memory", tmp_path)
    result = run_nbval(notebook, env)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert " passed" in result.stdout and "failed" not in result.stdout
    home = Path(env["DEER_FLOW_HOME"])
    assert (home / "users/default/skills/custom/sales-kpis/SKILL.md").is_file()
    assert not (notebook.parent.parent / "outside.txt").exists()  # the zip-slip archive wrote nothing
    client = df.DeerFlow(home=home, model=ScriptedChatModel(responses=[]))
    try:
        facts = [f.content for f in client.memory.facts]
        assert "Prefers Polars over pandas" in facts and "Might be based in Berlin" not in facts
        threads = {t["thread_id"] for t in client.threads()}
        assert len(threads) == 2
        kpi_thread = next(client.thread(t) for t in threads
                          if any(isinstance(m, ToolMessage) for m in client.thread(t).messages))
        outputs = [m for m in kpi_thread.messages if isinstance(m, ToolMessage)]
        assert outputs[0].status == "error" and "not allowed" in outputs[0].text  # write_file refused
        assert "KPI_TOKEN received: yes | value: ***" in outputs[1].text
        report = kpi_thread.artifact("/mnt/user-data/outputs/kpis.md")[0]
        assert b"| **total** |" in report
    finally:
        client.close()
    stored = b"".join(p.read_bytes() for p in home.rglob("*") if p.is_file() and not p.is_symlink())
    assert b"demo-token-1234" not in stored
