"""The runtime seen through the embedded client: journal, workspace changes, rollback, multitask."""

import pytest
from langchain_core.messages import HumanMessage

from deerflow_nb.errors import ThreadBusyError, UsageError
from deerflow_nb.testing import ScriptedChatModel

WRITE_ONLY = {"content": "", "tool_calls": [{"name": "write_file", "args": {
    "description": "write", "path": "/mnt/user-data/outputs/hello.txt", "content": "hello world\n"}}]}
PRESENT = {"content": "", "tool_calls": [{"name": "present_files", "args": {
    "filepaths": ["/mnt/user-data/outputs/hello.txt"]}}]}
WRITE = [WRITE_ONLY, PRESENT, "Wrote hello.txt."]
FORM = {"content": "", "tool_calls": [{"name": "ask_clarification", "args": {
    "question": "Which dataset?", "clarification_type": "missing_info", "options": ["a.csv", "b.csv"]}}]}


def run_events(agent, thread, run_id=None, event_type=None):
    return agent.runtime.loop.run(agent.runtime.run_events(thread.id, run_id, event_type=event_type))


def test_journal_records_messages_tools_and_workspace_changes(make_agent):
    agent = make_agent(WRITE)
    thread = agent.thread()
    run = thread.start("Write hello.txt")
    seen = list(run.events())
    assert run.wait() == "Wrote hello.txt."
    custom = [e.data for e in seen if e.type == "custom" and e.data.get("type") == "workspace_changes"]
    assert custom and custom[0]["added"] == 1 and custom[0]["paths"] == ["/mnt/user-data/outputs/hello.txt"]
    assert seen[-1].type == "end"
    types = [e["event_type"] for e in run_events(agent, thread, run.run_id)]
    assert types[0] == "human_message"
    assert types.index("tool_call") < types.index("tool_result") < types.index("ai_message")
    assert types[-3:] == ["run.delivery", "workspace_changes", "run_end"]
    (receipt,) = [e["payload"] for e in run_events(agent, thread, run.run_id, event_type="run.delivery")]
    assert receipt == {"run_id": run.run_id, "thread_id": thread.id, "status": "success", "satisfied": True,
                       "produced_paths": ["/mnt/user-data/outputs/hello.txt"],
                       "presented_paths": ["/mnt/user-data/outputs/hello.txt"],
                       "matched_paths": ["/mnt/user-data/outputs/hello.txt"]}
    changes = agent.runtime.loop.run(agent.runtime.gateway.workspace_changes("default", thread.id))
    (change,) = changes["changes"]
    assert change["path"] == "/mnt/user-data/outputs/hello.txt" and change["status"] == "added"
    assert "+hello world" in change["diff"] and changes["run_id"] == run.run_id
    ai = [e for e in run_events(agent, thread, run.run_id) if e["event_type"] == "ai_message"]
    assert ai[-1]["payload"]["content"] == "Wrote hello.txt."


def test_a_file_written_and_not_presented_gets_one_repair_turn(make_agent):
    # the model forgot to present; the answer check tells it, and it presents the file
    agent = make_agent([WRITE_ONLY, "Wrote hello.txt.", PRESENT, "Wrote and presented hello.txt."])
    thread = agent.thread()
    assert thread.chat("Write hello.txt") == "Wrote and presented hello.txt."
    assert thread.state["artifacts"] == ["/mnt/user-data/outputs/hello.txt"]
    (receipt,) = [e["payload"] for e in run_events(agent, thread, event_type="run.delivery")]
    assert receipt["satisfied"] and receipt["matched_paths"] == ["/mnt/user-data/outputs/hello.txt"]


def test_a_file_never_presented_ends_the_run_as_undelivered(make_agent):
    from deerflow_nb.errors import AnswerError

    agent = make_agent([WRITE_ONLY, "Wrote hello.txt.", "Done, it is in outputs."])
    thread = agent.thread()
    run = thread.start("Write hello.txt")
    with pytest.raises(AnswerError) as caught:
        run.wait()
    assert caught.value.stop_reason == "undelivered_outputs" and "/mnt/user-data/outputs/hello.txt" in str(caught.value)
    (receipt,) = [e["payload"] for e in run_events(agent, thread, run.run_id, event_type="run.delivery")]
    assert receipt["status"] == "error" and receipt["satisfied"] is False
    assert receipt["produced_paths"] == ["/mnt/user-data/outputs/hello.txt"] and receipt["presented_paths"] == []
    # nothing was stored as the answer
    assert not any(getattr(m, "content", None) == "Done, it is in outputs." for m in thread.messages)


def test_runs_that_write_no_output_keep_an_ordinary_receipt(make_agent):
    agent = make_agent(["Just words."])
    thread = agent.thread()
    assert thread.chat("Hello") == "Just words."
    (receipt,) = [e["payload"] for e in run_events(agent, thread, event_type="run.delivery")]
    assert receipt["satisfied"] and receipt["produced_paths"] == [] and receipt["status"] == "success"


