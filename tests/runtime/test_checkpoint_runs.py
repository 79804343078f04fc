"""Runs from a checkpoint in the runtime: what DeerFlow does per run stays on the run's own branch."""

from __future__ import annotations

import threading

import pytest

from deerflow_nb.runtime import engine
from deerflow_nb.runtime.worker import INTERRUPTED_FLAG


def _texts(values: dict) -> list[str]:
    return [m.content for m in values.get("messages", [])]


def test_a_run_cancelled_before_its_first_checkpoint_is_marked_on_its_branch(make_agent, monkeypatch):
    agent = make_agent(["Answer one.", "Answer two."])
    thread = agent.thread()
    thread.chat("first")
    thread.chat("second")
    (origin,) = [h for h in thread.history() if _texts(h["values"]) == ["first", "Answer one."]
                 and h["metadata"].get("source") == "loop"]
    head_before = thread.checkpoint()
    runtime = agent.backend.runtime

    captured, release = threading.Event(), threading.Event()
    prepare, capture = runtime._prepare_folders, engine.capture_rollback_point

    def held(context):  # the run's setup hop: the run has begun but has written no checkpoint yet
        release.wait(30)
        return prepare(context)

    async def noted(checkpointer, thread_id):  # the run body took its rollback point: it waits on the setup now
        point = await capture(checkpointer, thread_id)
        captured.set()
        return point

    monkeypatch.setattr(runtime, "_prepare_folders", held)
    monkeypatch.setattr(engine, "capture_rollback_point", noted)
    run = thread.start("third", checkpoint_id=origin["checkpoint_id"])
    assert captured.wait(30)
    try:
        assert run.cancel() == "cancelled"
    finally:
        release.set()
    with pytest.raises(Exception):  # noqa: B017 - the run's RunError; only its outcome matters here
        run.wait()
    assert run.status == "interrupted"

    head = thread.checkpoint()
    # the marker went on the checkpoint the run started from, not on the head it never touched
    assert head["parent_checkpoint_id"] == origin["checkpoint_id"]
    messages = head["values"]["messages"]
    assert _texts(head["values"])[:2] == ["first", "Answer one."] and len(messages) == 3
    assert messages[-1].additional_kwargs[INTERRUPTED_FLAG] is True
    assert messages[-1].additional_kwargs["run_id"] == run.run_id
    # the old head is untouched
    assert _texts(thread.get_state(head_before["checkpoint_id"]))[-1] == "Answer two."
