import asyncio
import threading

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

import deerflow_nb as df
from deerflow_nb.agent.plugins import AgentPlugin
from deerflow_nb.errors import HumanInputRequired, SyncInAsyncError, ThreadBusyError, UsageError
from deerflow_nb.testing import ScriptedChatModel

from .conftest import write_and_present

FORM = {"content": "", "tool_calls": [{"name": "ask_clarification", "args": {
    "question": "How should I build the report?", "clarification_type": "missing_info",
    "fields": [{"name": "dataset", "label": "Dataset", "type": "select", "options": ["sales.csv", "costs.csv"],
                "required": True},
               {"name": "rows", "label": "Rows", "type": "number"},
               {"name": "agree", "label": "Overwrite outputs", "type": "checkbox", "required": True}]}}]}


def test_done_when_end_to_end(make_agent, home):
    agent = make_agent(write_and_present())
    thread = agent.thread()
    answer = thread.chat("Write hello.txt to outputs")
    assert answer == "I wrote **hello.txt** and presented it."
    out = home / "users/default/threads" / thread.id / "user-data/outputs/hello.txt"
    assert out.read_text() == "hello world"
    state = thread.state
    assert state["artifacts"] == ["/mnt/user-data/outputs/hello.txt"]
    assert state["title"] == "Write hello.txt to outputs"
    # the input message carries the run id
    first = state["messages"][0]
    assert isinstance(first, HumanMessage) and first.additional_kwargs["run_id"]
    agent.close()

    # a second client on the same home sees the history
    again = df.DeerFlow(model=ScriptedChatModel(responses=[]))
    try:
        reopened = again.thread(thread.id)
        contents = [m.content for m in reopened.messages]
        assert "Write hello.txt to outputs" in contents
        assert answer in contents
        assert [t["thread_id"] for t in again.threads()] == [thread.id]
        assert again.threads()[0]["title"] == "Write hello.txt to outputs"
        history = reopened.history()
        assert len(history) > 3 and history[0]["step"] >= history[-1]["step"]
        assert reopened.history(limit=0) == []
        assert len(reopened.history(limit=2)) == 2
    finally:
        again.close()


def test_form_pauses_and_respond_completes(make_agent):
    model = ScriptedChatModel(responses=[FORM, "Report built from sales.csv."])
    agent = make_agent(model=model)
    thread = agent.thread()
    with pytest.raises(HumanInputRequired) as info:
        thread.chat("Build the report")
    request = info.value.request
    assert request["version"] == 2 and request["mode"] == "form"
    assert thread.pending_input == request
    last = thread.messages[-1]
    assert isinstance(last, ToolMessage) and last.artifact["human_input"] == request
    with pytest.raises(UsageError, match="dataset: is required"):
        thread.respond({"agree": True})
    with pytest.raises(UsageError, match="answer with a dict"):
        thread.respond("sales.csv")
    final = thread.respond({"dataset": "sales.csv", "rows": 10, "agree": True})
    assert final == "Report built from sales.csv."
    assert thread.pending_input is None
    reply = [m for m in thread.messages if isinstance(m, HumanMessage)][-1]
    response = reply.additional_kwargs["human_input_response"]
    assert reply.additional_kwargs["hide_from_ui"] is True
    assert response["response_kind"] == "text" and response["tool_call_id"] == request["tool_call_id"]
    assert "Dataset: sales.csv" in reply.content and "Overwrite outputs: yes" in reply.content
    # the model saw the answer as the latest human message
    assert "Dataset: sales.csv" in str(model.calls[-1][-1].content)


def test_headless_responses_and_choice_option(make_agent):
    choice = {"content": "", "tool_calls": [{"name": "ask_clarification", "args": {
        "question": "Which file?", "clarification_type": "ambiguous_requirement", "options": ["a.csv", "b.csv"]}}]}
    agent = make_agent([choice, "Using b.csv.", FORM, "Done."])
    thread = agent.thread()
    assert thread.chat("go", responses={"Which file?": "b.csv"}) == "Using b.csv."
    reply = [m for m in thread.messages if isinstance(m, HumanMessage)][-1]
    assert reply.additional_kwargs["human_input_response"] == {
        "source": "ask_clarification", "tool_call_id": "call_1", "response_kind": "option", "option": "b.csv"}
    seen = []
    text = thread.chat("again", responses=lambda r: seen.append(r) or {"dataset": "costs.csv", "agree": True})
    assert text == "Done." and seen[0]["mode"] == "form"


