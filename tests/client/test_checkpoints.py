"""Checkpoints at the SDK level, one API for both backends: state at a checkpoint, update_state, runs from one."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, HumanMessage

import deerflow_nb as df
from deerflow_nb.errors import NotFoundError, ThreadBusyError, UsageError
from tests.client.conftest import two_backend_client


@pytest.fixture(scope="module", params=["embedded", "server"])
def agent(request, tmp_path_factory):
    with two_backend_client(request.param, tmp_path_factory.mktemp(f"checkpoints-{request.param}"), {
        "config_version": 1,
        "models": [{"name": "parity", "use": "tests.client.parity_models:ParityModel", "latency": 0.005}],
        "memory": {"enabled": False}, "title": {"enabled": False}}) as client:
        yield client


def _texts(values: dict) -> list[str]:
    return [m.content for m in values["messages"]]


def _end_of_first_turn(thread: df.Thread) -> dict:
    (item,) = [h for h in thread.history() if [m.content for m in h["values"].get("messages", [])]
               == ["hello one", "Answer to one."] and h["metadata"].get("source") == "loop"]
    return item


def test_state_and_checkpoint_at_a_checkpoint(agent):
    thread = agent.thread()
    assert thread.checkpoint() is None  # no run yet
    thread.chat("hello one")
    thread.chat("hello two")
    first = _end_of_first_turn(thread)
    state = thread.get_state(first["checkpoint_id"])
    assert _texts(state) == ["hello one", "Answer to one."] and isinstance(state["messages"][1], AIMessage)
    assert state["artifacts"] == []  # the documented defaults, as thread.state has them
    item = thread.checkpoint(first["checkpoint_id"])
    assert item["checkpoint_id"] == first["checkpoint_id"]
    assert item["parent_checkpoint_id"] == first["parent_checkpoint_id"] and item["step"] == first["step"]
    assert _texts(item["values"]) == ["hello one", "Answer to one."]
    head = thread.checkpoint()
    assert head["checkpoint_id"] == thread.history(limit=1)[0]["checkpoint_id"]
    assert _texts(thread.get_state()) == _texts(thread.state) and len(thread.messages) == 4
    with pytest.raises(NotFoundError):
        thread.get_state("1f0d0000-0000-0000-0000-000000000000")
    with pytest.raises(NotFoundError):
        agent.thread().checkpoint(first["checkpoint_id"])  # another thread's checkpoint


def test_update_state(agent):
    thread = agent.thread()
    thread.chat("hello one")
    thread.chat("hello two")
    before = thread.checkpoint()
    new_id = thread.update_state({"messages": [HumanMessage(content="a note")], "title": "Noted"})
    head = thread.checkpoint()
    assert head["checkpoint_id"] == new_id and head["parent_checkpoint_id"] == before["checkpoint_id"]
    assert head["metadata"]["source"] == "update"
    assert _texts(thread.state)[-1] == "a note" and thread.title == "Noted"
    assert {t["thread_id"]: t["title"] for t in agent.threads()}[thread.id] == "Noted"
    # replace by id (an edit), as a dict this time
    first = thread.messages[0]
    thread.update_state({"messages": [{"type": "human", "content": "hello edited", "id": first.id}]})
    assert _texts(thread.state)[:2] == ["hello edited", "Answer to one."]
    # remove by id
    note = thread.messages[-1]
    thread.update_state({"messages": [{"type": "remove", "id": note.id}]})
    assert note.id not in [m.id for m in thread.messages] and len(thread.messages) == 4
    # at a checkpoint: a branch
    origin = _end_of_first_turn(thread)
    branch = thread.update_state({"todos": [{"content": "x", "status": "pending"}]},
                                 checkpoint_id=origin["checkpoint_id"])
    assert thread.checkpoint()["parent_checkpoint_id"] == origin["checkpoint_id"]
    assert _texts(thread.state) == ["hello one", "Answer to one."] and thread.state["todos"][0]["content"] == "x"
    assert thread.checkpoint()["checkpoint_id"] == branch
    # refusals name the field and write nothing
    for values, field in [({"nope": 1}, "values.nope"), ({"title": 3}, "values.title"),
                          ({"messages": [{"role": "wat", "content": "x"}]}, "values.messages[0]"),
                          ({"messages": [{"type": "remove", "id": "no-such-message"}]}, "values.messages"),
                          ({"sandbox": {"sandbox_id": "x"}}, "values.sandbox")]:
        with pytest.raises(UsageError, match=field.replace("[", r"\[").replace("]", r"\]")):
            thread.update_state(values)
    with pytest.raises(UsageError, match="as_node"):
        thread.update_state({"title": "x"}, as_node="tools")
    with pytest.raises(NotFoundError):
        thread.update_state({"title": "x"}, checkpoint_id="1f0d-missing")
    assert thread.checkpoint()["checkpoint_id"] == branch


def test_runs_from_a_checkpoint(agent):
    thread = agent.thread()
    thread.chat("hello one")
    thread.chat("hello two")
    old_head = thread.checkpoint()
    first = _end_of_first_turn(thread)
    assert thread.chat("hello three", checkpoint_id=first["checkpoint_id"]) == "Answer to three."
    assert _texts(thread.state) == ["hello one", "Answer to one.", "hello three", "Answer to three."]
    assert _texts(thread.get_state(old_head["checkpoint_id"]))[-1] == "Answer to two."  # the old branch stays
    events = list(thread.stream("hello four", checkpoint_id=first["checkpoint_id"]))
    assert events[-1].type == "end" and events[-1].data["status"] == "success"
    assert _texts(thread.state) == ["hello one", "Answer to one.", "hello four", "Answer to four."]
    run = thread.start("hello five", checkpoint_id=first["checkpoint_id"])
    assert run.wait() == "Answer to five."
    # the run is journaled like any other: its input and its answer
    journal = thread.run_events(run.run_id)
    assert journal and any("hello five" in str(e["payload"]) for e in journal)
    assert any("Answer to five." in str(e["payload"]) for e in journal)
    with pytest.raises(NotFoundError):
        thread.chat("x", checkpoint_id="1f0d-missing")
    with pytest.raises(UsageError):
        thread.start("x", checkpoint_id="")


def test_update_state_while_a_run_is_going(agent):
    thread = agent.thread()
    thread.chat("hello one")
    run = thread.start("slow please")
    for event in run.events():
        if event.type == "messages-tuple":
            break
    with pytest.raises(ThreadBusyError):
        thread.update_state({"title": "x"})
    assert run.cancel() == "cancelled"
    with pytest.raises(df.RunError):
        run.wait()
