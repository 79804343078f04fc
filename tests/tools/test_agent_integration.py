"""The tools inside a real LangChain agent loop, driven by a scripted model."""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain.agents import create_agent
from langchain_core.messages import ToolMessage

from deerflow_nb.config.paths import Paths
from deerflow_nb.config.schema import AppConfig
from deerflow_nb.context import RunContext
from deerflow_nb.sandbox.local import LocalSandboxProvider
from deerflow_nb.testing import ScriptedChatModel
from deerflow_nb.tools import TOOL_META_KEY, get_available_tools


@pytest.mark.asyncio
async def test_scripted_turn_uses_the_thread_sandbox(home: Path) -> None:
    out = "/mnt/user-data/outputs/a.txt"
    model = ScriptedChatModel(
        responses=[
            {
                "content": "",
                "tool_calls": [
                    {"name": "write_file", "args": {"description": "d", "path": out, "content": "hi"}},
                ],
            },
            # A separate step: tool calls of one step run concurrently.
            {
                "content": "",
                "tool_calls": [
                    {"name": "bash", "args": {"description": "d", "command": f"cat {out}; echo $TOK"}},
                ],
            },
            {"content": "", "tool_calls": [{"name": "read_file", "args": {"description": "d", "path": out}}]},
            "done",
        ]
    )
    agent = create_agent(model, get_available_tools(AppConfig()), context_schema=RunContext)
    provider = LocalSandboxProvider(paths=Paths(home))
    context = RunContext(thread_id="t1", user_id="u1", sandbox_provider=provider, secrets={"TOK": "hidden-value"})

    state = await agent.ainvoke({"messages": [("user", "go")]}, context=context)  # type: ignore[call-overload]

    tool_messages = [m for m in state["messages"] if isinstance(m, ToolMessage)]
    assert [m.name for m in tool_messages] == ["write_file", "bash", "read_file"]
    assert all(m.additional_kwargs[TOOL_META_KEY]["status"] == "success" for m in tool_messages)
    assert tool_messages[1].content == "hi***\n"
    assert "deerflow_read_mark" in tool_messages[2].additional_kwargs
    assert (home / "users" / "u1" / "threads" / "t1" / "user-data" / "outputs" / "a.txt").read_text() == "hi"