def test_human_input_request_and_answer_are_journaled(make_agent):
    agent = make_agent([FORM, "Using a.csv."])
    thread = agent.thread()
    assert thread.chat("Analyse", responses="a.csv") == "Using a.csv."
    types = [e["event_type"] for e in run_events(agent, thread)]
    assert "human_input_request" in types and "human_input_response" in types
    request = run_events(agent, thread, event_type="human_input_request")[0]["payload"]
    assert request["question"] == "Which dataset?"


def test_cancel_with_rollback_restores_the_previous_state(make_agent):
    model = ScriptedChatModel(responses=["first answer", "slow " * 200], latency=0.02)
    agent = make_agent(model=model)
    thread = agent.thread()
    thread.chat("one")
    before = [m.content for m in thread.messages]
    run = thread.start("two")
    events = run.events()
    next(events)  # the run is under way
    assert run.cancel(action="rollback") == "cancelled"
    assert run.status == "interrupted"
    assert [m.content for m in thread.messages] == before
    assert thread.start("three").wait() is not None


def test_interrupt_strategy_replaces_the_active_run(make_agent):
    model = ScriptedChatModel(responses=["slow " * 200, "quick"], latency=0.02)
    agent = make_agent(model=model)
    thread = agent.thread()
    engine = agent.runtime
    opts = agent.runtime.defaults
    first = agent.runtime.loop.run(engine.start_run(thread.id, "one", opts))
    with pytest.raises(ThreadBusyError):
        agent.runtime.loop.run(engine.start_run(thread.id, "two", opts))
    second = agent.runtime.loop.run(engine.start_run(thread.id, "two", opts, multitask_strategy="interrupt"))
    assert first.status == "interrupted"
    agent.runtime.loop.run(second.wait())
    assert second.status == "success"
    humans = [m.content for m in thread.messages if isinstance(m, HumanMessage)]
    assert humans[-1] == "two"


def test_enqueue_queues_runs_in_order_and_the_queue_runs_after_the_active_one(make_agent):
    model = ScriptedChatModel(responses=["slow " * 60, "second answer", "third answer"], latency=0.02)
    agent = make_agent(model=model)
    thread = agent.thread()
    engine, loop, opts = agent.runtime, agent.runtime.loop, agent.runtime.defaults
    first = loop.run(engine.start_run(thread.id, "one", opts))
    second = loop.run(engine.start_run(thread.id, "two", opts, multitask_strategy="enqueue"))
    third = loop.run(engine.start_run(thread.id, "three", opts, multitask_strategy="enqueue"))
    store = loop.run(engine.store())
    # stored, outside the one-active-run index; shown as pending
    assert loop.run(store.runs.get(second.run_id, "default")).status == "queued"
    assert thread.run(second.run_id).status == "pending" and second.task is None
    with pytest.raises(ThreadBusyError):  # the queue does not make room for a rejecting run
        loop.run(engine.start_run(thread.id, "four", opts))
    with pytest.raises(UsageError, match="secrets"):
        loop.run(engine.start_run(thread.id, "five", opts, {"k": "v"}, multitask_strategy="enqueue"))
    assert thread.run(third.run_id).wait() == "third answer"  # the queue ran, in order
    assert [first.status, second.status, third.status] == ["success"] * 3
    humans = [m.content for m in thread.messages if isinstance(m, HumanMessage)]
    assert humans == ["one", "two", "three"]
    assert thread.run(second.run_id).wait() == "second answer"


def test_a_queued_run_can_be_cancelled_and_never_runs(make_agent):
    model = ScriptedChatModel(responses=["slow " * 40, "after"], latency=0.02)
    agent = make_agent(model=model)
    thread = agent.thread()
    engine, loop, opts = agent.runtime, agent.runtime.loop, agent.runtime.defaults
    first = loop.run(engine.start_run(thread.id, "one", opts))
    queued = loop.run(engine.start_run(thread.id, "two", opts, multitask_strategy="enqueue"))
    assert thread.run(queued.run_id).cancel() == "cancelled"
    assert queued.status == "interrupted"
    loop.run(first.wait())
    nxt = thread.start("three")
    assert nxt.wait() == "after"  # the cancelled run did not take the model's next answer
    humans = [m.content for m in thread.messages if isinstance(m, HumanMessage)]
    assert humans == ["one", "three"]


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_full_run_on_each_database_backend(make_agent, tmp_path, backend):
    import yaml

    from tests.persistence.backends import database_target

    with database_target(backend, tmp_path) as target:
        database = {"backend": target.backend, "url": target.url} if backend == "postgres" else \
            {"backend": "sqlite", "sqlite_path": str(target.sqlite_path)}
        config = tmp_path / "config.yaml"
        config.write_text(yaml.safe_dump({"config_version": 1, "database": database,
                                          "memory": {"enabled": False}}))
        agent = make_agent(WRITE, config_path=config)
        thread = agent.thread()
        assert thread.chat("Write hello.txt") == "Wrote hello.txt."
        assert agent.runtime.loop.run(agent.runtime.store()).backend == backend
        assert thread.history(limit=1)[0]["values"]["messages"][-1].content == "Wrote hello.txt."
        assert agent.runtime.loop.run(agent.runtime.gateway.workspace_changes("default", thread.id))["changes"][0]["status"] == "added"
        agent.close()
