"""Run leases: renewal keeps a run alive, an expired lease is recovered by another process on the database.

No wall-clock assertions: leases are tiny and the tests wait on conditions.
"""

from __future__ import annotations

import asyncio

import pytest

from deerflow_nb.persistence import RunInfo, open_store
from deerflow_nb.runtime import RunManager, StreamBridge, StreamEvent
from deerflow_nb.utils.owner import HOST_ID_ENV


async def _until(predicate, *, attempts: int = 400, pause: float = 0.02) -> None:
    for _ in range(attempts):
        if await predicate():
            return
        await asyncio.sleep(pause)
    raise AssertionError("condition never held")


def _manager(store, **leases) -> RunManager:
    return RunManager(StreamBridge(64), runs=store.runs, threads=store.threads, **leases)


def _gated(gate: asyncio.Event):
    async def body(record):
        yield StreamEvent("messages-tuple", {"type": "ai", "id": "m1", "content": "partial"})
        await gate.wait()
        yield StreamEvent("end", {"usage": None, "stop_reason": None})
    return body


@pytest.mark.asyncio
async def test_a_fresh_lease_is_never_recovered_and_an_expired_one_is(target):
    owner_store, peer_store = await open_store(target), await open_store(target)
    try:
        await owner_store.threads.create("t", "u")
        await owner_store.runs.create(RunInfo("fresh", "t", "u", owner="a:1"), status="running", lease_seconds=600)
        peer = _manager(peer_store)
        assert await peer.recover_orphans() == []
        assert not await peer_store.runs.claim_orphan("fresh", error={"message": "no"})
        assert (await peer_store.runs.get("fresh", "u")).status == "running"

        await owner_store.threads.create("t2", "u")
        await owner_store.runs.create(RunInfo("stale", "t2", "u", owner="a:1"), status="running", lease_seconds=0.05)

        async def recovered() -> bool:
            return await peer.recover_orphans() == ["stale"]
        await _until(recovered)
        stale = await owner_store.runs.get("stale", "u")
        assert (stale.status, stale.stop_reason) == ("error", "orphan_recovered")
        assert stale.error["type"] == "OrphanRecovered"
        assert (await owner_store.threads.get("t2", "u")).status == "error"
        assert (await owner_store.runs.get("fresh", "u")).status == "running"
        # the thread takes new runs again
        await peer_store.runs.create(RunInfo("next", "t2", "u"), lease_seconds=600)
    finally:
        await owner_store.aclose()
        await peer_store.aclose()


@pytest.mark.asyncio
async def test_renewal_keeps_a_run_alive_and_a_dead_owner_is_recovered(target):
    owner_store, peer_store = await open_store(target), await open_store(target)
    try:
        await owner_store.threads.create("t", "u")
        owner = _manager(owner_store, lease_seconds=0.3, lease_renew_seconds=0.05)
        owner.start_maintenance()
        gate = asyncio.Event()
        record = await owner.create(thread_id="t", user_id="u", body=_gated(gate))
        first = (await owner_store.runs.get(record.run_id, "u")).lease_expires_at
        assert first is not None

        async def renewed_twice() -> bool:
            lease = (await peer_store.runs.get(record.run_id, "u")).lease_expires_at
            return lease is not None and lease > first + 0.05
        await _until(renewed_twice)
        peer = _manager(peer_store, lease_seconds=0.3, lease_renew_seconds=0.05)
        # the owner renews more often than the lease lasts: however often the peer looks, it is alive
        for _ in range(10):
            assert await peer.recover_orphans() == []
            await asyncio.sleep(0.05)
        assert (await peer_store.runs.get(record.run_id, "u")).status == "running"

        # the owner "dies": its upkeep stops (the run's task stays, as in a frozen process)
        owner._maintenance.cancel()
        await asyncio.wait([owner._maintenance])

        async def recovered() -> bool:
            return await peer.recover_orphans() == [record.run_id]
        await _until(recovered)
        assert (await peer_store.runs.get(record.run_id, "u")).stop_reason == "orphan_recovered"

        # the owner comes back: its next renewal finds the run taken and fences it (nothing stored)
        await owner.renew_leases()
        await record.wait()
        assert record.lease_lost and record.status == "interrupted"
        assert (await peer_store.runs.get(record.run_id, "u")).status == "error"
    finally:
        await owner_store.aclose()
        await peer_store.aclose()


@pytest.mark.asyncio
async def test_periodic_recovery_in_a_long_lived_process(target):
    owner_store, peer_store = await open_store(target), await open_store(target)
    try:
        await owner_store.threads.create("t", "u")
        await owner_store.runs.create(RunInfo("gone", "t", "u", owner="dead:1"), status="running", lease_seconds=0.05)
        seen: list[str] = []

        async def on_recovered(run_ids: list[str]) -> None:
            seen.extend(run_ids)

        peer = _manager(peer_store, lease_seconds=0.3, lease_renew_seconds=0.02, recover_interval_seconds=0.05,
                        on_recovered=on_recovered)
        peer.start_maintenance()

        async def noticed() -> bool:
            return seen == ["gone"]
        await _until(noticed)
        assert (await peer_store.runs.get("gone", "u")).status == "error"
        await peer.shutdown()
        assert peer._maintenance is None
    finally:
        await owner_store.aclose()
        await peer_store.aclose()


_OWNER_SCRIPT = """
import asyncio, sys
from pathlib import Path
from deerflow_nb.persistence import DatabaseTarget, open_store
from deerflow_nb.runtime import RunManager, StreamBridge

async def main():
    backend, url, path, lease, thread = sys.argv[1:6]
    store = await open_store(DatabaseTarget(backend, url, Path(path) if path else None))
    await store.threads.create(thread, "u")
    manager = RunManager(StreamBridge(8), runs=store.runs, threads=store.threads,
                         lease_seconds=float(lease), lease_renew_seconds=0.05)
    manager.start_maintenance()

    async def body(record):
        await asyncio.Event().wait()
        yield

    record = await manager.create(thread_id=thread, user_id="u", body=body)
    print(record.run_id, flush=True)
    await asyncio.Event().wait()

asyncio.run(main())
"""


