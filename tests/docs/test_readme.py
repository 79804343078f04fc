"""The README's Python snippet runs as written (with a scripted model in the small profile)."""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

CONFIG = """\
models:
- name: scripted
  use: deerflow_nb.testing:ScriptedChatModel
  profile: small
  responses:
  - content: ''
    tool_calls:
    - name: table_group
      args: {path: /mnt/user-data/uploads/sales.csv, by: region, value: units*unit_price}
  - The total revenue is 1711.25; East earned the most.
sandbox:
  use: local
memory:
  enabled: false
"""


def readme_snippet() -> str:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    return re.search(r"```python\n(.*?)```", text, re.S).group(1)


@pytest.mark.asyncio
async def test_readme_snippet_runs_as_written(tmp_path, monkeypatch):
    config = tmp_path / "config.yaml"
    config.write_text(CONFIG)
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
        # the scripted model named no report: the table tool wrote the one the request asked for
        assert state["artifacts"] == ["/mnt/user-data/outputs/report.md"]
        report, _mime = await thread.aartifact("/mnt/user-data/outputs/report.md")
        text = report.decode()
        assert "| East | 491 |" in text and "1711.25" in text  # computed by pandas in the sandbox
        assert "1711.25" in namespace["answer"]
    finally:
        await agent.aclose()
