"""One API, two backends, for the feature objects: ``agent.memory`` (reads, edits, search, export/import,
the update queue), ``agent.mcp`` tools with a real stdio MCP server and ``agent.subagents``, against an
embedded ``DeerFlow`` and a real ``jupyter server`` (``DeerFlow.connect()``): same results, same exceptions.
"""

from __future__ import annotations

import pytest

from deerflow_nb.errors import ConflictError, NotFoundError, UsageError
from deerflow_nb.memory import Fact, FactList, MemoryConflictError
from tests.client.conftest import two_backend_client
from tests.mcp.conftest import server_entry


@pytest.fixture(scope="module", params=["embedded", "server"])
def agent(request, tmp_path_factory):
    with two_backend_client(request.param, tmp_path_factory.mktemp(f"features-{request.param}"), {
        "config_version": 1,
        "models": [{"name": "features", "use": "tests.client.feature_models:FeatureModel"}],
        "memory": {"enabled": True, "debounce_seconds": 3600, "injection_enabled": True},
        "title": {"enabled": False},
        "subagents": {"custom": [{"name": "sql-analyst", "description": "Writes SQL.", "tools": ["bash"],
                                  "max_turns": 7}]},
    }) as client:
        yield client


@pytest.fixture
def memory(agent):
    agent.memory.clear()
    yield agent.memory
    agent.memory.clear()


def test_memory_facts_edit_search_and_conflicts(memory):
    assert memory.facts == [] and isinstance(memory.facts, FactList)
    fact = memory.add_fact("Uses DuckDB for SQL", category="knowledge", confidence=0.9)
    assert isinstance(fact, Fact) and fact.revision == 1 and fact.source == "manual"
    assert memory.add_fact("  uses duckdb   for SQL ").id == fact.id  # known content: the existing fact
    other = memory.add_fact("Plots with matplotlib", category="preference")
    assert [f.id for f in memory.facts] == [fact.id, other.id]
    assert [f.content for f in memory.search("duckdb sql")] == ["Uses DuckDB for SQL"]
    assert len(memory.search("with", limit=1)) <= 1

    updated = memory.update_fact(fact.id, confidence=0.6, expected_revision=1)
    assert (updated.confidence, updated.revision, updated.content) == (0.6, 2, "Uses DuckDB for SQL")
    with pytest.raises(MemoryConflictError) as info:  # a stale revision: refused, nothing written
        memory.update_fact(fact.id, content="Uses Postgres", expected_revision=1)
    assert isinstance(info.value, ConflictError)
    with pytest.raises(ConflictError):
        memory.delete_fact(fact.id, expected_revision=1)
    assert {f.id: f.content for f in memory.facts}[fact.id] == "Uses DuckDB for SQL"
    with pytest.raises(NotFoundError):
        memory.update_fact("fact_000000000000", confidence=0.5)
    with pytest.raises(NotFoundError):
        memory.delete_fact("fact_000000000000")

    memory.delete_fact(fact.id, expected_revision=2)
    assert [f.content for f in memory.facts] == ["Plots with matplotlib"]
    assert memory.status()["facts"] == 1


@pytest.mark.parametrize(("call", "field"), [
    (lambda m: m.add_fact("   "), "content"),
    (lambda m: m.add_fact("x", confidence=1.5), "confidence"),
    (lambda m: m.add_fact("x", category=""), "category"),
    (lambda m: m.update_fact("fact_1", confidence="high"), "confidence"),
    (lambda m: m.update_fact("../../etc", confidence=0.5), "fact_id"),
    (lambda m: m.delete_fact("fact_1", expected_revision=-1), "expected_revision"),
    (lambda m: m.set_summary("favouriteColour", "blue"), "favouriteColour"),
    (lambda m: m.set_summary("topOfMind", 42), "text"),
    (lambda m: m.import_({"facts": [{"content": ""}]}), "facts.0.content"),
    (lambda m: m.import_({"user": {"topOfMind": {"summary": 3}}}), "user.topOfMind.summary"),
    (lambda m: m.import_({"facts": [], "surprise": 1}), "surprise"),
    (lambda m: m.search("x", limit=0), "limit"),
    (lambda m: m.search("x", limit="5"), "limit"),
    (lambda m: m.search(5), "query"),
    (lambda m: m.preview(5), "message"),
    (lambda m: m.delete_fact(12345), "fact_id"),
])
def test_memory_refusals_name_the_field_and_store_nothing(memory, call, field):
    memory.add_fact("Keeps this one")
    before = memory.export()
    with pytest.raises(UsageError, match=field.replace(".", r"\.")):
        call(memory)
    assert memory.export() == before