@pytest.mark.asyncio
async def test_a_killed_owner_process_is_recovered_by_another(target):
    import os
    import signal
    import sys

    await (await open_store(target)).aclose()  # bootstrap once, before the two processes race for it
    owner = await asyncio.create_subprocess_exec(
        sys.executable, "-c", _OWNER_SCRIPT, target.backend, target.url, str(target.sqlite_path or ""), "0.5", "t",
        stdout=asyncio.subprocess.PIPE, env={**os.environ, HOST_ID_ENV: "another-host"})
    store = await open_store(target)
    try:
        assert owner.stdout is not None
        run_id = (await asyncio.wait_for(owner.stdout.readline(), 60)).decode().strip()
        assert run_id
        peer = _manager(store)
        first = (await store.runs.get(run_id, "u")).lease_expires_at

        async def renewed() -> bool:  # the owner process is alive and renewing
            return (await store.runs.get(run_id, "u")).lease_expires_at > first
        await _until(renewed, attempts=1500)
        for _ in range(10):
            assert await peer.recover_orphans() == []
            await asyncio.sleep(0.05)

        os.kill(owner.pid, signal.SIGKILL)
        await owner.wait()

        async def recovered() -> bool:
            return await peer.recover_orphans() == [run_id]
        await _until(recovered, attempts=1500)
        run = await store.runs.get(run_id, "u")
        assert (run.status, run.stop_reason) == ("error", "orphan_recovered")
    finally:
        if owner.returncode is None:
            owner.kill()
            await owner.wait()
        await store.aclose()


@pytest.mark.asyncio
async def test_same_host_and_pid_does_not_keep_an_expired_run_alive(target):
    # a pod restarted with the same host name and pid: the old heuristic took such a run for alive
    from deerflow_nb.runtime.run_manager import process_owner

    store = await open_store(target)
    try:
        await store.threads.create("t", "u")
        await store.runs.create(RunInfo("r", "t", "u", owner=process_owner()), status="running", lease_seconds=0.05)
        restarted = _manager(store)
        assert restarted.owner != process_owner()  # each manager's identity is its own

        async def recovered() -> bool:
            return await restarted.recover_orphans() == ["r"]
        await _until(recovered)
    finally:
        await store.aclose()


async def _owner_process(target, *, lease: float, host: str | None = None, thread: str = "t"):
    import os
    import sys

    env = dict(os.environ)
    env.pop(HOST_ID_ENV, None)
    if host is not None:
        env[HOST_ID_ENV] = host
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", _OWNER_SCRIPT, target.backend, target.url, str(target.sqlite_path or ""), str(lease), thread,
        stdout=asyncio.subprocess.PIPE, env=env)
    assert proc.stdout is not None
    run_id = (await asyncio.wait_for(proc.stdout.readline(), 60)).decode().strip()
    assert run_id
    return proc, run_id


@pytest.mark.asyncio
async def test_a_dead_holder_of_this_host_is_recovered_at_once_and_another_hosts_waits(target, monkeypatch):
    import os
    import signal

    monkeypatch.delenv(HOST_ID_ENV, raising=False)
    await (await open_store(target)).aclose()
    store = await open_store(target)
    procs = []
    try:
        # held by a process of this host, with a lease far from expiring
        here, here_run = await _owner_process(target, lease=600)
        procs.append(here)
        restarted = _manager(store)
        assert await restarted.recover_orphans() == []  # alive: never touched
        os.kill(here.pid, signal.SIGKILL)
        await here.wait()
        # dead: recovered on the first scan (what a restarted server does at start), lease or not
        assert await restarted.recover_orphans() == [here_run]
        run = await store.runs.get(here_run, "u")
        assert (run.status, run.stop_reason) == ("error", "orphan_recovered")
        assert "its process died" in run.error["message"]

        # the same, held by "another host": whether that process lives cannot be told from here
        there, there_run = await _owner_process(target, lease=600, host="another-host", thread="t2")
        procs.append(there)
        os.kill(there.pid, signal.SIGKILL)
        await there.wait()
        assert await restarted.recover_orphans() == []
        assert (await store.runs.get(there_run, "u")).status in {"pending", "running"}  # waits for its lease
        assert not await store.runs.claim_orphan(there_run, error={"message": "no"})
    finally:
        for proc in procs:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
        await store.aclose()


@pytest.mark.asyncio
async def test_a_new_run_on_a_thread_held_by_a_dead_process_is_admitted_at_once(target, monkeypatch):
    import os
    import signal

    monkeypatch.delenv(HOST_ID_ENV, raising=False)
    await (await open_store(target)).aclose()
    store = await open_store(target)
    seen: list[str] = []

    async def on_recovered(run_ids: list[str]) -> None:
        seen.extend(run_ids)

    try:
        proc, run_id = await _owner_process(target, lease=600)
        os.kill(proc.pid, signal.SIGKILL)
        await proc.wait()
        manager = RunManager(StreamBridge(64), runs=store.runs, threads=store.threads, on_recovered=on_recovered)
        gate = asyncio.Event()
        gate.set()
        record = await manager.create(thread_id="t", user_id="u", body=_gated(gate))  # reject: no 409
        await record.wait()
        assert record.status == "success" and seen == [run_id]
        assert (await store.runs.get(run_id, "u")).stop_reason == "orphan_recovered"
    finally:
        await store.aclose()
