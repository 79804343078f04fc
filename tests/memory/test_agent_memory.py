"""Memory inside real runs: learn after a conversation, inject into the next thread."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage, SystemMessage

import deerflow_nb as df
from deerflow_nb.memory.schemas import MemoryConfigResponse, MemoryResponse, MemoryStatusResponse
from deerflow_nb.testing import ScriptedChatModel

MEMORY_JSON = "```json\n" + json.dumps({
    "user": {"workContext": {"summary": "Data scientist working on churn models at Acme.", "shouldUpdate": True}},
    "history": {},
    "newFacts": [
        {"content": "Prefers Polars over pandas for large CSV files", "category": "preference", "confidence": 0.95},
        {"content": "Might be left-handed", "category": "context", "confidence": 0.2},
    ],
    "factsToRemove": [],
}) + "\n```"
BASH = {"content": "", "tool_calls": [{"name": "bash", "args": {"description": "d", "command": "echo TOOLNOISE"}}]}


def _first_human(call: list) -> HumanMessage:
    return next(m for m in call if isinstance(m, HumanMessage))


def test_conversation_facts_reach_the_next_threads_first_request(memory_agent):
    model = ScriptedChatModel(responses=[BASH, "Noted: Polars it is.", MEMORY_JSON, "Loading sales.csv."])
    agent = memory_agent(model)
    first = agent.thread()
    first.chat("I always use Polars for big CSV files; I work on churn models at Acme.")
    assert agent.memory.status()["pending_updates"] == 1  # debounced: nothing learnt yet
    assert agent.memory.facts == []
    assert agent.memory.flush() == 1
    facts = agent.memory.facts
    assert [f.content for f in facts] == ["Prefers Polars over pandas for large CSV files"]  # 0.2 dropped
    assert facts[0].source == f"thread:{first.id}"
    # the update saw user messages and final answers only, never tool traffic
    update_prompt = model.calls[2][0].text
    assert "user: I always use Polars" in update_prompt and "assistant: Noted: Polars it is." in update_prompt
    assert "TOOLNOISE" not in update_prompt and "echo" not in update_prompt

    second = agent.thread()
    second.chat("Load sales.csv")
    request = model.calls[3]
    human = _first_human(request).text
    assert "<memory>" in human and "Prefers Polars over pandas for large CSV files" in human
    assert "Work context: Data scientist working on churn models at Acme." in human
    # the system prompt is byte-identical; the state never stores the memory block
    assert isinstance(request[0], SystemMessage) and request[0].text == model.calls[0][0].text
    assert "<memory>" not in str(second.state["messages"])


def test_pending_updates_are_flushed_when_the_client_closes(memory_agent, home: Path):
    model = ScriptedChatModel(responses=["ok", MEMORY_JSON])
    agent = memory_agent(model)
    agent.thread().chat("I use Polars")
    agent.close()
    reopened = df.DeerFlow(model=ScriptedChatModel(responses=[]))
    try:
        assert [f.content for f in reopened.memory.facts] == ["Prefers Polars over pandas for large CSV files"]
    finally:
        reopened.close()
    assert (home / "users/default/agents/__default__/facts").is_dir()


def test_tool_mode_gives_the_agent_memory_tools(memory_agent):
    model = ScriptedChatModel(responses=[
        {"content": "", "tool_calls": [{"name": "memory_add", "args": {
            "content": "Reports go to the CFO", "category": "context", "confidence": 0.9}}]},
        {"content": "", "tool_calls": [{"name": "memory_search", "args": {"query": "CFO reports"}}]},
        "Remembered.",
    ])
    agent = memory_agent(model, mode="tool")
    thread = agent.thread()
    thread.chat("Remember that my reports go to the CFO")
    assert [f.content for f in agent.memory.facts] == ["Reports go to the CFO"]
    found = [m for m in thread.messages if getattr(m, "name", None) == "memory_search"][0].text
    assert "Reports go to the CFO" in found
    assert agent.memory.status()["pending_updates"] == 0  # no background learning in tool mode


def test_disabled_memory_neither_injects_nor_learns(memory_agent):
    model = ScriptedChatModel(responses=["a"])
    agent = memory_agent(model, enabled=False)
    agent.memory.add_fact("Secret hobby: knitting")
    agent.thread().chat("hello")
    assert "<memory>" not in _first_human(model.calls[0]).text
    assert agent.memory.status()["pending_updates"] == 0


def test_corrupt_memory_file_does_not_break_a_run(memory_agent, home: Path):
    model = ScriptedChatModel(responses=["still works"])
    agent = memory_agent(model)
    memory = home / "users/default/memory.json"
    memory.parent.mkdir(parents=True)
    memory.write_text("{corrupt")
    assert agent.thread().chat("hello") == "still works"
    assert "<memory>" not in _first_human(model.calls[0]).text
    assert memory.read_text() == "{corrupt"


def test_sdk_object_edits_searches_and_round_trips(memory_agent):
    agent = memory_agent(ScriptedChatModel(responses=[]))
    memory = agent.memory
    fact = memory.add_fact("Uses DuckDB for SQL", category="knowledge", confidence=0.9)
    memory.add_fact("Plots with matplotlib", category="preference")
    memory.set_summary("topOfMind", "Quarterly report due Friday.")
    assert [f.content for f in memory.search("duckdb sql")] == ["Uses DuckDB for SQL"]
    assert memory.update_fact(fact.id, confidence=0.6).confidence == 0.6
    frame = memory.facts.to_pandas()
    assert list(frame["content"]) == ["Uses DuckDB for SQL", "Plots with matplotlib"]
    assert "| knowledge | 0.60 |" in memory.facts._repr_markdown_()
    exported = memory.export()
    memory.clear()
    assert memory.facts == [] and memory.data["user"]["topOfMind"]["summary"] == ""
    memory.import_(exported)
    assert len(memory.facts) == 2 and memory.data["user"]["topOfMind"]["summary"] == "Quarterly report due Friday."
    memory.delete_fact(fact.id)
    assert [f.content for f in memory.facts] == ["Plots with matplotlib"]
    assert memory.config()["max_facts"] == 100 and memory.status()["facts"] == 1
    assert memory.reload()["revision"] == memory.data["revision"]


def test_gateway_methods_conform_to_the_route_models(memory_agent, home: Path):
    agent = memory_agent(ScriptedChatModel(responses=[]), debounce_seconds=5)
    agent.memory.add_fact("Likes tidy data", category="preference", confidence=0.8)
    data = MemoryResponse.model_validate(agent.get_memory())
    assert [f.content for f in data.facts] == ["Likes tidy data"] and data.facts[0].category == "preference"
    assert MemoryResponse.model_validate(agent.reload_memory()) == data
    config = MemoryConfigResponse.model_validate(agent.get_memory_config())
    assert config.debounce_seconds == 5 and config.storage_path == str(home)
    status = MemoryStatusResponse.model_validate(agent.get_memory_status())
    assert status.data == data and status.config == config


@pytest.mark.asyncio
async def test_async_flush_from_a_running_loop(memory_agent):
    model = ScriptedChatModel(responses=["ok", MEMORY_JSON])
    agent = memory_agent(model)
    thread = await agent.athread()
    await thread.achat("I use Polars")
    assert await agent.memory.aflush() == 1
    assert len(agent.memory.facts) == 1
