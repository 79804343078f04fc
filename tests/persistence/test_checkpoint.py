"""The SQLite checkpointer runs LangGraph's SqliteSaver on the store's database thread."""

import contextlib
import operator
import threading
from typing import Annotated, TypedDict

import pytest
from langgraph.graph import END, START, StateGraph

from deerflow_nb.persistence import open_store
from deerflow_nb.persistence.checkpoint import ThreadedSqliteSaver


class _State(TypedDict):
    items: Annotated[list[str], operator.add]


def _graph(checkpointer):
    builder = StateGraph(_State)
    builder.add_node("a", lambda s: {"items": ["a"]})
    builder.add_node("b", lambda s: {"items": ["b"]})
    builder.add_edge(START, "a")
    builder.add_edge("a", "b")
    builder.add_edge("b", END)
    return builder.compile(checkpointer=checkpointer)


@pytest.mark.asyncio
async def test_async_saver_round_trip_on_the_database_thread(tmp_path):
    store = await open_store(tmp_path / "db.sqlite")
    try:
        saver = store.checkpointer
        assert isinstance(saver, ThreadedSqliteSaver)
        assert saver.worker is store.db.worker  # checkpoints and app rows share one thread
        seen: set[str] = set()
        original_execute = saver._execute_batch
        batches = []

        def spy(conn, batch):
            seen.add(threading.current_thread().name)
            batches.append(len(batch))
            return original_execute(conn, batch)

        saver._execute_batch = spy
        graph = _graph(saver)
        config = {"configurable": {"thread_id": "t1"}}
        await graph.ainvoke({"items": ["start"]}, config)
        await graph.ainvoke({"items": ["again"]}, config)
        await saver.aflush()
        assert seen and all(name.startswith("deerflow-db") for name in seen)  # written behind, on the db thread
        assert sum(batches) >= 6  # every checkpoint and write arrived (buffered writes drain together)
        state = await graph.aget_state(config)
        assert state.values["items"] == ["start", "a", "b", "again", "a", "b"]
        history = [item async for item in saver.alist(config)]
        assert len(history) >= 6 and history[0].config == state.config  # newest first
        assert [item async for item in saver.alist(config, limit=2)] == history[:2]
        await saver.adelete_thread("t1")
        assert await saver.aget_tuple(config) is None
    finally:
        await store.aclose()


@pytest.mark.asyncio
async def test_checkpoints_are_readable_by_langgraphs_async_saver(tmp_path):
    import aiosqlite
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    path = tmp_path / "db.sqlite"
    store = await open_store(path)
    try:
        await _graph(store.checkpointer).ainvoke({"items": ["x"]}, {"configurable": {"thread_id": "t"}})
    finally:
        await store.aclose()
    async with aiosqlite.connect(str(path)) as conn:
        other = AsyncSqliteSaver(conn)
        saved = await other.aget_tuple({"configurable": {"thread_id": "t"}})
        assert saved is not None and saved.checkpoint["channel_values"]["items"] == ["x", "a", "b"]


@pytest.mark.asyncio
async def test_a_failed_queued_write_is_reported_by_the_next_operation(tmp_path):
    store = await open_store(tmp_path / "db.sqlite")
    try:
        saver = store.checkpointer

        def broken(*args, **kwargs):
            raise OSError("disk full")

        saver._execute_batch = broken
        graph = _graph(saver)
        with pytest.raises(RuntimeError, match="checkpoint write failed: disk full"):
            await graph.ainvoke({"items": ["x"]}, {"configurable": {"thread_id": "t"}})
            await saver.aflush()
        del saver._execute_batch  # the disk has room again
        with contextlib.suppress(RuntimeError):
            await saver.aflush()  # a failure is reported once, then forgotten
        await graph.ainvoke({"items": ["y"]}, {"configurable": {"thread_id": "t2"}})
        await saver.aflush()
        assert (await saver.aget_tuple({"configurable": {"thread_id": "t2"}})) is not None
    finally:
        await store.aclose()


def test_sync_reads_see_queued_writes(tmp_path):
    import asyncio

    async def write_then_close_loop():
        store = await open_store(tmp_path / "db.sqlite")
        await _graph(store.checkpointer).ainvoke({"items": ["x"]}, {"configurable": {"thread_id": "t"}})
        return store

    store = asyncio.run(write_then_close_loop())
    try:
        saved = store.checkpointer.get_tuple({"configurable": {"thread_id": "t"}})  # from another thread
        assert saved is not None and saved.checkpoint["channel_values"]["items"] == ["x", "a", "b"]
        assert len(list(store.checkpointer.list({"configurable": {"thread_id": "t"}}))) >= 3
    finally:
        asyncio.run(store.aclose())
