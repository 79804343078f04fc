"""Progress events: at once, on quiet intervals, phases from the stream, cancellation kept."""

from __future__ import annotations

import asyncio

import pytest

from deerflow_nb.runtime.events import StreamEvent
from deerflow_nb.runtime.progress import MODEL_PROGRESS, ProgressTracker, with_progress


async def _source(gate: asyncio.Event, events: list[StreamEvent]):
    yield events[0]
    await gate.wait()  # quiet until the test opens the gate
    for event in events[1:]:
        yield event


@pytest.mark.asyncio
async def test_progress_at_once_then_on_quiet_intervals_then_the_stream():
    gate = asyncio.Event()
    ai = StreamEvent("messages-tuple", {"type": "ai", "id": "m", "content": "Hi"})
    end = StreamEvent("end", {"status": "success"})
    stream = with_progress(_source(gate, [StreamEvent("values", {"messages": []}), ai, end]), interval=0.01)
    first = await anext(stream)
    assert first.type == "progress" and first.data["phase"] == "reading_prompt" and first.data["tokens"] == 0
    assert (await anext(stream)).type == "values"
    ticks = [await anext(stream) for _ in range(2)]  # nothing arrives: progress keeps coming
    assert [t.type for t in ticks] == ["progress", "progress"]
    assert ticks[1].data["elapsed"] >= ticks[0].data["elapsed"]
    gate.set()
    rest = [event async for event in stream if event.type != "progress"]
    assert rest == [ai, end]


@pytest.mark.asyncio
async def test_model_reports_become_progress_and_are_not_forwarded():
    report = StreamEvent("custom", {"type": MODEL_PROGRESS, "tokens": 8})

    async def source():
        yield report
        yield StreamEvent("end", {})

    events = [event async for event in with_progress(source(), interval=60)]
    assert [e.type for e in events] == ["progress", "progress", "end"]
    assert events[1].data["phase"] == "generating" and events[1].data["tokens"] == 8  # at once, not at a tick


def test_tracker_phases_follow_tool_calls_and_results():
    tracker = ProgressTracker()
    tracker.observe(StreamEvent("messages-tuple", {"type": "ai", "content": "", "tool_calls": [{"name": "bash"}]}))
    assert (tracker.phase, tracker.event().data["tool"]) == ("running_tool", "bash")
    tracker.observe(StreamEvent("messages-tuple", {"type": "tool", "content": "ok"}))
    assert tracker.phase == "reading_prompt" and "tool" not in tracker.event().data
    tracker.observe(StreamEvent("messages-tuple", {"type": "ai", "content": "The"}))
    assert tracker.phase == "generating" and tracker.event().data["label"] == "generating"


@pytest.mark.asyncio
async def test_cancelling_the_consumer_cancels_the_run_generator():
    closed = asyncio.Event()

    async def source():
        try:
            while True:
                yield StreamEvent("messages-tuple", {"type": "ai", "id": "m", "content": "x"})
                await asyncio.sleep(0)
        finally:
            closed.set()

    async def consume():
        async for _event in with_progress(source(), interval=60):
            pass

    task = asyncio.ensure_future(consume())
    for _ in range(20):
        await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.wait_for(closed.wait(), 30)


@pytest.mark.asyncio
async def test_a_failing_run_raises_through():
    async def source():
        yield StreamEvent("values", {})
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        async for _event in with_progress(source(), interval=60):
            pass
