"""The official langgraph-sdk client against the gateway (in-process server)."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from .conftest import write_config

SLOW = "word " * 60
MSG = {"messages": [{"role": "user", "content": "hello"}]}


@pytest.fixture
def deerflow_config(tmp_path):
    # every run answers SLOW, one word per 20 ms: long enough to observe, cancel and conflict
    return write_config(tmp_path / "config.yaml", [SLOW] * 30, latency=0.02)


async def test_assistants_and_threads(lg_client):
    (assistant,) = await lg_client.assistants.search()
    assert assistant["assistant_id"] == "lead_agent" and assistant["graph_id"] == "lead_agent"
    thread = await lg_client.threads.create(metadata={"topic": "sdk"})
    assert (await lg_client.threads.get(thread["thread_id"]))["metadata"]["topic"] == "sdk"
    assert [t["thread_id"] for t in await lg_client.threads.search(metadata={"topic": "sdk"})] == \
        [thread["thread_id"]]
    state = await lg_client.threads.get_state(thread["thread_id"])
    assert state["values"] == {} and state["checkpoint"] is None
    await lg_client.threads.delete(thread["thread_id"])
    with pytest.raises(httpx.HTTPStatusError) as info:
        await lg_client.threads.get(thread["thread_id"])
    assert info.value.response.status_code == 404


async def test_stream_wait_join_list_get(lg_client):
    thread = await lg_client.threads.create()
    tid = thread["thread_id"]
    created = []
    parts = [p async for p in lg_client.runs.stream(tid, "lead_agent", input=MSG,
                                                     stream_mode=["values", "messages-tuple"],
                                                     on_run_created=created.append)]
    kinds = [p.event for p in parts]
    # as langgraph dev sends it: metadata, values, messages [chunk, metadata] ..., values; no ``end``
    assert kinds[0] == "metadata" and kinds[-1] == "values" and "end" not in kinds
    assert set(kinds) == {"metadata", "values", "messages"}
    chunks = [p.data for p in parts if p.event == "messages"]
    assert all(isinstance(c, list) and len(c) == 2 for c in chunks)
    text = "".join(c[0]["content"] for c in chunks if c[0]["type"] == "AIMessageChunk")
    assert text == SLOW.strip() or text == SLOW
    assert chunks[0][1]["thread_id"] == tid and chunks[0][1]["langgraph_node"] == "model"
    last = parts[-1].data["messages"][-1]  # full state: the streamed answer's text is there
    assert last["type"] == "ai" and last["content"].strip() == SLOW.strip() and "streamed" not in last
    ids = [int(p.id) for p in parts if p.id]
    assert ids == sorted(ids) and len(ids) == len(set(ids))
    # Content-Location is the run's URL: on_run_created reports the run id itself
    (meta,) = created
    assert meta["thread_id"] == tid and meta["run_id"] == parts[0].data["run_id"]
    assert (await lg_client.runs.get(tid, meta["run_id"]))["status"] == "success"

    state = await lg_client.threads.get_state(tid)
    assert state["values"]["messages"][-1]["content"].strip() == SLOW.strip()
    assert len(await lg_client.threads.get_history(tid, limit=3)) == 3

    run = await lg_client.runs.create(tid, "lead_agent", input=MSG)
    joined = await lg_client.runs.join(tid, run["run_id"])
    assert len(joined["messages"]) == 4
    got = await lg_client.runs.get(tid, run["run_id"])
    assert got["status"] == "success"
    runs = await lg_client.runs.list(tid)
    assert len(runs) == 2 and runs[0]["run_id"] == run["run_id"]
    waited = await lg_client.runs.wait(tid, "lead_agent", input=MSG)
    assert len(waited["messages"]) == 6


async def test_conflict_cancel_and_interrupt(lg_client):
    from langgraph_sdk.errors import ConflictError

    tid = (await lg_client.threads.create())["thread_id"]
    run = await lg_client.runs.create(tid, "lead_agent", input=MSG)
    with pytest.raises((ConflictError, httpx.HTTPStatusError)) as info:
        await lg_client.runs.create(tid, "lead_agent", input=MSG)
    assert info.value.response.status_code == 409
    await asyncio.sleep(0.2)
    assert (await lg_client.threads.get(tid))["status"] == "running"
    await lg_client.runs.cancel(tid, run["run_id"], wait=True)
    assert (await lg_client.runs.get(tid, run["run_id"]))["status"] == "interrupted"
    second = await lg_client.runs.create(tid, "lead_agent", input=MSG)
    third = await lg_client.runs.create(tid, "lead_agent", input=MSG, multitask_strategy="interrupt")
    assert (await lg_client.runs.get(tid, second["run_id"]))["status"] == "interrupted"
    await lg_client.runs.join(tid, third["run_id"])
    assert (await lg_client.runs.get(tid, third["run_id"]))["status"] == "success"


async def test_stateless_runs(lg_client):
    parts = [p async for p in lg_client.runs.stream(None, "lead_agent", input=MSG, stream_mode="messages-tuple")]
    assert {p.event for p in parts} == {"metadata", "messages"}  # only the requested mode
    result = await lg_client.runs.wait(None, "lead_agent", input=MSG)
    assert result["messages"][-1]["content"].strip() == SLOW.strip()


async def test_join_stream_replays_after_last_event_id(lg_client):
    tid = (await lg_client.threads.create())["thread_id"]
    run = await lg_client.runs.create(tid, "lead_agent", input=MSG, stream_mode=["messages-tuple"])
    first = []
    async for part in lg_client.runs.join_stream(tid, run["run_id"]):
        if part.id:
            first.append(part)
        if len(first) == 5:
            break  # disconnect mid-run
    rest = [p async for p in lg_client.runs.join_stream(tid, run["run_id"], last_event_id=first[-1].id,
                                                        stream_mode=["messages-tuple", "values", "custom", "end"])]
    ids = [int(p.id) for p in first] + [int(p.id) for p in rest if p.id]
    assert ids == list(range(ids[0], ids[0] + len(ids)))  # nothing lost, nothing twice
    assert rest[-1].event == "end"  # DeerFlow's opt-in ``end`` mode
