"""State at a checkpoint, ``update_state`` and runs from a checkpoint, through the official ``langgraph-sdk``."""

from __future__ import annotations

import httpx
import pytest
import yaml


def _msg(text: str) -> dict:
    return {"messages": [{"role": "user", "content": text}]}


@pytest.fixture
def deerflow_config(tmp_path):
    # "Answer to <last word>." for every message; "slow please" streams 400 words (long enough to cancel)
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump({"config_version": 1, "models": [
        {"name": "parity", "use": "tests.client.parity_models:ParityModel", "latency": 0.005}],
        "memory": {"enabled": False}, "title": {"enabled": False}}))
    return path


async def _status(coro) -> int:
    try:
        await coro
    except httpx.HTTPStatusError as exc:
        return exc.response.status_code
    return 200


def _texts(values: dict) -> list[str]:
    return [m["content"] for m in values.get("messages", [])]


async def _two_turns(client) -> tuple[str, dict]:
    """A thread with two exchanges; its id and the checkpoint that ends the first one."""
    tid = (await client.threads.create())["thread_id"]
    await client.runs.wait(tid, "lead_agent", input=_msg("hello one"))
    await client.runs.wait(tid, "lead_agent", input=_msg("hello two"))
    history = await client.threads.get_history(tid, limit=20)
    (end_of_first,) = [h for h in history if _texts(h["values"]) == ["hello one", "Answer to one."]
                       and h["metadata"]["source"] == "loop"]
    return tid, end_of_first


async def test_state_at_a_checkpoint(lg_client):
    tid, first = await _two_turns(lg_client)
    cid = first["checkpoint_id"]
    state = await lg_client.threads.get_state(tid, checkpoint_id=cid)  # GET /state/{checkpoint_id}
    assert _texts(state["values"]) == ["hello one", "Answer to one."]
    assert state["checkpoint_id"] == cid and state["checkpoint"] == {"checkpoint_id": cid, "thread_id": tid}
    assert state["parent_checkpoint_id"] == first["parent_checkpoint_id"] and state["metadata"]["step"] == 1
    posted = await lg_client.threads.get_state(tid, checkpoint=first["checkpoint"])  # POST /state/checkpoint
    assert posted["values"] == state["values"] and posted["checkpoint"]["checkpoint_ns"] == ""
    head = await lg_client.threads.get_state(tid)
    assert len(head["values"]["messages"]) == 4  # reading a checkpoint changes nothing

    assert await _status(lg_client.threads.get_state(tid, checkpoint_id="1f0d0000-0000-0000-0000-0000000000")) == 404
    other = (await lg_client.threads.create())["thread_id"]
    assert await _status(lg_client.threads.get_state(other, checkpoint_id=cid)) == 404  # not that thread's
    bad = {**first["checkpoint"], "checkpoint_ns": "sub"}
    assert await _status(lg_client.threads.get_state(tid, checkpoint=bad)) == 422


async def test_update_state_writes_a_checkpoint(lg_client):
    tid, first = await _two_turns(lg_client)
    head = await lg_client.threads.get_state(tid)
    answer = await lg_client.threads.update_state(tid, {"messages": [{"role": "user", "content": "a note"}],
                                                        "title": "Renamed"}, as_node="model")
    assert set(answer) == {"checkpoint", "configurable", "checkpoint_id"}
    assert answer["checkpoint"] == {"thread_id": tid, "checkpoint_ns": "", "checkpoint_id": answer["checkpoint_id"]}
    state = await lg_client.threads.get_state(tid)
    assert state["checkpoint_id"] == answer["checkpoint_id"]
    assert state["parent_checkpoint_id"] == head["checkpoint_id"] and state["metadata"]["source"] == "update"
    assert _texts(state["values"])[-1] == "a note" and state["values"]["messages"][-1]["type"] == "human"
    assert state["values"]["title"] == "Renamed" and (await lg_client.threads.get(tid))["title"] == "Renamed"

    # a message with an existing id replaces it (how an edit is written)
    edited = {**state["values"]["messages"][0], "content": "hello edited"}
    await lg_client.threads.update_state(tid, {"messages": [edited]})
    assert _texts((await lg_client.threads.get_state(tid))["values"])[:2] == ["hello edited", "Answer to one."]

    # at a checkpoint: a new branch from there becomes the head
    answer = await lg_client.threads.update_state(tid, {"todos": [{"content": "x", "status": "pending"}]},
                                                  checkpoint_id=first["checkpoint_id"])
    state = await lg_client.threads.get_state(tid)
    assert state["checkpoint_id"] == answer["checkpoint_id"] and state["parent_checkpoint_id"] == \
        first["checkpoint_id"]
    assert _texts(state["values"]) == ["hello one", "Answer to one."] and state["values"]["todos"][0]["content"] == "x"


@pytest.mark.parametrize(("values", "field"), [
    ({"nope": 1}, "values.nope"), ({"title": 5}, "values.title"), ({"artifacts": "yes"}, "values.artifacts"),
    ({"messages": 5}, "values.messages[0]"), ({"messages": [{"role": "wat", "content": "x"}]}, "values.messages[0]"),
    ({"messages": [{"content": "no role"}]}, "values.messages[0]"),
    ({"messages": [{"type": "remove", "id": "no-such-message"}]}, "values.messages"),
    ({"messages": [{"type": "remove"}]}, "values.messages[0].id"),
    ({"todos": [{"content": "a", "status": "nope"}]}, "values.todos[0].status"),
    ({"uploaded_files": [{"x": 1}]}, "values.uploaded_files"),  # DeerFlow's own: a bad value breaks the next run
])
async def test_update_state_refuses_invalid_values(lg_client, values, field):
    tid = (await lg_client.threads.create())["thread_id"]
    await lg_client.runs.wait(tid, "lead_agent", input=_msg("hello one"))
    before = await lg_client.threads.get_state(tid)
    with pytest.raises(httpx.HTTPStatusError) as info:
        await lg_client.threads.update_state(tid, values)
    assert info.value.response.status_code == 422 and info.value.response.json()["message"].startswith(field)
    after = await lg_client.threads.get_state(tid)
    assert after["checkpoint_id"] == before["checkpoint_id"]  # refused before anything was written


