import asyncio

import pytest
import pytest_asyncio

from deerflow_nb.errors import ThreadBusyError, UsageError
from deerflow_nb.persistence import RunInfo, open_store
from deerflow_nb.runtime import CancelOutcome, RunManager, StreamBridge, StreamEvent


@pytest_asyncio.fixture
async def store(tmp_path):
    store = await open_store(tmp_path / "runs.db")
    await store.threads.create("t", "u")
    yield store
    await store.aclose()


def manager_for(store) -> RunManager:
    return RunManager(StreamBridge(64), runs=store.runs, threads=store.threads)


def gated(gate: asyncio.Event, events=("hello",)):
    async def body(record):
        await gate.wait()
        for text in events:
            yield StreamEvent("messages-tuple", {"type": "ai", "id": "m1", "content": text})
        yield StreamEvent("end", {"usage": {"total_tokens": 3}, "stop_reason": None})
    return body


@pytest.mark.asyncio
async def test_lifecycle_and_thread_status(store):
    manager = manager_for(store)
    gate = asyncio.Event()
    record = await manager.create(thread_id="t", user_id="u", body=gated(gate, ("a", "b")))
    assert record.status == "pending"  # the record: its task has not run yet
    # the row: admitted pending, its thread marked in the same transaction
    assert (await store.runs.get(record.run_id, "u")).status == "pending"
    assert (await store.threads.get("t", "u")).status == "running"
    while record.status != "running":  # its task started it (try_start)
        await asyncio.sleep(0.01)
    assert (await store.threads.get("t", "u")).status == "running"
    assert (await store.runs.get(record.run_id, "u")).status == "running"
    gate.set()
    await record.wait()
    assert record.status == "success" and record.final_text == "ab" and record.usage == {"total_tokens": 3}
    stored = await store.runs.get(record.run_id, "u")
    assert stored.status == "success" and stored.usage == {"total_tokens": 3}
    assert (await store.threads.get("t", "u")).status == "idle"
    events = [i.event.type async for i in manager.bridge.subscribe(record.run_id)]
    assert events == ["progress", "messages-tuple", "messages-tuple", "end"]  # progress at once


@pytest.mark.asyncio
async def test_a_run_cancelled_while_pending_never_shows_running(store):
    manager = manager_for(store)
    ran = []

    async def body(record):
        ran.append(record.run_id)
        yield StreamEvent("end", {"usage": None, "stop_reason": None})

    record = await manager.create(thread_id="t", user_id="u", body=body)
    assert (await store.runs.get(record.run_id, "u")).status == "pending"
    assert await manager.cancel(record.run_id) == CancelOutcome.CANCELLED  # before its task ever ran
    await record.wait()
    stored = await store.runs.get(record.run_id, "u")
    assert (stored.status, stored.stop_reason) == ("interrupted", "cancelled") and ran == []
    assert not await store.runs.try_start(record.run_id)  # a late start finds it no longer pending
    events = [i.event.type async for i in manager.bridge.subscribe(record.run_id)]
    assert "messages-tuple" not in events and events[-2:] == ["error", "end"]
    assert (await store.threads.get("t", "u")).status == "idle"


@pytest.mark.asyncio
async def test_reject_interrupt_rollback_and_enqueue(store):
    manager = manager_for(store)
    gate = asyncio.Event()
    first = await manager.create(thread_id="t", user_id="u", body=gated(gate))
    with pytest.raises(ThreadBusyError):
        await manager.create(thread_id="t", user_id="u", body=gated(gate))
    with pytest.raises(ThreadBusyError):  # admission itself never queues: the runtime stores the run (enqueue())
        await manager.create(thread_id="t", user_id="u", body=gated(gate), multitask_strategy="enqueue")
    with pytest.raises(UsageError, match="later"):
        await manager.create(thread_id="t", user_id="u", body=gated(gate), multitask_strategy="later")
    rolled_back = []

    async def on_rollback(record):
        rolled_back.append(record.run_id)

    second = await manager.create(thread_id="t", user_id="u", body=gated(gate), multitask_strategy="interrupt",
                                  on_rollback=on_rollback)
    assert first.status == "interrupted" and rolled_back == []
    third = await manager.create(thread_id="t", user_id="u", body=gated(gate), multitask_strategy="rollback")
    assert second.status == "interrupted" and rolled_back == [second.run_id]
    gate.set()
    await third.wait()
    assert third.status == "success"
    statuses = {r.run_id: r.status for r in await manager.list_by_thread("t", "u")}
    assert statuses == {first.run_id: "interrupted", second.run_id: "interrupted", third.run_id: "success"}