def test_stream_invariants(make_agent):
    agent = make_agent(write_and_present())
    events = list(agent.thread().stream("write it"))
    types = [e.type for e in events]
    assert types[-1] == "end" and "values" in types and "error" not in types
    ai_text: dict[str, str] = {}
    tool_calls, tool_results = [], []
    for e in events:
        if e.type == "messages-tuple" and e.data["type"] == "ai":
            if e.data.get("tool_calls"):
                tool_calls.extend(c["id"] for c in e.data["tool_calls"])
            if e.data.get("content"):
                ai_text[e.data["id"]] = ai_text.get(e.data["id"], "") + e.data["content"]
        if e.type == "messages-tuple" and e.data["type"] == "tool":
            tool_results.append(e.data["tool_call_id"])
    assert list(ai_text.values()) == ["I wrote **hello.txt** and presented it."]
    deltas = [e for e in events if e.type == "messages-tuple" and e.data.get("content")]
    assert len(deltas) > 3  # word-by-word, not one blob
    assert sorted(tool_calls) == ["call_1", "call_2"] and sorted(tool_results) == ["call_1", "call_2"]
    # values carry the full state, streamed AI text included (as LangGraph sends it)
    final_id = next(iter(ai_text))
    last_values = [e for e in events if e.type == "values"][-1].data
    (final,) = [m for m in last_values["messages"] if m["id"] == final_id]
    assert final["content"] == ai_text[final_id] and "streamed" not in final
    usage = events[-1].data["usage"]
    assert usage["output_tokens"] > 0 and usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"]


def test_usage_counted_once_per_message_id(make_agent):
    agent = make_agent(write_and_present())
    thread = agent.thread()
    events = list(thread.stream("go"))
    expected = sum(m.usage_metadata["total_tokens"] for m in thread.messages if isinstance(m, AIMessage))
    assert events[-1].data["usage"]["total_tokens"] == expected


def test_async_twins_and_sync_inside_running_loop(make_agent):
    agent = make_agent(["one", "two", "three"])

    async def main():
        thread = await agent.athread()
        first = await thread.achat("hi")
        # a sync twin still works while this loop is running (as in a Jupyter kernel)
        second = thread.chat("again")
        deltas = [e async for e in thread.astream("more")]
        return first, second, deltas

    first, second, deltas = asyncio.run(main())
    assert (first, second) == ("one", "two")
    assert deltas[-1].type == "end"


def test_sync_twin_from_private_loop_raises(make_agent):
    agent = make_agent(["x"])
    thread = agent.thread()

    async def inside():
        return thread.chat("hi")

    with pytest.raises(SyncInAsyncError, match="await"):
        agent.runtime.loop.run(inside())


def test_background_run_busy_thread_and_cancel(make_agent):
    slow = ScriptedChatModel(responses=["slow answer " * 20], latency=0.05)
    agent = make_agent(model=slow)
    thread = agent.thread()
    run = thread.start("take your time")
    assert run.status in {"pending", "running"}
    with pytest.raises(ThreadBusyError):
        thread.start("second")
    assert run.cancel() == "cancelled"
    assert run.status == "interrupted"
    assert run.cancel() == "not_cancellable"
    # the thread accepts a new run afterwards
    assert thread.start("again").wait()


def test_run_events_replay_for_late_subscribers(make_agent):
    agent = make_agent(["alpha beta gamma"])
    run = agent.thread().start("go")
    assert run.wait() == "alpha beta gamma"
    replay = list(run.events())
    assert replay[-1].type == "end" and run.usage["output_tokens"] > 0


def test_model_error_raises_instead_of_answering(make_agent):
    agent = make_agent(model=ScriptedChatModel(responses=["never"], error_at=1))
    thread = agent.thread()
    with pytest.raises(df.ModelCallError, match="scripted model failure"):
        thread.chat("hi")
    assert [m.type for m in thread.messages] == ["human"]


def test_threads_newest_first_and_isolated_by_user(make_agent):
    alice = make_agent(["a1", "a2"], user_id="alice")
    t1 = alice.thread("first")
    t1.chat("first thread")
    t2 = alice.thread("second")
    t2.chat("second thread")
    assert [t["thread_id"] for t in alice.threads()] == ["second", "first"]
    bob = make_agent(["b"], user_id="bob")
    assert bob.threads() == []
    with pytest.raises(df.NotFoundError):
        bob.thread("first")


