"""Conversation control (issue 19) in both modes: goal mode, readable history, the interrupted-run title."""

from __future__ import annotations

import pytest

import deerflow_nb as df
from deerflow_nb.errors import ThreadBusyError, UsageError
from deerflow_nb.runtime.goal import GoalResponse
from tests.client.conftest import two_backend_client


@pytest.fixture(scope="module", params=["embedded", "server"])
def agent(request, tmp_path_factory):
    config = {"config_version": 1,
              "models": [{"name": "goal", "use": "tests.client.goal_models:GoalModel", "latency": 0.005}],
              "memory": {"enabled": False}, "title": {"enabled": True}}
    with two_backend_client(request.param, tmp_path_factory.mktemp(f"conversation-{request.param}"), config) as client:
        yield client


def _goal_events(events):
    return [e.data for e in events if e.type == "custom" and e.data.get("type") == "goal_evaluation"]


def test_goal_set_get_clear(agent):
    thread = agent.thread()
    assert thread.get_goal() is None
    goal = thread.set_goal("reach step 3", max_continuations=4)
    assert set(goal) == {"objective", "max_continuations", "continuations", "created_at", "updated_at",
                         "last_evaluation"}
    assert thread.get_goal() == goal
    assert thread.set_goal("reach step 3", max_continuations=99)["max_continuations"] == 8
    thread.clear_goal()
    assert thread.get_goal() is None
    thread.clear_goal()  # clearing nothing is fine
    with pytest.raises(UsageError, match="objective"):
        thread.set_goal("   ")
    with pytest.raises(UsageError, match="max_continuations"):
        thread.set_goal("x", max_continuations=-2)


def test_goal_dict_methods_answer_what_the_routes_do(agent):
    thread = agent.thread()
    assert agent.get_goal(thread.id) == {"goal": None}
    stored = agent.set_goal(thread.id, "reach step 1", max_continuations=2)
    assert GoalResponse.model_validate(stored).goal.objective == "reach step 1"
    assert agent.get_goal(thread.id) == stored
    assert agent.clear_goal(thread.id) == {"goal": None} == agent.get_goal(thread.id)


def test_goal_run_continues_until_met(agent):
    thread = agent.thread()
    thread.set_goal("reach step 2")
    events = list(thread.stream("begin"))
    decisions = [(d["decision"], d["continuations"]) for d in _goal_events(events)]
    assert decisions == [("continue", 1), ("continue", 2), ("met", 2)]
    assert events[-1].type == "end" and events[-1].data["status"] == "success"
    assert thread.get_goal() is None
    assert [m.content for m in thread.messages if m.type == "ai"] == ["Answer to begin", "Step 1.", "Step 2."]


def test_goal_stop_reasons(agent):
    thread = agent.thread()
    thread.set_goal("never done", max_continuations=1)
    assert thread.chat("go") == "Step 1."
    goal = thread.get_goal()
    assert goal["continuations"] == 1 and goal["last_evaluation"]["stand_down_reason"] == "max_continuations"
    blocked = agent.thread()
    blocked.set_goal("ask me")
    assert blocked.chat("go") == "Answer to go"
    assert blocked.get_goal()["last_evaluation"]["stand_down_reason"] == "needs_user_input"


def test_failing_continuation_is_a_failed_run(agent):
    thread = agent.thread()
    thread.set_goal("never done")
    with pytest.raises(df.RunError) as info:
        thread.chat("crash now")
    assert info.value.status == "error"


def test_goal_is_refused_while_a_run_is_going(agent):
    thread = agent.thread()
    run = thread.start("slow please")
    for event in run.events():
        if event.type == "messages-tuple":
            break
    with pytest.raises(ThreadBusyError):
        thread.set_goal("anything")
    run.cancel()


def test_interrupted_first_run_gets_a_fallback_title(agent):
    thread = agent.thread()
    run = thread.start("slow please, summarise the quarterly sales figures today")
    for event in run.events():
        if event.type == "messages-tuple":
            break
    assert run.cancel() == "cancelled"
    with pytest.raises(df.RunError):
        run.wait()
    assert thread.title == "slow please, summarise the quarterly sales…"  # the message goes on
    assert {t["thread_id"]: t["title"] for t in agent.threads()}[thread.id] == thread.title


def test_history_is_readable(agent):
    thread = agent.thread()
    thread.chat("first question")
    history = thread.history()
    newest = history[0]
    assert {"checkpoint_id", "parent_checkpoint_id", "step", "created_at", "source", "messages",
            "last_message_type", "last_message", "metadata", "values"} <= set(newest)
    assert newest["last_message_type"] == "ai" and newest["last_message"] == "Answer to question"
    assert newest["messages"] == 2 and isinstance(newest["created_at"], str)
    assert history[-1]["messages"] == 0 and history[-1]["last_message"] == ""
    steps = [h["step"] for h in history]
    assert steps == sorted(steps, reverse=True)
    assert [h["checkpoint_id"] for h in thread.history(limit=2)] == [h["checkpoint_id"] for h in history[:2]]
