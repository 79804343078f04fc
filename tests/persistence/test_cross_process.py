"""Two run managers on one database: cancel through the database, wait on and follow another's run.

No wall-clock assertions: renewal is quick and the tests wait on conditions.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from deerflow_nb.errors import ThreadBusyError
from deerflow_nb.persistence import JournalEntry, RunInfo, open_store
from deerflow_nb.runtime import CancelOutcome, RunManager, StreamBridge, StreamEvent
from deerflow_nb.runtime.follow import follow_stored_run


def _manager(store, **leases) -> RunManager:
    manager = RunManager(StreamBridge(64), runs=store.runs, threads=store.threads, **leases)
    manager.poll_seconds = 0.02
    return manager


async def _forever(record):
    yield StreamEvent("messages-tuple", {"type": "ai", "id": "m1", "content": "partial"})
    await asyncio.Event().wait()


@pytest.mark.asyncio
async def test_a_cancel_from_another_process_is_carried_out_by_the_owner(target):
    owner_store, peer_store = await open_store(target), await open_store(target)
    try:
        await owner_store.threads.create("t", "u")
        owner = _manager(owner_store, lease_seconds=5, lease_renew_seconds=0.05)
        owner.start_maintenance()
        record = await owner.create(thread_id="t", user_id="u", body=_forever)
        peer = _manager(peer_store)
        assert await peer.cancel(record.run_id, user_id="other") == CancelOutcome.UNKNOWN
        assert await peer.cancel(record.run_id, user_id="u") == CancelOutcome.REQUESTED
        assert (await peer_store.runs.get(record.run_id, "u")).cancel_requested == "interrupt"

        done = await asyncio.wait_for(peer.wait_stored(record.run_id, "u"), 60)
        assert (done.status, done.stop_reason) == ("interrupted", "cancelled")
        await asyncio.wait_for(record.wait(), 60)
        assert record.status == "interrupted" and not record.lease_lost
        assert await peer.cancel(record.run_id, user_id="u") == CancelOutcome.NOT_CANCELLABLE
        assert await peer.wait_stored("missing", "u") is None
        await owner.shutdown()
    finally:
        await owner_store.aclose()
        await peer_store.aclose()


def _entry(seq: int, event_type: str, payload: dict) -> JournalEntry:
    return JournalEntry("r", "t", "u", seq, event_type, "message", payload, time.time())


@pytest.mark.asyncio
async def test_following_a_stored_run_replays_its_journal_then_ends_with_its_outcome(target):
    store = await open_store(target)
    try:
        await store.threads.create("t", "u")
        await store.runs.create(RunInfo("r", "t", "u", owner="elsewhere:1"), status="running", lease_seconds=600)
        await store.events.append([_entry(1, "human_message", {"type": "human", "content": "go"}),
                                   _entry(2, "ai_partial", {"type": "ai", "id": "m", "content": "Hel"})])
        seen: list[tuple[int | None, StreamEvent]] = []
        reached_live = asyncio.Event()

        async def follow() -> None:
            async for item in follow_stored_run(store.runs, store.events, "r", "u", poll_seconds=0.02,
                                                final_values=_values):
                seen.append(item)
                if item[1].type == "messages-tuple":
                    reached_live.set()

        async def _values():
            return {"messages": ["final"]}

        task = asyncio.create_task(follow())
        await asyncio.wait_for(reached_live.wait(), 60)
        # the owner goes on: more text, then the outcome and its journal end in one transaction
        await store.events.append([_entry(3, "ai_partial", {"type": "ai", "id": "m", "content": "Hello wor"})])
        await store.runs.set_status("r", "success", thread=("t", "idle"), events=[
            _entry(4, "ai_message", {"type": "ai", "id": "m", "content": "Hello world"}),
            _entry(5, "run_end", {"run_id": "r", "status": "success"})])
        await asyncio.wait_for(task, 60)
        deltas = [e.data["content"] for _, e in seen if e.type == "messages-tuple"]
        assert "".join(deltas) == "Hello world" and deltas[0] == "Hel"
        assert [e.type for _, e in seen][-2:] == ["values", "end"]
        assert seen[-1][0] == 5 and seen[-2] == (None, StreamEvent("values", {"messages": ["final"]}))

        # a reconnect after seq 3 sends only the rest (text sent before is not sent twice)
        rest = [item async for item in follow_stored_run(store.runs, store.events, "r", "u", after_seq=3)]
        assert [(s, e.type, e.data.get("content")) for s, e in rest] == [(4, "messages-tuple", "ld"), (5, "end", None)]
    finally:
        await store.aclose()


@pytest.mark.asyncio
async def test_following_a_recovered_run_ends_with_its_stored_error(target):
    store = await open_store(target)
    try:
        await store.threads.create("t", "u")
        await store.runs.create(RunInfo("r", "t", "u", owner="dead:1"), status="running", lease_seconds=0.01)
        await store.events.append([_entry(1, "ai_partial", {"type": "ai", "id": "m", "content": "half"})])
        peer = _manager(store)

        async def recovered() -> None:
            while await peer.recover_orphans() != ["r"]:
                await asyncio.sleep(0.02)
        await asyncio.wait_for(recovered(), 60)
        events = [e async for _, e in follow_stored_run(store.runs, store.events, "r", "u")]
        assert [e.type for e in events] == ["messages-tuple", "error", "end"]
        assert events[1].data["stop_reason"] == "orphan_recovered" and events[2].data["status"] == "error"
        assert [e async for e in follow_stored_run(store.runs, store.events, "r", "someone-else")] == []
    finally:
        await store.aclose()


@pytest.mark.asyncio
async def test_a_quiet_followed_run_yields_heartbeats(target):
    store = await open_store(target)
    try:
        await store.threads.create("t", "u")
        await store.runs.create(RunInfo("r", "t", "u", owner="elsewhere:1"), status="running", lease_seconds=600)
        follower = follow_stored_run(store.runs, store.events, "r", "u", poll_seconds=0.01, heartbeat_seconds=0.02)
        assert await asyncio.wait_for(anext(follower), 60) == (None, None)  # nothing happened: a heartbeat
        await store.runs.set_status("r", "success", thread=("t", "idle"))
        assert [e.type async for _, e in follower if e is not None] == ["end"]
    finally:
        await store.aclose()


@pytest.mark.asyncio
async def test_cancelling_a_run_whose_owner_is_gone_takes_it_over(target):
    store = await open_store(target)
    try:
        await store.threads.create("t", "u")
        await store.runs.create(RunInfo("r", "t", "u", owner="dead:1"), status="running", lease_seconds=0.01)
        seen: list[str] = []

        async def on_recovered(run_ids: list[str]) -> None:
            seen.extend(run_ids)

        peer = _manager(store)
        peer.on_recovered = on_recovered

        async def taken() -> None:  # once the lease ran out on the database's clock
            while await peer.cancel("r", user_id="u") != CancelOutcome.TAKEN_OVER:
                await asyncio.sleep(0.02)
        await asyncio.wait_for(taken(), 60)
        run = await store.runs.get("r", "u")
        assert (run.status, run.stop_reason) == ("error", "orphan_recovered") and seen == ["r"]
        assert (await store.threads.get("t", "u")).status == "error"
        assert await peer.cancel("r", user_id="u") == CancelOutcome.NOT_CANCELLABLE
    finally:
        await store.aclose()


async def _quick(record):
    yield StreamEvent("messages-tuple", {"type": "ai", "id": "m2", "content": "done"})


@pytest.mark.asyncio
@pytest.mark.parametrize("strategy", ["interrupt", "rollback"])
async def test_interrupt_and_rollback_stop_another_process_s_run_before_the_new_one_starts(target, strategy):
    owner_store, peer_store = await open_store(target), await open_store(target)
    try:
        await owner_store.threads.create("t", "u")
        owner = _manager(owner_store, lease_seconds=5, lease_renew_seconds=0.05)
        owner.start_maintenance()
        first = await owner.create(thread_id="t", user_id="u", body=_forever)
        peer = _manager(peer_store, lease_seconds=5, lease_renew_seconds=0.05)
        with pytest.raises(ThreadBusyError):  # the default strategy still refuses
            await peer.create(thread_id="t", user_id="u", body=_quick)
        second = await asyncio.wait_for(
            peer.create(thread_id="t", user_id="u", body=_quick, multitask_strategy=strategy), 60)
        stopped = await owner_store.runs.get(first.run_id, "u")
        assert (stopped.status, stopped.cancel_requested) == ("interrupted", strategy)  # ended before admission
        await asyncio.wait_for(second.wait(), 60)
        assert second.status == "success"
        assert first.status == "interrupted" and first.rollback_requested == (strategy == "rollback")
        await owner.shutdown()
        await peer.shutdown()
    finally:
        await owner_store.aclose()
        await peer_store.aclose()


@pytest.mark.asyncio
async def test_interrupt_takes_over_a_dead_process_s_run_and_starts(target):
    store = await open_store(target)
    try:
        await store.threads.create("t", "u")
        await store.runs.create(RunInfo("r", "t", "u", owner="dead:1"), status="running", lease_seconds=0.5)
        peer = _manager(store, lease_seconds=0.5, lease_renew_seconds=0.1)
        record = await asyncio.wait_for(
            peer.create(thread_id="t", user_id="u", body=_quick, multitask_strategy="interrupt"), 60)
        await asyncio.wait_for(record.wait(), 60)
        assert record.status == "success"
        assert (await store.runs.get("r", "u")).stop_reason == "orphan_recovered"
        await peer.shutdown()
    finally:
        await store.aclose()
