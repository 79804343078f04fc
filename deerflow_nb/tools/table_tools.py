"""Table tools for small models: ``table_stats`` and ``table_group``.

Each runs the data-analysis skill's deterministic command
(``/mnt/skills/public/data-analysis/scripts/table.py``) in the thread's sandbox, so the
numbers come from pandas, not from the model: a small model only picks the tool and
two or three short arguments (the command's ``--where`` filter is left out: small models took it
for "per group"), then copies the printed figures into its answer. Given
``report``, a tool also writes a Markdown report with the numbers and presents it (no
separate ``present_files`` step).
"""

from __future__ import annotations

import re
import shlex
from typing import Annotated, Literal

from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.tools import BaseTool
from langgraph.types import Command
from pydantic import Field

from deerflow_nb.sandbox.base import Sandbox
from deerflow_nb.tools.common import Reply, Runtime, get_sandbox, make_tool, reply
from deerflow_nb.tools.meta import normalize_tool_result
from deerflow_nb.tools.present_files import OUTPUTS_DIR

__all__ = ["TABLE_SCRIPT", "requested_report", "table_group_tool", "table_stats_tool"]

#: The skill command the tools run (a virtual path: every sandbox mounts the public skills there).
TABLE_SCRIPT = "/mnt/skills/public/data-analysis/scripts/table.py"

Agg = Literal["sum", "mean", "count", "min", "max", "median"]
DataPath = Annotated[str, Field(description="A data file, e.g. /mnt/user-data/uploads/data.csv")]
ReportPath = Annotated[str, Field(description=f"Optional: also write a Markdown report to this file in {OUTPUTS_DIR}/")]


def _run(sandbox: Sandbox, args: list[str]) -> Reply:
    """Run the table command; a non-zero exit is an error result carrying the command's message."""
    command = " ".join(shlex.quote(a) for a in ["python3", TABLE_SCRIPT, *args])
    result = sandbox.execute_command(command)
    text = result.output.strip() or "(no output)"
    if result.timed_out:
        return Reply(text, status="error", error_type="timeout")
    if result.exit_code not in (0, None):
        return Reply(f"Error (exit code {result.exit_code}): {text}", status="error", error_type="command_failed")
    return Reply(text)


def _options(**values: str | int | None) -> list[str]:
    out: list[str] = []
    for key, value in values.items():
        if value not in (None, "", 0):
            out += [f"--{key}", str(value)]
    return out


def _report_path(report: str) -> str:
    """``report`` as a virtual path in the outputs folder (a bare name goes there); ``""`` for none."""
    report = report.strip()
    if not report:
        return ""
    if not report.startswith("/"):
        report = f"{OUTPUTS_DIR}/{report}"
    if not report.startswith(OUTPUTS_DIR + "/") or "/../" in report:
        raise ValueError(f"report must be a file under {OUTPUTS_DIR}/, got {report!r}")
    return report


_REQUESTED_REPORT = re.compile(re.escape(OUTPUTS_DIR) + r"/[\w.\-/]+\.md\b")


def requested_report(runtime: Runtime) -> str:
    """The Markdown file under the outputs folder that the user's latest message names, or ``""``.

    Small models often leave out an optional argument the request spelled out; the table
    tools write the report the user asked for even then.
    """
    state = getattr(runtime, "state", None)
    messages = state.get("messages", []) if isinstance(state, dict) else []
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            found = _REQUESTED_REPORT.findall(message.text)
            return found[0] if found else ""
    return ""


def _call(name: str, runtime: Runtime, args: list[str], report: str) -> Command | ToolMessage | str:
    try:
        path = _report_path(report or requested_report(runtime))
    except ValueError as exc:
        return reply(runtime, name, Reply(f"Error: {exc}", status="error", error_type="invalid_input"))
    result = _run(get_sandbox(runtime), [*args, *_options(report=path)])
    if not path or result.status == "error" or not runtime.tool_call_id:
        return reply(runtime, name, result)
    message = normalize_tool_result(ToolMessage(content=result.content + " (shown to the user)",
                                                tool_call_id=runtime.tool_call_id, name=name))
    return Command(update={"artifacts": [path], "messages": [message]})


# Keyword-only, with ``report`` right after ``path``: the grammar writes keys in schema order, and a
# model that has already closed the object after the required keys never gets to name a report.
def _table_stats(*, path: DataPath, report: ReportPath = "", column: str = "",
                 runtime: Runtime) -> Command | ToolMessage | str:
    return _call("table_stats", runtime, ["stats", path, *_options(column=column)], report)


def _table_group(
    *,
    path: DataPath,
    report: ReportPath = "",
    by: str,
    value: str,
    agg: Agg = "sum",
    top: int = 0,
    runtime: Runtime,
) -> Command | ToolMessage | str:
    args = ["group", path, "--by", by, "--value", value, "--agg", agg, *_options(top=top)]
    return _call("table_group", runtime, args, report)


def table_stats_tool() -> BaseTool:
    """``table_stats``: row count, columns and per-column statistics (optionally as a report file)."""
    return make_tool(_table_stats, name="table_stats",
                     description="Rows, columns and count/sum/mean/min/max of each column of a whole data file "
                                 "(no groups; for a value per group use table_group).")


def table_group_tool() -> BaseTool:
    """``table_group``: an aggregate per group, largest first, plus the overall figure."""
    return make_tool(_table_group, name="table_group",
                     description="A value per group: aggregate value (a column, or an expression such as "
                                 "units*price) for each distinct value of column by, largest first, and overall.")