def test_bad_inputs(make_agent):
    agent = make_agent(["x"])
    thread = agent.thread()
    with pytest.raises(UsageError, match="empty"):
        thread.chat("   ")
    with pytest.raises(UsageError, match="unknown run option"):
        thread.chat("hi", temperature=3)
    with pytest.raises(UsageError, match="invalid thread_id"):
        agent.thread("../escape")
    with pytest.raises(UsageError, match="no pending"):
        thread.respond("x")
    with pytest.raises(UsageError):
        df.DeerFlow(model=42)


def test_memory_persistence_is_throwaway(make_agent, home):
    agent = make_agent(["x"], persistence="memory")
    agent.thread().chat("hi")
    assert not (home / "deerflow.db").exists()


def test_list_and_get_model_shapes(make_agent, tmp_path):
    cfg = tmp_path / "config.yaml"
    cfg.write_text("models:\n  - name: scripted\n    display_name: Scripted\n    use: deerflow_nb.testing:ScriptedChatModel\n"
                   "    responses: ['configured answer']\n    supports_vision: true\n")
    agent = make_agent(config_path=cfg, model=None)
    listed = agent.list_models()
    assert listed["models"][0]["name"] == "scripted" and listed["models"][0]["supports_vision"] is True
    assert agent.get_model("scripted")["display_name"] == "Scripted"
    assert agent.thread().chat("hi") == "configured answer"


def test_plan_mode_write_todos(make_agent):
    todos = {"content": "", "tool_calls": [{"name": "write_todos", "args": {"todos": [
        {"content": "load data", "status": "in_progress"}, {"content": "plot", "status": "pending"}]}}]}
    model = ScriptedChatModel(responses=[todos, "planned"])
    agent = make_agent(model=model, plan_mode=True)
    thread = agent.thread()
    assert thread.chat("plan it") == "planned"
    assert thread.state["todos"][0] == {"content": "load data", "status": "in_progress"}
    assert "Plan mode is on" in model.calls[0][0].content or any(
        "Plan mode is on" in str(m.content) for m in model.calls[0])


def test_close_is_idempotent_and_thread_safe(make_agent):
    agent = make_agent(["x"])
    agent.thread().chat("hi")
    threads = [threading.Thread(target=agent.close) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


class _Recorder(AgentPlugin):
    """Records where (on the client's loop thread or not) and with which status the blocking hooks run."""

    def __init__(self, agent):
        self.agent = agent
        self.calls = []

    def _on_loop(self):
        return self.agent.runtime.loop.in_loop()

    def prepare_run_blocking(self, context):
        self.calls.append(("prepare", self._on_loop(), context.run_id))

    def finish_run_blocking(self, context, status):
        self.calls.append(("finish", self._on_loop(), status))


def _recorder(agent):
    recorder = _Recorder(agent)
    agent.runtime.plugins.append(recorder)
    agent.runtime.invalidate()
    return recorder


def test_plugin_blocking_hooks_run_once_per_run_off_the_loop(make_agent):
    agent = make_agent(["first answer", "second answer"])
    recorder = _recorder(agent)
    thread = agent.thread()
    thread.chat("one")
    thread.chat("two")
    kinds = [(kind, on_loop) for kind, on_loop, _ in recorder.calls]
    assert kinds == [("prepare", False), ("finish", False)] * 2
    assert [c[2] for c in recorder.calls if c[0] == "finish"] == ["success", "success"]
    assert agent.usage()["runs"] == 2  # the usage plug-in's blocking finish recorded both runs


def test_plugin_blocking_finish_sees_interrupted_runs(make_agent):
    agent = make_agent(model=ScriptedChatModel(responses=["slow answer " * 20], latency=0.05))
    recorder = _recorder(agent)
    run = agent.thread().start("take your time")
    assert run.cancel() == "cancelled"
    assert [c[2] for c in recorder.calls if c[0] == "finish"] == ["interrupted"]


def test_a_new_threads_first_run_reads_no_checkpoint_from_the_database(make_agent):
    agent = make_agent(["hi there"])
    store = agent.runtime.loop.run(agent.runtime.store())
    reads = []
    original = store.checkpointer.get_tuple
    store.checkpointer.get_tuple = lambda config: reads.append(config) or original(config)
    thread = agent.thread()
    assert thread.chat("hello") == "hi there"
    assert reads == []  # the graph's start-of-run read was answered without a database trip
    assert [m.type for m in thread.messages][-1] == "ai"  # later reads go to the database
    assert reads
