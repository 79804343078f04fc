"""Compaction, both backends: ``thread.compact()`` / ``POST /threads/{id}/compact`` keeps answers reproducible."""

from __future__ import annotations

import pytest

from deerflow_nb.errors import ThreadBusyError, UsageError
from tests.client.conftest import two_backend_client


@pytest.fixture(scope="module", params=["embedded", "server"])
def agent(request, tmp_path_factory):
    with two_backend_client(request.param, tmp_path_factory.mktemp(f"compact-{request.param}"), {
        "config_version": 1,
        "models": [{"name": "compact", "use": "tests.client.compaction_models:CompactionModel", "latency": 0.005}],
        "memory": {"enabled": False}, "title": {"enabled": False},
    }) as client:
        yield client


def _conversation(agent):
    thread = agent.thread()
    for word in ("apples", "pears", "plums", "figs"):
        thread.chat(f"tell me about {word}")
    return thread


def test_compaction_keeps_the_answer_reproducible(agent):
    answers = []
    for _ in range(2):  # the same conversation twice: compacted the same way, answered the same way
        thread = _conversation(agent)
        assert thread.chat("and now?") == "Shown no summary and 5 questions, the last: and now?."
        done = thread.compact(keep_messages=2)
        assert done["compacted"] is True and done["removed"] == 8 and done["kept"] == 2
        summary = "They asked: tell me about apples, tell me about pears, tell me about plums, tell me about figs."
        assert done["summary_text"] == summary and done["checkpoint_id"]
        state = thread.state
        assert state["summary_text"] == summary
        assert [m.content for m in state["messages"]] == ["and now?", "Shown no summary and 5 questions, "
                                                                      "the last: and now?."]
        answers.append(thread.chat("what did I ask?"))
        assert thread.history(limit=1)[0]["values"]["summary_text"] == summary
    assert answers[0] == answers[1] == f"Shown {summary} and 2 questions, the last: what did I ask?."


def test_nothing_to_compact_and_bad_input(agent):
    thread = agent.thread()
    thread.chat("just one")
    assert thread.compact()["compacted"] is False  # two messages, all within the kept window
    assert len(thread.messages) == 2
    with pytest.raises(UsageError):
        thread.compact(keep_messages=0)


def test_compaction_is_refused_while_a_run_is_going(agent):
    thread = _conversation(agent)
    run = thread.start("slow please")
    try:
        with pytest.raises(ThreadBusyError):
            thread.compact(keep_messages=1)
    finally:
        run.wait()
    assert thread.compact(keep_messages=1)["compacted"] is True
