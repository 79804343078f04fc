import asyncio
import uuid

import pytest

from deerflow_nb.errors import NotFoundError, ThreadBusyError, UsageError
from deerflow_nb.persistence import JournalEntry, RunInfo, open_store


@pytest.mark.asyncio
async def test_threads_are_scoped_to_their_user(target):
    store = await open_store(target)
    try:
        await store.threads.create("t1", "alice", metadata={"project": "x"})
        await store.threads.create("t2", "alice")
        await store.threads.update("t1", title="First")
        with pytest.raises(UsageError, match="already exists"):
            await store.threads.create("t1", "alice")
        assert (await store.threads.create("t1", "alice", if_exists="do_nothing")).title == "First"
        with pytest.raises(NotFoundError):  # another user's id is "not found", never "exists"
            await store.threads.create("t1", "bob")
        with pytest.raises(NotFoundError):
            await store.threads.get("t1", "bob")
        assert [t.thread_id for t in await store.threads.search("alice")] == ["t1", "t2"]
        assert [t.thread_id for t in await store.threads.search("alice", metadata={"project": "x"})] == ["t1"]
        assert await store.threads.search("bob") == []
        await store.delete_thread("t1", "alice")
        assert await store.threads.find("t1", "alice") is None
    finally:
        await store.aclose()


@pytest.mark.asyncio
async def test_at_most_one_active_run_per_thread_even_when_racing(target):
    store = await open_store(target)
    try:
        await store.threads.create("t", "u")
        results = await asyncio.gather(*(store.runs.create(RunInfo(str(uuid.uuid4()), "t", "u"))
                                         for _ in range(4)), return_exceptions=True)
        assert sum(r is None for r in results) == 1
        assert all(isinstance(r, ThreadBusyError) for r in results if r is not None)
        (active,) = await store.runs.active()
        await store.runs.set_status(active.run_id, "success", thread=("t", "idle"), title="Done")
        assert (await store.threads.get("t", "u")).title == "Done"
        await store.runs.create(RunInfo("next", "t", "u"))  # the thread is free again
        assert (await store.runs.get("next", "u")).status == "pending"
        assert await store.runs.get("next", "other") is None
    finally:
        await store.aclose()


@pytest.mark.asyncio
async def test_orphan_claim_is_atomic(target):
    store = await open_store(target)
    try:
        await store.runs.create(RunInfo("r", "t", "u", owner="elsewhere:1"))
        assert await store.runs.claim_orphan("r", error={"message": "gone"})
        assert not await store.runs.claim_orphan("r", error={"message": "gone"})
        run = await store.runs.get("r", "u")
        assert (run.status, run.stop_reason) == ("error", "orphan_recovered")
    finally:
        await store.aclose()


@pytest.mark.asyncio
async def test_journal_and_feedback_round_trip(target):
    store = await open_store(target)
    try:
        entries = [JournalEntry("r", "t", "u", i, "custom", "custom", {"i": i, "nested": {"ok": True}}, 1.0 + i)
                   for i in range(1, 4)]
        await store.events.append(entries)
        got = await store.events.list("u", run_id="r")
        assert [e.payload["i"] for e in got] == [1, 2, 3] and got[0].payload["nested"] == {"ok": True}
        assert await store.events.list("other", run_id="r") == []
        assert [e.seq for e in await store.events.list("u", thread_id="t", after_seq=2)] == [3]
        fb = await store.feedback.add("r", "t", "u", 1, "great")
        assert await store.feedback.list("r", "u") == [fb]
        assert await store.feedback.list("r", "other") == []
    finally:
        await store.aclose()


@pytest.mark.asyncio
async def test_checkpointer_works_on_both_backends(target):
    from langgraph.checkpoint.base import empty_checkpoint

    store = await open_store(target)
    try:
        config = {"configurable": {"thread_id": "cp", "checkpoint_ns": ""}}
        checkpoint = empty_checkpoint()
        saved = await store.checkpointer.aput(config, checkpoint, {"step": 1}, {})
        loaded = await store.checkpointer.aget_tuple({"configurable": {"thread_id": "cp"}})
        assert loaded is not None and loaded.config["configurable"]["checkpoint_id"] == \
            saved["configurable"]["checkpoint_id"]
    finally:
        await store.aclose()


async def _raw_thread_ids(store) -> set[str]:
    import sqlalchemy as sa

    return set(await store.db.read(lambda c: [r[0] for r in c.execute(sa.text("SELECT thread_id FROM threads_meta"))]))


@pytest.mark.asyncio
async def test_a_new_thread_is_stored_with_its_first_run_or_when_threads_are_read(target):
    store = await open_store(target)
    try:
        await store.ensure_thread("fresh-1", "alice", new=True)
        await store.ensure_thread("fresh-2", "alice", new=True)
        await store.ensure_thread("fresh-3", "bob", new=True)
        assert await _raw_thread_ids(store) == set()  # nothing written yet
        with pytest.raises(NotFoundError):  # but ownership is already enforced
            await store.ensure_thread("fresh-1", "bob")
        # the first run's admission writes the row in its own transaction
        await store.runs.create(RunInfo("r1", "fresh-1", "alice"), status="running", thread_status="running")
        store.threads.mark_saved("fresh-1")
        assert await _raw_thread_ids(store) == {"fresh-1"}
        assert (await store.threads.get("fresh-1", "alice")).status == "running"
        # reading alice's threads writes her unsaved ones (not bob's)
        assert {t.thread_id for t in await store.threads.search("alice")} == {"fresh-1", "fresh-2"}
        assert await _raw_thread_ids(store) == {"fresh-1", "fresh-2"}
        assert (await store.threads.get("fresh-3", "bob")).user_id == "bob"
        assert await _raw_thread_ids(store) == {"fresh-1", "fresh-2", "fresh-3"}
    finally:
        await store.aclose()


@pytest.mark.asyncio
async def test_sqlite_fast_statements_round_trip_through_sqlalchemy(tmp_path):
    from deerflow_nb.persistence.fast import driver_connection, insert_statement
    from deerflow_nb.persistence.models import RunEventRow

    events = RunEventRow.metadata.tables["run_events"]
    statement = insert_statement(events, ("payload",))
    assert "id" not in statement.order and statement.sql.startswith("INSERT INTO run_events")
    store = await open_store(tmp_path / "fast.db")
    try:
        row = {"run_id": "r", "thread_id": "t", "user_id": "u", "seq": 1, "event_type": "custom",
               "category": "custom", "payload": {"nested": [1, "two", None]}, "created_at": 1.5}
        await store.db.write(lambda conn: statement.executemany(driver_connection(conn), [row, {**row, "seq": 2}]))
        read = await store.events.list("u", run_id="r")
        assert [(e.seq, e.payload) for e in read] == [(1, {"nested": [1, "two", None]}), (2, {"nested": [1, "two", None]})]
        await store.runs.create(RunInfo("run-1", "t", "u", metadata={"k": "v"}), status="running")
        await store.runs.set_status("run-1", "success", usage={"total_tokens": 3})
        stored = await store.runs.get("run-1", "u")
        assert (stored.status, stored.metadata, stored.usage, stored.error) == ("success", {"k": "v"}, {"total_tokens": 3}, None)
    finally:
        await store.aclose()
