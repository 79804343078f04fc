"""The README's Python snippet runs as written (with a scripted model in the small profile)."""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]

# what the small model is asked for: the answers printed, each with a label (the report is written from them)
PROGRAM = """\
import pandas as pd
df = pd.read_csv('/mnt/user-data/uploads/sales.csv')
rev = (df['units'] * df['unit_price']).groupby(df['region']).sum()
print('revenue (units * unit_price) by region:')
print(rev.round(2).to_string())
print('total revenue (units * unit_price):', round(rev.sum(), 2))
"""

CONFIG = {
    "models": [{"name": "scripted", "use": "deerflow_nb.testing:ScriptedChatModel", "profile": "small",
                # the program, and the same program again as the independent check of its answer
                "responses": [{"content": "", "tool_calls": [{"name": "python", "args": {"code": PROGRAM}}]}] * 2}],
    "sandbox": {"use": "local"},
    "memory": {"enabled": False},
}


def readme_snippet() -> str:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    return re.search(r"```python\n(.*?)```", text, re.S).group(1)


@pytest.mark.asyncio
async def test_readme_snippet_runs_as_written(tmp_path, monkeypatch):
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(CONFIG))
    monkeypatch.setenv("DEER_FLOW_CONFIG_PATH", str(config))
    monkeypatch.chdir(REPO)  # the snippet names notebooks/data/sales.csv relative to the checkout
    code = compile(readme_snippet(), "README.md", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    namespace: dict = {}
    result = eval(code, namespace)
    if inspect.iscoroutine(result):
        await result
    thread, agent = namespace["thread"], namespace["agent"]
    try:
        state = await thread.aget_state()
        # the program's output is the answer, and the report was written from it and presented
        assert state["artifacts"] == ["/mnt/user-data/outputs/report.md"]
        report, _mime = await thread.aartifact("/mnt/user-data/outputs/report.md")
        text = report.decode()
        table = "```text\nregion\nEast     491.00\n"  # computed by pandas in the sandbox
        assert table in text and "- total revenue (units * unit_price): 1711.25\n" in text
        assert namespace["answer"].startswith("revenue (units * unit_price) by region:\n\n" + table)
        assert namespace["answer"].endswith("total revenue (units * unit_price): 1711.25\n\n"
                                            "Saved: `/mnt/user-data/outputs/report.md`")
    finally:
        await agent.aclose()
