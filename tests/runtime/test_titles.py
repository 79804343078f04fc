"""The fallback title of a thread whose first run was cut short (cancelled, timed out, orphaned)."""

from __future__ import annotations

import os

import pytest
from langchain_core.messages import HumanMessage

from deerflow_nb.errors import RunError
from deerflow_nb.persistence.runs import RunInfo
from deerflow_nb.runtime.worker import marker_graph
from tests.client.goal_models import GoalModel


def test_a_timed_out_first_run_gets_a_local_title(make_agent):
    agent = make_agent(model=GoalModel(latency=0.01))
    thread = agent.thread()
    run = thread.start("slow please: profile the customer table", timeout=0.3)
    with pytest.raises(RunError):
        run.wait()
    assert run.status == "timeout"
    assert thread.title == "slow please: profile the customer table"
    assert agent.threads()[0]["title"] == thread.title


def test_a_titled_thread_keeps_its_title(make_agent):
    agent = make_agent(model=GoalModel(latency=0.01))
    thread = agent.thread()
    thread.rename("My analysis")
    run = thread.start("slow please, something else")
    for event in run.events():
        if event.type == "messages-tuple":
            break
    run.cancel()
    assert thread.title == "My analysis"


def test_an_orphaned_first_run_gets_a_local_title(make_agent):
    agent = make_agent(model=GoalModel())
    thread = agent.thread()
    runtime = agent.runtime
    store = runtime.loop.run(runtime.store())
    config = {"configurable": {"thread_id": thread.id}}
    # what a process that died in its first run left: the input checkpointed, no title, the run "running"
    runtime.loop.run(store.threads.create(thread.id, "default"))
    runtime.loop.run(marker_graph(store.checkpointer).aupdate_state(
        config, {"messages": [HumanMessage("Forecast next quarter churn by region")]}, as_node="model"))
    orphan = RunInfo(run_id="orphan-run", thread_id=thread.id, user_id="default")
    orphan.owner = f"{os.uname().nodename}:999999"
    runtime.loop.run(store.runs.create(orphan, status="running"))
    agent.close()

    again = make_agent(model=GoalModel())
    reopened = again.thread(thread.id)
    assert "orphan-run" in again.runtime.recovered_runs
    assert reopened.title == "Forecast next quarter churn by region"
    assert {t["thread_id"]: t["title"] for t in again.threads()}[thread.id] == reopened.title


@pytest.mark.parametrize(("text", "title"), [
    ("Show the number of bills per day and the mean tip", "Show the number of bills per…"),
    ("Forecast churn", "Forecast churn"),
    ("What is the total?", "What is the total"),
    ("a " + "verylongword" * 8, "a…"),
    ("x" * 80, "x" * 59 + "…"),
])
def test_a_local_title_ends_at_a_word_and_says_when_it_is_cut(text, title):
    from deerflow_nb.agent.middlewares.title import fallback_title

    assert fallback_title(text) == title
