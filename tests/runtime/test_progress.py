"""Progress events: at once, on quiet intervals, phases from the stream."""

from __future__ import annotations

import asyncio

import pytest

from deerflow_nb.runtime.events import StreamEvent
from deerflow_nb.runtime.progress import MODEL_PROGRESS, ProgressTicker, ProgressTracker


class Published(list):
    """The events a ticker published; ``wait(n)`` waits until there are ``n``."""

    def __init__(self) -> None:
        super().__init__()
        self.changed = asyncio.Event()

    def __call__(self, event: StreamEvent) -> None:
        self.append(event)
        self.changed.set()

    async def wait(self, count: int) -> None:
        while len(self) < count:
            self.changed.clear()
            await asyncio.wait_for(self.changed.wait(), 60)


@pytest.mark.asyncio
async def test_progress_at_once_then_again_while_the_run_is_quiet():
    published = Published()
    ticker = ProgressTicker(published, interval=0.01)
    ticker.start()
    assert published[0].type == "progress" and published[0].data["phase"] == "reading_prompt"
    assert published[0].data["tokens"] == 0
    await published.wait(3)  # nothing happens: progress keeps coming
    assert all(e.type == "progress" for e in published)
    assert published[2].data["elapsed"] >= published[1].data["elapsed"]
    ticker.stop()
    assert ticker._handle is None


@pytest.mark.asyncio
async def test_events_are_forwarded_and_model_reports_become_progress_at_once():
    published = Published()
    ticker = ProgressTicker(published, interval=3600)
    ticker.start()
    ai = StreamEvent("messages-tuple", {"type": "ai", "id": "m", "content": ""})
    assert ticker.observe(ai) is True  # the caller forwards it
    assert ticker.observe(StreamEvent("custom", {"type": MODEL_PROGRESS, "tokens": 8})) is False
    assert [e.data["phase"] for e in published] == ["reading_prompt", "generating"]  # no tick needed
    assert published[1].data["tokens"] == 8
    assert ticker.observe(StreamEvent("custom", {"type": MODEL_PROGRESS, "tokens": 16})) is False
    assert len(published) == 2  # same phase: reported at the next quiet tick, not per report
    ticker.stop()


def test_tracker_phases_follow_tool_calls_and_results():
    tracker = ProgressTracker()
    tracker.observe(StreamEvent("messages-tuple", {"type": "ai", "content": "", "tool_calls": [{"name": "bash"}]}))
    assert (tracker.phase, tracker.event().data["tool"]) == ("running_tool", "bash")
    tracker.observe(StreamEvent("messages-tuple", {"type": "tool", "content": "ok"}))
    assert tracker.phase == "reading_prompt" and "tool" not in tracker.event().data
    tracker.observe(StreamEvent("messages-tuple", {"type": "ai", "content": "The"}))
    assert tracker.phase == "generating" and tracker.event().data["label"] == "generating"




def test_a_run_starts_with_progress(make_agent):
    from deerflow_nb.testing import ScriptedChatModel

    agent = make_agent(model=ScriptedChatModel(responses=["done"]))
    events = list(agent.thread().stream("hi"))
    assert events[0].type == "progress" and events[0].data["label"] == "reading the prompt"
    assert events[-1].type == "end"


def test_the_journal_writes_partial_answers_while_a_long_answer_streams():
    from deerflow_nb.runtime.journal import RunJournal

    journal = RunJournal(None, run_id="r", thread_id="t", user_id="u", partial_every=0)
    journal.observe(StreamEvent("messages-tuple", {"type": "ai", "id": "m", "content": "Hel"}))
    journal.observe(StreamEvent("messages-tuple", {"type": "ai", "id": "m", "content": "lo"}))
    partial = [e.payload["content"] for e in journal._buffer if e.event_type == "ai_partial"]
    assert partial == ["Hel", "Hello"] and journal.should_flush  # written now, not at the 200th entry
