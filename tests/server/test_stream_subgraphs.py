"""``stream_subgraphs=True``: a subagent's frames stream namespaced (``<mode>|tools:<task_id>``)."""

from __future__ import annotations

import pytest
import yaml

from deerflow_nb.client.http import stream_event_from_wire

from .conftest import write_config

CHILD = "Apples counted by the child: 3."
LEAD = "The lead sums it up."
TASK = {"content": "", "tool_calls": [{"name": "task", "id": "call-apples", "args": {
    "description": "count apples", "prompt": "Count apples", "subagent_type": "counter"}}]}
MSG = {"messages": [{"role": "user", "content": "Count fruit"}]}
CONFIG = {"configurable": {"subagent_enabled": True}}
MODES = ["values", "updates", "messages-tuple"]


@pytest.fixture
def deerflow_config(tmp_path):
    # the lead delegates and then answers LEAD (twice: two runs); the subagent (its own model) answers CHILD
    child = {"name": "child", "use": "deerflow_nb.testing:ScriptedChatModel", "responses": [CHILD] * 2}
    counter = {"name": "counter", "description": "Counts fruit.", "system_prompt": "You count fruit.",
               "model": "child"}
    path = write_config(tmp_path / "config.yaml", [TASK, LEAD] * 2,
                        extra={"title": {"enabled": False}, "subagents": {"custom": [counter]}})
    config = yaml.safe_load(path.read_text())
    config["models"].append(child)
    path.write_text(yaml.safe_dump(config))
    return path


def _text(parts, event: str) -> str:
    return "".join(p.data[0].get("content") or "" for p in parts
                   if p.event == event and p.data[0].get("type") == "AIMessageChunk")


async def test_subagent_frames_are_namespaced_only_when_asked(lg_client):
    thread = await lg_client.threads.create()
    tid = thread["thread_id"]
    parts = [p async for p in lg_client.runs.stream(tid, "lead_agent", input=MSG, config=CONFIG,
                                                     stream_mode=MODES, stream_subgraphs=True)]
    ns = "tools:call-apples"
    events = {p.event for p in parts}
    assert {f"values|{ns}", f"updates|{ns}", f"messages|{ns}"} <= events, events
    assert {e for e in events if "|" in e} == {f"values|{ns}", f"updates|{ns}", f"messages|{ns}"}
    # the child's messages stream namespaced; the parent's ``messages`` carry none of the child's text
    assert CHILD in _text(parts, f"messages|{ns}")
    assert CHILD not in _text(parts, "messages") and LEAD in _text(parts, "messages")
    child_values = [p.data for p in parts if p.event == f"values|{ns}"]
    assert child_values[-1]["messages"][-1]["content"] == CHILD
    assert child_values[0]["messages"][0]["content"] == "Count apples"
    assert any("model" in p.data for p in parts if p.event == f"updates|{ns}")
    # DeerFlow's HTTP client reads them as its events, namespaced
    wire = [stream_event_from_wire(p.event, p.data) for p in parts if p.event == f"messages|{ns}"]
    assert all(e is not None and e.type == "messages-tuple" and e.namespace == ns for e in wire)
    assert CHILD in "".join(e.data.get("content") or "" for e in wire if e and e.data.get("type") == "ai")
    # every frame has its id, in order: replay with Last-Event-ID works alike
    ids = [int(p.id) for p in parts if p.id]
    assert ids == sorted(ids) and len(ids) == len(set(ids))
    run_id = parts[0].data["run_id"]
    first_child = next(i for i, p in enumerate(parts) if p.event == f"values|{ns}")
    replay = [p async for p in lg_client.runs.join_stream(tid, run_id, last_event_id=parts[first_child - 1].id,
                                                          stream_mode=MODES)]
    assert [(p.event, p.id) for p in replay if p.id] == [(p.event, p.id) for p in parts[first_child:] if p.id]
    # the parent's own state and its final text are the lead's
    assert parts[-1].event == "values" and parts[-1].data["messages"][-1]["content"] == LEAD
    assert (await lg_client.runs.get(tid, run_id))["status"] == "success"

    # without the flag: no namespaced frame
    plain = [p async for p in lg_client.runs.stream(tid, "lead_agent", input=MSG, config=CONFIG,
                                                     stream_mode=MODES)]
    assert not [p for p in plain if "|" in p.event]
    assert LEAD in _text(plain, "messages") and CHILD not in _text(plain, "messages")
