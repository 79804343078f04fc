import json
from pathlib import Path

import pytest
from langchain_core.messages import ToolMessage

from deerflow_nb.config import McpServerConfig
from deerflow_nb.errors import ConfigError
from deerflow_nb.mcp import McpConfigResponse, McpToolsResponse, connection_for

from .conftest import server_entry

# Starting a server process imports the mcp package (seconds), so each test starts few.


def _results(thread) -> list[ToolMessage]:
    return [m for m in thread.messages if isinstance(m, ToolMessage)]


def _call(tool: str, **args) -> dict:
    return {"content": "", "tool_calls": [{"name": tool, "args": args}]}


def test_agent_calls_tools_of_a_real_stdio_server_per_thread(make_agent, extensions_file, home):
    agent = make_agent([
        _call("add", a=2, b=3), _call("write_note", name="note.txt", text="hi"), _call("where"),
        "The sum is 5 and the note is written.",
        _call("where"), "second thread",
        _call("where"), _call("fail", reason="boom"), "recovered",
    ])
    first, second = agent.thread(), agent.thread()
    assert first.chat("add and write") == "The sum is 5 and the note is written."
    add, note, where = _results(first)
    assert add.content == "5"
    assert add.additional_kwargs["deerflow_tool_meta"]["source"] == "mcp"
    # the stdio server runs in the thread workspace; its host paths are shown as sandbox paths
    written = home / "users/default/threads" / first.id / "user-data/workspace/note.txt"
    assert written.read_text() == "hi"
    assert note.content == "wrote /mnt/user-data/workspace/note.txt"
    assert where.content.startswith("/mnt/user-data/workspace pid=")

    assert second.chat("where?") == "second thread"
    other = _results(second)[0].content
    assert other.startswith("/mnt/user-data/workspace pid=")
    assert other.split("pid=")[1] != where.content.split("pid=")[1]  # its own server process
    assert not (home / "users/default/threads" / second.id / "user-data/workspace/note.txt").exists()

    assert first.chat("again") == "recovered"
    again, failed = _results(first)[3:]
    assert again.content == where.content  # the thread's session is reused
    assert failed.status == "error" and "boom" in failed.content


def test_config_update_reload_and_failures(make_agent, extensions_file, monkeypatch):
    monkeypatch.setenv("SOME_SECRET", "s3cret")
    agent = make_agent(["fine"])
    assert {t["name"] for t in agent.mcp.tools()} == {"add", "write_note", "where", "fail"}
    config = agent.get_mcp_config()
    McpConfigResponse.model_validate(config)
    assert config["mcp_servers"]["notes"]["args"] == server_entry()["args"]

    updated = agent.update_mcp_config({
        "notes": server_entry(enabled=False),
        "second": server_entry(env={"TOKEN": "$SOME_SECRET"}),
        "broken": {"type": "stdio", "command": "/nonexistent/mcp-server"},
    })
    McpConfigResponse.model_validate(updated)
    on_disk = json.loads(extensions_file.read_text())
    assert on_disk["skills"] == {}  # other sections survive
    assert on_disk["mcpServers"]["second"]["env"] == {"TOKEN": "$SOME_SECRET"}  # written unresolved
    assert sorted(p.name for p in extensions_file.parent.iterdir()) == ["extensions_config.json"]
    assert agent.mcp.config()["notes"]["enabled"] is False

    listed = agent.mcp.list_tools()
    McpToolsResponse.model_validate(listed)
    assert {t["server"] for t in listed["tools"]} == {"second"}  # "notes" is disabled
    assert "broken" in listed["errors"]  # reported, not fatal
    assert agent.thread().chat("hi") == "fine"

    extensions_file.write_text(json.dumps({"mcpServers": {}}))  # an edit by hand is noticed
    assert agent.mcp.tools() == []

    with pytest.raises(ConfigError, match=r"mcp_servers\.bad\.type"):
        agent.update_mcp_config({"bad": {"type": "carrier-pigeon"}})
    assert json.loads(extensions_file.read_text()) == {"mcpServers": {}}


def test_unresolvable_env_reference_disables_mcp_tools(make_agent, extensions_file):
    extensions_file.write_text(json.dumps({"mcpServers": {"x": server_entry(env={"T": "$MISSING_VAR"})}}))
    agent = make_agent()
    assert agent.mcp.tools() == []
    assert "MISSING_VAR" in agent.mcp.errors["extensions_config"]


def test_connection_for_stdio_uses_thread_workspace(tmp_path: Path):
    server = McpServerConfig(command="srv", args=["-x"])
    conn = connection_for("s", server, workspace=tmp_path / "ws")
    assert conn["cwd"] == str(tmp_path / "ws")
    assert conn["env"]["TMPDIR"] == str(tmp_path / "ws/.mcp/tmp") and (tmp_path / "ws/.mcp/tmp").is_dir()
    pinned = connection_for("s", McpServerConfig(command="srv", cwd="/opt", env={"TMPDIR": "/t"}),
                            workspace=tmp_path / "ws")
    assert pinned["cwd"] == "/opt" and pinned["env"] == {"TMPDIR": "/t"}
    remote = connection_for("r", McpServerConfig(type="http", url="http://x/mcp", headers={"A": "b"}))
    assert remote == {"transport": "streamable_http", "url": "http://x/mcp", "headers": {"A": "b"}}
    with pytest.raises(ConfigError, match=r"mcpServers\.s\.command"):
        connection_for("s", McpServerConfig())
    with pytest.raises(ConfigError, match=r"mcpServers\.r\.url"):
        connection_for("r", McpServerConfig(type="sse"))
