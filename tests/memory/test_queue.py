from __future__ import annotations

import asyncio

import pytest

from deerflow_nb.memory import MemoryQueue, PendingUpdate


@pytest.mark.asyncio
async def test_debounce_dedupes_per_thread_and_isolates_failures():
    seen: list[tuple[str, str]] = []

    async def process(item: PendingUpdate) -> None:
        if item.thread_id == "bad":
            raise RuntimeError("model down")
        seen.append((item.thread_id, item.conversation[-1][1]))

    delay = {"value": 3600.0}
    queue = MemoryQueue(process, lambda: delay["value"])
    queue.add(PendingUpdate("u", "t1", [("user", "first")]))
    queue.add(PendingUpdate("u", "t1", [("user", "second")]))
    queue.add(PendingUpdate("u", "bad", [("user", "x")]))
    await asyncio.sleep(0)
    assert seen == [] and queue.pending == 2  # nothing before the debounce delay
    assert await queue.flush() == 1
    assert seen == [("t1", "second")] and queue.pending == 0
    assert queue.last_error == "RuntimeError: model down"
    delay["value"] = 0
    queue.add(PendingUpdate("u", "t2", [("user", "later")]))
    for _ in range(20):
        await asyncio.sleep(0.01)
        if queue.pending == 0 and not queue.processing:
            break
    assert seen[-1] == ("t2", "later")


@pytest.mark.asyncio
async def test_aclose_flushes_within_the_timeout():
    done: list[str] = []

    async def process(item: PendingUpdate) -> None:
        if item.thread_id == "slow":
            await asyncio.sleep(10)
        done.append(item.thread_id)

    queue = MemoryQueue(process, lambda: 3600)
    queue.add(PendingUpdate("u", "fast", [("user", "x")]))
    await queue.aclose(timeout=5)
    assert done == ["fast"]
    queue.add(PendingUpdate("u", "slow", [("user", "x")]))
    await queue.aclose(timeout=0.05)
    assert done == ["fast"]