@pytest.mark.asyncio
async def test_two_processes_racing_on_one_database(store):
    a, b = manager_for(store), manager_for(store)
    gate = asyncio.Event()
    results = await asyncio.gather(a.create(thread_id="t", user_id="u", body=gated(gate)),
                                   b.create(thread_id="t", user_id="u", body=gated(gate)),
                                   return_exceptions=True)
    assert sum(isinstance(r, ThreadBusyError) for r in results) == 1
    gate.set()
    winner = next(r for r in results if not isinstance(r, BaseException))
    await winner.wait()


@pytest.mark.asyncio
async def test_cancel_outcomes(store):
    manager = manager_for(store)
    gate = asyncio.Event()
    record = await manager.create(thread_id="t", user_id="u", body=gated(gate))
    assert await manager.cancel(record.run_id, user_id="someone-else") == CancelOutcome.UNKNOWN
    assert await manager.cancel(record.run_id) == "cancelled"  # cancelled while still pending
    assert record.status == "interrupted" and record.error["type"] == "Cancelled"
    assert await manager.cancel(record.run_id) == CancelOutcome.NOT_CANCELLABLE
    assert await manager.cancel("nope") == CancelOutcome.UNKNOWN
    await store.runs.create(RunInfo("remote", "t", "u", owner="another-host:1"), lease_seconds=600)
    # executed by another process: the request is recorded for its owner's lease renewal
    assert await manager.cancel("remote") == CancelOutcome.REQUESTED
    assert (await store.runs.get("remote", "u")).cancel_requested == "interrupt"
    # a run nobody renews (no lease, or an expired one) is recovered by the cancel itself
    await store.runs.create(RunInfo("orphan", "t2", "u", owner="gone:1"))
    assert await manager.cancel("orphan") == CancelOutcome.TAKEN_OVER
    orphan = await store.runs.get("orphan", "u")
    assert (orphan.status, orphan.stop_reason) == ("error", "orphan_recovered")
    with pytest.raises(UsageError):
        await manager.cancel(record.run_id, action="explode")


@pytest.mark.asyncio
async def test_error_and_timeout_statuses(store):
    manager = manager_for(store)

    async def boom(record):
        yield StreamEvent("custom", {"x": 1})
        raise RuntimeError("kaput")

    record = await manager.create(thread_id="t", user_id="u", body=boom)
    await record.wait()
    assert record.status == "error" and record.error["message"] == "kaput"
    assert (await store.threads.get("t", "u")).status == "error"

    never = asyncio.Event()
    slow = await manager.create(thread_id="t", user_id="u", body=gated(never), timeout=0.05)
    await slow.wait()
    assert (slow.status, slow.stop_reason) == ("timeout", "timeout")
    assert (await store.runs.get(slow.run_id, "u")).status == "timeout"


@pytest.mark.asyncio
async def test_orphans_of_dead_processes_are_recovered(store):
    # a run admitted before leases (no lease) and one whose lease expired are orphans; a fresh lease is alive
    await store.runs.create(RunInfo("orphan", "t", "u", status="running", owner="this-host:1"))
    await store.threads.create("t2", "u")
    await store.runs.create(RunInfo("alive", "t2", "u", status="running", owner="other-host:1"), lease_seconds=600)
    manager = manager_for(store)
    assert await manager.recover_orphans() == ["orphan"]
    orphan = await store.runs.get("orphan", "u")
    assert (orphan.status, orphan.stop_reason) == ("error", "orphan_recovered")
    assert (await store.runs.get("alive", "u")).status == "running"  # its owner renews its lease
    record = await manager.create(thread_id="t", user_id="u", body=gated(asyncio.Event()))
    await manager.cancel(record.run_id)  # the thread accepted a new run


@pytest.mark.asyncio
async def test_a_thread_s_queue_is_not_one_of_its_active_runs(store):
    # an interrupt from another process stops the active run only; the queue waits its turn
    manager = manager_for(store)
    gate = asyncio.Event()
    active = await manager.create(thread_id="t", user_id="u", body=gated(gate))
    queued = await manager.enqueue(thread_id="t", user_id="u", run_id="q1")
    assert [r.run_id for r in await store.runs.active_on_thread("t", "u")] == [active.run_id]
    assert {r.run_id for r in await store.runs.list_by_thread("t", "u", status="pending")} >= {"q1"}  # to clients
    assert (await store.runs.get("q1", "u")).status == "queued" and queued.status == "pending"
    gate.set()
    await active.wait()
    await manager.shutdown()