async def test_update_state_refusals(lg_client):
    tid = (await lg_client.threads.create())["thread_id"]
    await lg_client.runs.wait(tid, "lead_agent", input=_msg("hello one"))
    assert await _status(lg_client.threads.update_state(tid, {"title": "x"}, as_node="tools")) == 422
    assert await _status(lg_client.threads.update_state(tid, {"title": "x"}, checkpoint_id="1f0d-missing")) == 404
    assert await _status(lg_client.threads.update_state("no-such-thread", {"title": "x"})) == 404
    run = await lg_client.runs.create(tid, "lead_agent", input=_msg("slow please"))
    async for part in lg_client.runs.join_stream(tid, run["run_id"], stream_mode="messages-tuple"):
        if part.event == "messages":
            break
    assert await _status(lg_client.threads.update_state(tid, {"title": "x"})) == 409  # a run is going
    await lg_client.runs.cancel(tid, run["run_id"], wait=True)


async def test_run_from_a_checkpoint_is_a_branch(lg_client):
    tid, first = await _two_turns(lg_client)
    old_head = await lg_client.threads.get_state(tid)
    final = await lg_client.runs.wait(tid, "lead_agent", input=_msg("hello three"),
                                      checkpoint_id=first["checkpoint_id"])
    assert _texts(final) == ["hello one", "Answer to one.", "hello three", "Answer to three."]
    head = await lg_client.threads.get_state(tid)
    assert head["values"] == final
    chain, cursor = [], head
    while cursor["parent_checkpoint_id"] and cursor["checkpoint_id"] != first["checkpoint_id"]:
        cursor = await lg_client.threads.get_state(tid, checkpoint_id=cursor["parent_checkpoint_id"])
        chain.append(cursor["checkpoint_id"])
    assert first["checkpoint_id"] in chain  # the new run's checkpoints descend from the one it started at
    # the old continuation is still there, as another branch
    kept = await lg_client.threads.get_state(tid, checkpoint_id=old_head["checkpoint_id"])
    assert _texts(kept["values"])[-2:] == ["hello two", "Answer to two."]
    # the run is journaled like any other, and the `checkpoint` form works too
    runs = await lg_client.runs.list(tid, limit=1)
    assert runs[0]["status"] == "success"
    again = await lg_client.runs.wait(tid, "lead_agent", input=_msg("hello four"), checkpoint=first["checkpoint"])
    assert _texts(again) == ["hello one", "Answer to one.", "hello four", "Answer to four."]
    # refusals: unknown checkpoint (nothing is created), disagreeing ids, stateless runs
    count = len(await lg_client.runs.list(tid, limit=100))
    assert await _status(lg_client.runs.wait(tid, "lead_agent", input=_msg("x"), checkpoint_id="1f0d-missing")) == 404
    assert len(await lg_client.runs.list(tid, limit=100)) == count
    assert await _status(lg_client.runs.wait(tid, "lead_agent", input=_msg("x"), checkpoint_id="a",
                                             checkpoint={**first["checkpoint"]})) == 422
    assert await _status(lg_client.runs.wait(None, "lead_agent", input=_msg("x"),
                                             checkpoint_id=first["checkpoint_id"])) == 422


async def test_cancelled_and_rolled_back_runs_from_a_checkpoint(lg_client):
    tid, first = await _two_turns(lg_client)
    old_head = await lg_client.threads.get_state(tid)

    async def start_and_cancel(action: str) -> None:
        run = await lg_client.runs.create(tid, "lead_agent", input=_msg("slow please"),
                                          checkpoint_id=first["checkpoint_id"])
        async for part in lg_client.runs.join_stream(tid, run["run_id"], stream_mode="messages-tuple"):
            if part.event == "messages":
                break
        await lg_client.runs.cancel(tid, run["run_id"], wait=True, action=action)
        assert (await lg_client.runs.get(tid, run["run_id"]))["status"] == "interrupted"

    # interrupt: the partial answer is kept, marked, on the new branch
    await start_and_cancel("interrupt")
    state = await lg_client.threads.get_state(tid)
    messages = state["values"]["messages"]
    assert _texts(state["values"])[:3] == ["hello one", "Answer to one.", "slow please"] and len(messages) == 4
    assert messages[-1]["additional_kwargs"]["deerflow_interrupted"] is True
    assert messages[-1]["content"].startswith("tick")
    # rollback: the thread is back where it was before the run (the old head's values)
    before = await lg_client.threads.get_state(tid)
    await start_and_cancel("rollback")
    assert (await lg_client.threads.get_state(tid))["values"] == before["values"]
    assert old_head["values"]["messages"][-1]["content"] == "Answer to two."
    # and the thread goes on from there
    final = await lg_client.runs.wait(tid, "lead_agent", input=_msg("hello five"))
    assert _texts(final) == [*_texts(before["values"]), "hello five", "Answer to five."]
