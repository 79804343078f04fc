"""Deferred MCP tools: ``tool_search`` and ``routing.mode: prefer`` against a real 200-tool stdio server.

A recording scripted model writes down the tool names bound to every model call, so
the tests assert on what the model actually received, in the test process and in a
real ``jupyter server`` alike.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from langchain_core.messages import ToolMessage
from langchain_core.tools import StructuredTool

from deerflow_nb.agent.reducers import merge_promoted
from deerflow_nb.config.schema import ToolSearchConfig
from deerflow_nb.tools.tool_search import (
    ToolCatalog,
    assemble_deferred_tools,
    deferred_tools_prompt_section,
    mcp_routing_hints_prompt_section,
)
from tests.client.conftest import two_backend_client
from tests.mcp.recording_model import read_calls

LARGE = Path(__file__).with_name("large_server.py")
SPECIAL = {"convert_currency", "count_words", "reverse_text", "invoice_total"}


def large_entry(**extra) -> dict:
    return {"type": "stdio", "command": sys.executable, "args": [str(LARGE)], **extra}


def _call(tool: str, **args) -> dict:
    return {"content": "", "tool_calls": [{"name": tool, "args": args}]}


def _mcp(name: str, description: str, routing: dict | None = None) -> StructuredTool:
    return StructuredTool.from_function(func=lambda text="": text, name=name, description=description,
                                        metadata={"deerflow_source": "mcp", "mcp_server": "s",
                                                  **({"deerflow_mcp_routing": routing} if routing else {})})


def _config(tmp: Path, responses: list, tool_search: dict | None) -> dict:
    config: dict = {"config_version": 1, "title": {"enabled": False}, "memory": {"enabled": False},
                    "models": [{"name": "rec", "use": "tests.mcp.recording_model:ToolRecordingModel",
                                "record_to": str(tmp / "calls.jsonl"), "responses": responses}]}
    if tool_search is not None:
        config["tool_search"] = tool_search
    return config


# -- the catalog, without processes ------------------------------------------------------------


def test_catalog_ranks_names_and_descriptions_and_supports_the_query_forms():
    tools = [_mcp("github_create_issue", "Open a new issue in a GitHub repository."),
             _mcp("github_list_issues", "List the issues of a repository."),
             _mcp("slack_send_message", "Post a message to a Slack channel."),
             _mcp("sendEmail", "Send an e-mail message."),
             _mcp("weather_now", "Current weather for a city.")]
    catalog = ToolCatalog(tools)
    # BM25 over name words (camelCase and snake_case split, stemmed) and descriptions
    assert [t.name for t in catalog.search("create an issue")][0] == "github_create_issue"
    assert {t.name for t in catalog.search("issues", 5)} == {"github_create_issue", "github_list_issues"}
    assert [t.name for t in catalog.search("email")] == ["sendEmail"]
    assert [t.name for t in catalog.search("select:weather_now,nope,sendEmail")] == ["weather_now", "sendEmail"]
    assert [t.name for t in catalog.search("select:weather_now,sendEmail", 1)] == ["weather_now"]
    assert [t.name for t in catalog.search("+slack message")] == ["slack_send_message"]
    assert [t.name for t in catalog.search("message", 1)] == ["slack_send_message"]  # capped; name words first
    assert catalog.search("quantum") == [] and catalog.search("+") == []
    assert catalog.search("weather_now")[0].name == "weather_now"
    # the hash scopes promotions: another tool set is another catalog
    assert ToolCatalog(tools[:4]).hash != catalog.hash and ToolCatalog(list(reversed(tools))).hash == catalog.hash


def test_promotions_accumulate_per_catalog_and_reset_when_it_changes():
    first = merge_promoted(None, {"catalog_hash": "a", "names": ["x", "y"]})
    assert merge_promoted(first, {"catalog_hash": "a", "names": ["y", "z"]}) == {"catalog_hash": "a",
                                                                                  "names": ["x", "y", "z"]}
    assert merge_promoted(first, {"catalog_hash": "b", "names": ["z"]}) == {"catalog_hash": "b", "names": ["z"]}
    assert merge_promoted(first, None) is first


def test_assembly_prompt_sections_and_disabled_setup():
    routed = _mcp("count_words", "Count words.", {"mode": "prefer", "priority": 5, "keywords": ["word count"]})
    plain = _mcp("reverse_text", "Reverse a text.", {"mode": "off", "priority": 0, "keywords": ["reverse"]})
    builtin = StructuredTool.from_function(func=lambda: "", name="ls", description="List files.")
    tools, setup = assemble_deferred_tools([builtin, routed, plain], ToolSearchConfig())
    assert [t.name for t in tools] == ["ls", "count_words", "reverse_text"] and setup.catalog is None
    tools, setup = assemble_deferred_tools([builtin, routed, plain], ToolSearchConfig(enabled=True))
    assert [t.name for t in tools] == ["ls", "count_words", "reverse_text", "tool_search"]
    assert setup.deferred_names == {"count_words", "reverse_text"} and set(setup.routing_index) == {"count_words"}
    section = setup.prompt_section()
    assert section is not None and "count_words\nreverse_text" in section
    assert "... and 1 more" in deferred_tools_prompt_section(["a", "b", "c"], limit=2)
    hints = mcp_routing_hints_prompt_section(tools, setup.deferred_names)
    assert hints is not None and "When the user's request involves word count:" in hints
    assert "use `tool_search` to load `count_words`" in hints
    assert "prefer the `count_words` tool." in str(mcp_routing_hints_prompt_section(tools))
    assert ToolSearchConfig(auto_promote_top_k=99).auto_promote_top_k == 5
    assert ToolSearchConfig(auto_promote_top_k=0).auto_promote_top_k == 1


# -- a real 200-tool stdio server, both backends ------------------------------------------------


@pytest.mark.parametrize("kind", ["embedded", "server"])
def test_large_server_binds_only_tool_search_until_found_then_the_tool_works(kind, tmp_path, monkeypatch):
    responses = [
        _call("convert_currency", amount=10, to="EUR"),  # not loaded yet: refused
        _call("tool_search", query="currency exchange rate"),
        _call("convert_currency", amount=10, to="EUR"),
        "10 USD is 5 EUR.",
        _call("count_words", text="one two three"),  # auto-promoted by routing: no search needed
        "Three words.",
    ]
    monkeypatch.chdir(tmp_path)  # the embedded client finds extensions_config.json here, as the server does
    with two_backend_client(kind, tmp_path, _config(tmp_path, responses, {"enabled": True})) as agent:
        agent.update_mcp_config({"big": large_entry(tools={"count_words": {
            "routing": {"mode": "prefer", "keywords": ["word count", "how many words"]}}})})
        assert len(agent.mcp.tools()) == 200

        thread = agent.thread()
        assert thread.chat("Convert 10 dollars to euros") == "10 USD is 5 EUR."
        results = [m for m in thread.messages if isinstance(m, ToolMessage)]
        refused, found, converted = results
        assert refused.status == "error" and "select:convert_currency" in refused.content
        schemas = json.loads(found.content)
        assert schemas[0]["name"] == "convert_currency" and "amount" in schemas[0]["parameters"]["properties"]
        assert converted.content == "10.0 USD = 5 EUR" and converted.status == "success"
        assert "convert_currency" in thread.state["promoted"]["names"]

        calls = read_calls(tmp_path / "calls.jsonl")
        first = set(calls[0]["tools"])
        assert "tool_search" in first and not first & SPECIAL and not any(n.startswith("crm_") for n in first)
        assert len(first) < 20  # the built-ins and tool_search, not 200 schemas
        system = calls[0]["system"]  # the names, 50 of them (max_prompt_names), and how many more
        assert "<available-deferred-tools>" in system and "\ncalendar_archive_entry\n" in system
        assert "... and 150 more: find them with tool_search" in system and "\nwiki_" not in system
        assert "<mcp_routing_hints>" in calls[0]["system"]
        assert "convert_currency" not in calls[1]["tools"]  # the refusal promoted nothing
        assert "convert_currency" in calls[2]["tools"] and len(calls[2]["tools"]) <= len(first) + 5

        other = agent.thread()  # promotions are per thread; routing promotes by the user's message
        assert other.chat("What is the word count of 'one two three'?") == "Three words."
        assert [m.content for m in other.messages if isinstance(m, ToolMessage)] == ["3"]
        routed = set(read_calls(tmp_path / "calls.jsonl")[4]["tools"])
        assert "count_words" in routed and "convert_currency" not in routed
        assert other.state["promoted"]["names"] == ["count_words"]


# -- embedded only: top-k, priorities, disabled ------------------------------------------------


def test_prefer_routing_promotes_the_top_k_by_priority(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    routing = {"mode": "prefer", "keywords": ["crm"]}  # every crm_* tool matches
    (tmp_path / "extensions_config.json").write_text(json.dumps({"mcpServers": {"big": large_entry(tools={
        name: {"routing": {**routing, "priority": priority}}
        for name, priority in {"crm_list_record": 90, "crm_export_report": 50, "crm_create_item": 10,
                               "crm_delete_entry": 10, "crm_update_item": 5}.items()})}}))
    with two_backend_client("embedded", tmp_path, _config(tmp_path, ["ok"], {"enabled": True,
                                                                             "auto_promote_top_k": 3})) as agent:
        assert agent.thread().chat("Show my CRM records") == "ok"
    tools = set(read_calls(tmp_path / "calls.jsonl")[0]["tools"])
    assert {"crm_list_record", "crm_export_report", "crm_create_item"} <= tools  # priority, then name
    assert not tools & {"crm_delete_entry", "crm_update_item", "crm_archive_record"}


def test_disabled_binds_every_mcp_schema_as_before(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "extensions_config.json").write_text(json.dumps({"mcpServers": {"big": large_entry()}}))
    with two_backend_client("embedded", tmp_path, _config(tmp_path, [_call("reverse_text", text="abc"), "done"],
                                                          None)) as agent:
        thread = agent.thread()
        assert thread.chat("reverse abc") == "done"
        assert [m.content for m in thread.messages if isinstance(m, ToolMessage)] == ["cba"]
    call = read_calls(tmp_path / "calls.jsonl")[0]
    assert SPECIAL <= set(call["tools"]) and len(call["tools"]) > 200 and "tool_search" not in call["tools"]
    assert "<available-deferred-tools>" not in call["system"]


def test_subagents_defer_mcp_tools_too(tmp_path, monkeypatch):
    import yaml

    import deerflow_nb as df
    from tests.mcp.recording_model import ToolRecordingModel

    def router(messages):
        first = next(m.text for m in messages if m.type == "human")
        results = [m for m in messages if isinstance(m, ToolMessage)]
        if first.startswith("Convert 10 USD"):  # the subagent
            if not results:
                return _call("tool_search", query="select:convert_currency")
            if len(results) == 1:
                return _call("convert_currency", amount=10, to="EUR")
            return f"converted: {results[-1].content}"
        if not results:  # the lead
            return {"content": "", "tool_calls": [{"name": "task", "args": {
                "description": "convert", "prompt": "Convert 10 USD to EUR", "subagent_type": "general-purpose"}}]}
        return "done"

    monkeypatch.chdir(tmp_path)
    (tmp_path / "extensions_config.json").write_text(json.dumps({"mcpServers": {"big": large_entry()}}))
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"memory": {"enabled": False}, "title": {"enabled": False},
                                      "tool_search": {"enabled": True}}))
    model = ToolRecordingModel(responses=[router] * 6, record_to=str(tmp_path / "calls.jsonl"))
    agent = df.DeerFlow(config, model=model, subagents=True, persistence="memory")
    try:
        thread = agent.thread()
        assert thread.chat("Convert money with a subagent") == "done"
        result = next(m for m in thread.messages if isinstance(m, ToolMessage) and m.name == "task")
        assert "converted: 10.0 USD = 5 EUR" in result.content
    finally:
        agent.close()
    calls = read_calls(tmp_path / "calls.jsonl")
    sub = [c for c in calls if "<available-deferred-tools>" in c["system"] and "task" not in c["tools"]]
    assert len(sub) == 3
    assert "tool_search" in sub[0]["tools"] and not set(sub[0]["tools"]) & SPECIAL
    assert "convert_currency" in sub[1]["tools"] and len(sub[1]["tools"]) < 20


def test_an_active_skill_keeps_tool_search_but_only_its_allowed_tools_become_visible(tmp_path, monkeypatch):
    from tests.mcp.conftest import server_entry

    skill = tmp_path / "skills" / "calc"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: calc\ndescription: Adds.\nallowed-tools: [read_file, add]\n---\n\n"
                                    "Add numbers.\n")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "extensions_config.json").write_text(json.dumps({"mcpServers": {"notes": server_entry()}}))
    responses = [_call("tool_search", query="select:add,where"), _call("where"), _call("add", a=1, b=2), "3"]
    config = _config(tmp_path, responses, {"enabled": True})
    config["skills"] = {"path": str(tmp_path / "skills")}
    with two_backend_client("embedded", tmp_path, config) as agent:
        thread = agent.thread()
        assert thread.chat("/calc 1+2") == "3"
        searched, refused, added = [m for m in thread.messages if isinstance(m, ToolMessage)]
        assert {s["name"] for s in json.loads(searched.content)} == {"add", "where"}
        assert refused.status == "error" and "not allowed while the skill 'calc' is active" in refused.content
        assert added.content == "3"
    offered = [sorted(c["tools"]) for c in read_calls(tmp_path / "calls.jsonl")]
    assert offered[0] == ["read_file", "tool_search"]  # the skill's tools plus discovery
    assert offered[1] == ["add", "read_file", "tool_search"]  # "where" was promoted, but the skill hides it


def test_only_the_most_recent_promotions_are_bound():
    from langchain.agents.middleware import ModelRequest

    from deerflow_nb.agent.middlewares.deferred_tools import DeferredToolFilterMiddleware

    tools = [_mcp(f"t{i}", f"Tool {i}.") for i in range(4)]
    middleware = DeferredToolFilterMiddleware(frozenset(t.name for t in tools), "h", max_active=2)
    promoted = merge_promoted(merge_promoted(None, {"catalog_hash": "h", "names": ["t0", "t1", "t2"]}),
                              {"catalog_hash": "h", "names": ["t0"]})  # promoted again: the most recent
    assert promoted == {"catalog_hash": "h", "names": ["t1", "t2", "t0"]}
    request = ModelRequest(model=None, messages=[], tools=tools, state={"messages": [], "promoted": promoted})
    seen: list = []
    middleware.wrap_model_call(request, lambda r: seen.append([t.name for t in r.tools]))
    assert seen == [["t0", "t2"]]
    with pytest.raises(ValueError, match="max_active_tools"):
        ToolSearchConfig(max_active_tools=7)  # 5 search results + 3 routed do not fit
