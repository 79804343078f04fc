"""The SQLite and PostgreSQL savers answer delta-channel histories from what they wrote: the same answers as the
database's."""

from __future__ import annotations

from typing import Annotated, TypedDict

import pytest
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.channels import DeltaChannel
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.graph import END, START, StateGraph

from deerflow_nb.agent.reducers import merge_message_writes
from deerflow_nb.persistence import open_store
from deerflow_nb.persistence.postgres_saver import DeltaLoggingPostgresSaver


class _State(TypedDict):
    messages: Annotated[list[AnyMessage], DeltaChannel(merge_message_writes, snapshot_frequency=5)]
    note: str


def _graph(checkpointer):
    builder = StateGraph(_State)
    builder.add_node("model", lambda s: {"messages": [AIMessage(f"reply {len(s['messages'])}")]})
    builder.add_node("tool", lambda s: {"messages": [AIMessage("tool")], "note": "x"})
    builder.add_edge(START, "model")
    builder.add_edge("model", "tool")
    builder.add_edge("tool", END)
    return builder.compile(checkpointer=checkpointer)


def _state(history):
    """The channel value a history rebuilds (seed, then the writes through the reducer)."""
    channel = DeltaChannel(merge_message_writes).from_checkpoint(history["messages"].get("seed"))
    channel.replay_writes(history["messages"]["writes"])
    return [(type(m).__name__, m.id, m.content) for m in channel.value]


async def _from_database(store, saver, config):
    """The history the database gives, past the saver's log."""
    if isinstance(saver, DeltaLoggingPostgresSaver):
        return await AsyncPostgresSaver.aget_delta_channel_history(saver, config=config, channels=["messages"])
    return await store.db.worker.call(saver.get_delta_channel_history, config=config, channels=["messages"])


@pytest.mark.asyncio
@pytest.mark.parametrize("fold", [False, True])
async def test_histories_from_memory_equal_the_databases(target, fold):
    store = await open_store(target)
    try:
        saver = store.checkpointer
        assert hasattr(saver, "delta_log"), type(saver)
        if fold:  # kept histories folded into one value by the reducer
            saver.delta_log.register_fold("messages", merge_message_writes)
        graph = _graph(saver)
        config = {"configurable": {"thread_id": "t"}}
        answered_from_memory = 0
        for turn in range(12):
            await graph.ainvoke({"messages": [HumanMessage(f"q{turn}")]}, config)
            if turn == 4:  # a branch from an older checkpoint, then runs go on from the new head
                older = [item async for item in saver.alist(config)][5]
                await graph.aupdate_state(older.config, {"messages": [HumanMessage("edited")]})
            if hasattr(saver, "aflush"):  # the SQLite saver writes behind the run
                await saver.aflush()
            head = await saver.aget_tuple(config)
            memory = saver.delta_log.history("t", "", head.config["configurable"]["checkpoint_id"], ["messages"])
            database = await _from_database(store, saver, head.config)
            if "messages" in head.checkpoint["channel_values"]:
                continue  # a snapshot: readers take it as it is and ask for no history
            assert memory is not None or turn == 4  # the branch's parent was dropped: the database answers
            if memory is not None:
                answered_from_memory += 1
                assert _state(memory) == _state(database)
        assert answered_from_memory >= 3
        # what the graph reads equals a fresh reader of the database
        state = await graph.aget_state(config)
        saver.delta_log.forget("t")
        assert [m.content for m in (await graph.aget_state(config)).values["messages"]] == \
            [m.content for m in state.values["messages"]]
        assert len(state.values["messages"]) > 30
    finally:
        await store.aclose()


@pytest.mark.asyncio
async def test_each_value_is_serialised_once_for_the_database_and_the_log(target, monkeypatch):
    """The log keeps the bytes the database got: no write, and no channel value, is serialised twice."""
    store = await open_store(target)
    try:
        saver = store.checkpointer
        dumped: list = []  # the objects themselves, so no id is reused while the test runs
        dumps_typed = saver.serde.dumps_typed

        def counting(obj):
            dumped.append(obj)
            return dumps_typed(obj)

        monkeypatch.setattr(saver.serde, "dumps_typed", counting)
        graph = _graph(saver)
        config = {"configurable": {"thread_id": "t"}}
        for turn in range(7):  # past a snapshot (every 5 steps): the whole list is a value then
            await graph.ainvoke({"messages": [HumanMessage(f"q{turn}")]}, config)
        if hasattr(saver, "aflush"):
            await saver.aflush()
        shared = (str, int, float, bool, type(None))  # interned values: one object stands for many
        ids = [id(obj) for obj in dumped if not isinstance(obj, shared)]
        assert len(ids) == len(set(ids)), [obj for obj in dumped if ids.count(id(obj)) > 1]
        bodies = [obj for obj in dumped if isinstance(obj, dict) and "channel_values" in obj]
        assert bodies, "no checkpoint body was serialised"
        direct = set(ids)
        for body in bodies:  # a channel value serialised on its own is not serialised again inside a body
            assert not [k for k, v in body["channel_values"].items() if not isinstance(v, shared) and id(v) in direct]
        # and what the log holds answers as the database does, the snapshot's seed included
        seeded = 0
        for item in [item async for item in saver.alist(config)]:  # PostgreSQL: the listing holds the connection
            if "messages" in item.checkpoint["channel_values"]:
                continue  # a snapshot: read as it is
            memory = saver.delta_log.history("t", "", item.config["configurable"]["checkpoint_id"], ["messages"])
            if memory is not None:
                seeded += "seed" in memory["messages"]
                assert _state(memory) == _state(await _from_database(store, saver, item.config))
        assert seeded
    finally:
        await store.aclose()
