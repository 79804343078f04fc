"""Goal mode in the runtime: the evaluator loop, its stop reasons, persistence and refusals."""

from __future__ import annotations

import pytest

import deerflow_nb as df
from deerflow_nb.agent.reducers import CLEAR, merge_goal
from deerflow_nb.errors import HumanInputRequired, RunError, RunInterruptedError, ThreadBusyError, UsageError
from tests.client.goal_models import GoalModel


@pytest.fixture
def agent(make_agent):
    return make_agent(model=GoalModel())


def _decisions(thread):
    return [(e["payload"]["decision"], e["payload"]["stand_down_reason"])
            for e in thread.run_events(event_type="custom") if e["payload"].get("type") == "goal_evaluation"]


def test_merge_goal_keeps_the_goal_unless_the_writer_replaces_or_clears_it():
    goal = {"objective": "x"}
    assert merge_goal(goal, None) is goal
    assert merge_goal(goal, {"objective": "y"}) == {"objective": "y"}
    assert merge_goal(goal, CLEAR) is None


def test_a_run_without_a_goal_evaluates_nothing(agent):
    thread = agent.thread()
    assert thread.get_goal() is None
    assert thread.chat("hello") == "Answer to hello"
    assert _decisions(thread) == [] and len(thread.messages) == 2


def test_goal_met_after_continuations_is_cleared(agent):
    thread = agent.thread()
    goal = thread.set_goal("reach step 2", max_continuations=5)
    assert goal["objective"] == "reach step 2" and goal["max_continuations"] == 5 and goal["continuations"] == 0
    assert thread.chat("start") == "Step 2."
    assert _decisions(thread) == [("continue", None), ("continue", None), ("met", None)]
    assert thread.get_goal() is None
    hidden = [m for m in thread.messages if m.additional_kwargs.get("goal_continuation")]
    assert [m.additional_kwargs["hide_from_ui"] for m in hidden] == [True, True]
    assert thread.title == "start"  # hidden continuations never become the title


def test_the_cap_stops_the_loop_and_is_recorded(agent):
    thread = agent.thread()
    thread.set_goal("never done", max_continuations=2)
    assert thread.chat("go") == "Step 2."
    assert _decisions(thread) == [("continue", None), ("continue", None), ("stand_down", "max_continuations")]
    goal = thread.get_goal()
    assert goal["continuations"] == 2
    assert goal["last_evaluation"]["blocker"] == "goal_not_met_yet"
    assert goal["last_evaluation"]["stand_down_reason"] == "max_continuations"
    # the next run starts its own budget (and stops at once with a zero budget)
    thread.set_goal("never done", max_continuations=0)
    thread.chat("again")
    assert _decisions(thread)[-1] == ("stand_down", "max_continuations")


def test_a_blocker_stands_down_without_continuing(agent):
    thread = agent.thread()
    thread.set_goal("ask me first")
    assert thread.chat("go") == "Answer to go"
    assert _decisions(thread) == [("stand_down", "needs_user_input")]
    assert thread.get_goal()["last_evaluation"]["reason"] == "which dataset?"


def test_no_progress_breaker_fires_after_two_continuations(agent):
    thread = agent.thread()
    thread.set_goal("never done")
    assert thread.chat("stuck here") == "Same answer."
    assert _decisions(thread) == [("continue", None), ("continue", None), ("stand_down", "no_progress")]
    assert thread.get_goal()["continuations"] == 2


def test_a_question_to_the_user_stops_the_loop(agent):
    thread = agent.thread()
    thread.set_goal("never done")
    with pytest.raises(HumanInputRequired):
        thread.chat("ask later if needed")
    assert _decisions(thread) == [("continue", None), ("stand_down", "awaiting_input")]
    assert thread.pending_input["question"] == "Which dataset?"
    assert thread.get_goal()["last_evaluation"]["stand_down_reason"] == "awaiting_input"


def test_a_broken_evaluator_stops_the_loop_but_not_the_turn(agent):
    thread = agent.thread()
    thread.set_goal("broken judge")
    assert thread.chat("go") == "Answer to go"
    assert _decisions(thread) == [("stand_down", "evaluation_failed")]
    assert "evaluation failed" in thread.get_goal()["last_evaluation"]["reason"]


def test_a_failing_continuation_fails_the_run(agent):
    thread = agent.thread()
    thread.set_goal("never done")
    run = thread.start("crash soon")
    with pytest.raises(RunError):
        run.wait()
    assert run.status == "error"


def test_a_cancelled_continuation_is_an_interrupted_run(make_agent):
    agent = make_agent(model=GoalModel(latency=0.01))
    thread = agent.thread()
    thread.set_goal("never done")
    run = thread.start("slow later please")
    for event in run.events():
        if event.type == "custom" and event.data.get("decision") == "continue":
            break
    assert run.cancel() == "cancelled"
    with pytest.raises(RunInterruptedError):
        run.wait()
    assert run.status == "interrupted"
    assert thread.messages[-1].additional_kwargs.get("deerflow_interrupted") is True


def test_goal_survives_a_restart(home):
    first = df.DeerFlow(model=GoalModel())
    thread = first.thread()
    thread.set_goal("reach step 9", max_continuations=3)
    first.close()
    again = df.DeerFlow(model=GoalModel())
    try:
        assert again.thread(thread.id).get_goal()["objective"] == "reach step 9"
        again.thread(thread.id).clear_goal()
        assert again.thread(thread.id).get_goal() is None
    finally:
        again.close()


def test_goal_validation_and_busy_refusal(agent):
    thread = agent.thread()
    assert thread.set_goal("big", max_continuations=50)["max_continuations"] == 8  # clamped
    for objective, cap, field in [("  ", 3, "objective"), ("ok", -1, "max_continuations"),
                                  (5, 3, "objective"), ("ok", "3", "max_continuations")]:
        with pytest.raises(UsageError, match=field):
            thread.set_goal(objective, max_continuations=cap)
    assert thread.get_goal()["objective"] == "big"  # refusals stored nothing
    run = thread.start("slow please")
    with pytest.raises(ThreadBusyError):
        thread.set_goal("other")
    with pytest.raises(ThreadBusyError):
        thread.clear_goal()
    run.cancel()