def test_memory_summaries_export_import_and_preview(memory):
    memory.add_fact("Reports go to the CFO", category="context")
    document = memory.set_summary("topOfMind", "Quarterly report due Friday.")
    assert document["user"]["topOfMind"]["summary"] == "Quarterly report due Friday."
    data = memory.data
    assert data["user"]["topOfMind"]["summary"] == "Quarterly report due Friday." and data["revision"] >= 2
    assert memory.reload()["revision"] == data["revision"]
    block = memory.preview("who reads my reports?")
    assert block is not None and "Reports go to the CFO" in block and "Quarterly report due Friday." in block

    exported = memory.export()
    assert [f["content"] for f in exported["facts"]] == ["Reports go to the CFO"]
    memory.clear()
    assert memory.facts == [] and memory.data["user"]["topOfMind"]["summary"] == ""
    assert memory.preview("who reads my reports?") is None
    memory.import_(exported)
    assert [f.content for f in memory.facts] == ["Reports go to the CFO"]
    assert memory.data["user"]["topOfMind"]["summary"] == "Quarterly report due Friday."
    assert memory.export()["facts"] == exported["facts"]  # ids and fields round-trip


def test_memory_config_status_and_flush_learn_from_a_thread(agent, memory):
    assert memory.config()["debounce_seconds"] == 3600 and memory.config()["enabled"] is True
    assert agent.get_memory_config()["debounce_seconds"] == 3600
    assert memory.flush() == 0
    assert agent.thread().chat("I use Polars") == "Noted."
    status = memory.status()
    assert status["pending_updates"] == 1 and status["facts"] == 0  # debounced: nothing learnt yet
    assert memory.flush() == 1
    assert [f.content for f in memory.facts] == ["Uses Polars"]
    assert memory.facts[0].source.startswith("thread:")
    status = memory.status()
    assert status["pending_updates"] == 0 and status["processed"] >= 1 and status["last_error"] is None


@pytest.mark.asyncio
async def test_memory_async_flush(agent, memory):
    thread = await agent.athread()
    await thread.achat("I use DuckDB")
    assert await memory.aflush() == 1
    assert [f.content for f in memory.facts] == ["Uses DuckDB"]


def test_mcp_tools_and_reload_with_a_real_stdio_server(agent):
    assert agent.mcp.tools() == [] and agent.mcp.errors == {}
    agent.update_mcp_config({"notes": server_entry(), "broken": {"type": "stdio", "command": "/nonexistent/mcp"}})
    try:
        listed = agent.mcp.list_tools()
        assert {t["name"] for t in listed["tools"]} == {"add", "write_note", "where", "fail"}
        assert {t["server"] for t in listed["tools"]} == {"notes"}
        assert "broken" in listed["errors"] and "broken" in agent.mcp.errors
        assert {t["name"] for t in agent.mcp.tools()} == {"add", "write_note", "where", "fail"}
        agent.mcp.reload()  # forgotten, then discovered again on the next listing
        assert {t["name"] for t in agent.mcp.tools()} == {"add", "write_note", "where", "fail"}
        agent.update_mcp_config({"notes": server_entry(enabled=False)})
        assert agent.mcp.tools() == [] and agent.mcp.errors == {}
    finally:
        agent.update_mcp_config({})


def test_subagents_list_and_the_local_model_override(agent):
    subagents = {s["name"]: s for s in agent.subagents.list()}
    assert {"general-purpose", "bash", "sql-analyst"} <= set(subagents)
    custom = subagents["sql-analyst"]
    assert custom["tools"] == ["bash"] and custom["max_turns"] == 7 and custom["description"] == "Writes SQL."
    assert subagents["general-purpose"]["timeout_seconds"] > 0
    if agent.backend.__class__.__name__ == "HttpBackend":
        with pytest.raises(UsageError, match="embedded"):
            _ = agent.subagents.model
        with pytest.raises(UsageError, match="embedded"):
            _ = agent.skills.public_root
    else:
        assert agent.subagents.model is None
        assert agent.skills.public_root is not None
