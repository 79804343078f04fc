"""The small profile's table tools, run through the local sandbox."""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage
from langgraph.types import Command

from deerflow_nb.config.paths import Paths, packaged_skills_root
from deerflow_nb.sandbox.local import LocalSandboxProvider
from deerflow_nb.tools.table_tools import table_group_tool, table_stats_tool
from tests.tools.conftest import make_runtime

UP = "/mnt/user-data/uploads"


@pytest.fixture
def provider(home: Path) -> LocalSandboxProvider:
    # the public skills mounted at /mnt/skills/public, as the engine's provider has them
    return LocalSandboxProvider(paths=Paths(home), skills_root=packaged_skills_root())


def _upload(sandbox):
    sandbox.write_file(f"{UP}/s.csv", "region,units,price\nn,2,1.5\ns,3,2\nn,5,1.5\n")


def _call(tool, context, state=None, **args):
    runtime = make_runtime(context)
    runtime.state.update(state or {})
    return tool.invoke({"type": "tool_call", "id": "call-1", "name": tool.name, "args": {**args, "runtime": runtime}})


def test_table_stats_and_group_report_exact_numbers(sandbox, context):
    _upload(sandbox)
    stats = _call(table_stats_tool(), context, path=f"{UP}/s.csv")
    assert stats.status == "success" and "3 rows, 3 columns" in stats.content
    assert "units: count 3, sum 10, mean 3.33, min 2, max 5" in stats.content
    grouped = _call(table_group_tool(), context, path=f"{UP}/s.csv", by="region", value="units*price")
    assert grouped.content.splitlines() == ["overall sum: 16.50", "sum of units*price by region (largest first):",
                                            "1. n: 10.50", "2. s: 6"]


def test_a_failing_command_is_an_error_result_with_its_message(sandbox, context):
    _upload(sandbox)
    result = _call(table_group_tool(), context, path=f"{UP}/s.csv", by="region", value="cost")
    assert result.status == "error"
    assert "exit code 1" in result.content and "the columns are: region, units, price" in result.content
    missing = _call(table_stats_tool(), context, path=f"{UP}/nope.csv")
    assert missing.status == "error" and "does not exist" in missing.content


def test_report_is_written_and_presented(sandbox, context):
    _upload(sandbox)
    out = _call(table_group_tool(), context, path=f"{UP}/s.csv", by="region", value="units",
                report="summary.md")  # a bare name goes to the outputs folder
    assert isinstance(out, Command) and out.update["artifacts"] == ["/mnt/user-data/outputs/summary.md"]
    assert "| n | 7 |" in sandbox.read_file("/mnt/user-data/outputs/summary.md")


def test_the_report_the_user_named_is_written_even_when_the_model_leaves_it_out(sandbox, context):
    _upload(sandbox)
    ask = HumanMessage(f"Summarise {UP}/s.csv into /mnt/user-data/outputs/asked.md please")
    out = _call(table_stats_tool(), context, state={"messages": [ask]}, path=f"{UP}/s.csv")
    assert isinstance(out, Command) and out.update["artifacts"] == ["/mnt/user-data/outputs/asked.md"]
    assert sandbox.exists("/mnt/user-data/outputs/asked.md")


def test_reports_outside_the_outputs_folder_are_refused(sandbox, context):
    _upload(sandbox)
    for bad in ("/mnt/user-data/uploads/x.md", "/mnt/user-data/outputs/../uploads/x.md"):
        result = _call(table_stats_tool(), context, path=f"{UP}/s.csv", report=bad)
        assert result.status == "error" and "under /mnt/user-data/outputs/" in result.content
    assert not sandbox.exists("/mnt/user-data/uploads/x.md")
