import asyncio

import pytest
from langchain_core.messages import HumanMessage

from deerflow_nb.errors import UsageError
from deerflow_nb.runtime import StreamEvent
from deerflow_nb.testing import ScriptedChatModel
from deerflow_nb.widgets import ChatWidget

from .conftest import FORM, FakeClock, front_end_send, write_and_present

LONG = " ".join(f"word{i}" for i in range(600)) + "\n\n```python\nprint('done')\n```"


def assistant_texts(state):
    return [i["text"] for i in state["items"] if i["kind"] == "assistant"]


def test_streaming_is_batched_and_final_text_exact(make_agent, comm_log):
    agent = make_agent([LONG])
    clock = FakeClock(step=0.002)  # each event reads the clock once: ~600 tokens ≈ 1.2 s of fake time
    chat = ChatWidget(agent.thread(), rate=20, clock=clock, call_later=clock.call_later)
    chat.send("write a long answer")
    assert chat.wait(30) == LONG
    item_updates = comm_log.updates(chat, "items")
    # fake time elapsed across the run, at most 20 updates a second (+ the first and the final flush)
    assert len(item_updates) <= clock.now * 20 + 3
    assert len(item_updates) >= 5  # it streamed: several partial renders, not one final dump
    partial = [assistant_texts(s) for s in item_updates]
    assert any(texts and texts[-1] != LONG for texts in partial)
    assert assistant_texts(item_updates[-1])[-1] == LONG  # the last message the browser got is exact
    assert chat.status == "idle"
    assert comm_log.updates(chat, "status")[-1]["status"] == "idle"


def test_tool_cards_files_title_usage_and_history(make_agent, comm_log):
    agent = make_agent(write_and_present())
    thread = agent.thread()
    chat = thread.ui("write the csv")
    assert chat.wait(30) == "I wrote **hello.csv**."
    tools = [i for i in chat.items if i["kind"] == "tool"]
    assert [t["name"] for t in tools] == ["write_file", "present_files"]
    assert all(t["status"] == "success" and t["result"] for t in tools)
    assert chat.title == "write the csv"
    assert chat.usage["total_tokens"] > 0
    [csv] = chat.files
    assert csv["kind"] == "table" and csv["rows"] == [["a", "b"], ["1", "2"]]
    assert csv["data_url"].startswith("data:text/csv;base64,")
    # reopening the thread renders its history
    again = thread.ui()
    assert [i["kind"] for i in again.items] == ["user", "tool", "tool", "assistant"]
    assert again.text == "I wrote **hello.csv**." and again.files[0]["name"] == "hello.csv"
    # the run's workspace review, as data and as a widget
    changes = thread.workspace_changes()
    assert changes["run_id"] == chat.run.run_id
    assert [(c["path"], c["status"]) for c in changes["changes"]] == [("/mnt/user-data/outputs/hello.csv", "added")]
    assert "+1,2" in changes["changes"][0]["diff"]
    diff = chat.workspace_diff()
    assert diff.run_id == chat.run.run_id and diff.changes == changes["changes"]
    assert diff.copy_to_notebook("/mnt/user-data/outputs/hello.csv").read_text() == "a,b\n1,2\n"
    bundle, _ = again._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert "DeerFlow: I wrote **hello.csv**." in bundle["text/plain"]
    assert "I wrote **hello.csv**." in bundle["text/markdown"] and "`write_file`" in bundle["text/markdown"]
    assert repr(again) == "<ChatWidget 'write the csv' items=4 status=idle>"


def test_form_submit_from_browser_continues_in_same_chat(make_agent, comm_log):
    model = ScriptedChatModel(responses=[FORM, "Report built from sales.csv."])
    agent = make_agent(model=model)
    thread = agent.thread()
    chat = thread.ui("Build the report")
    chat.wait(30)
    assert chat.status == "waiting"
    card = chat.items[-1]
    assert card["kind"] == "input_request" and card["request"]["mode"] == "form"
    # invalid answer (Python-side validation): shown on the card, nothing sent to the agent
    front_end_send(chat, {"kind": "respond", "tool_call_id": card["id"], "answer": {"agree": True}})
    assert "dataset: is required" in chat.items[-1]["error"]
    assert len(model.calls) == 1
    # a valid answer: the same message as thread.respond, and the run streams into this chat
    front_end_send(chat, {"kind": "respond", "tool_call_id": card["id"],
                            "answer": {"dataset": "sales.csv", "rows": 10, "agree": True}})
    assert chat.wait(30) == "Report built from sales.csv."
    assert chat.status == "idle"
    answered = [i for i in chat.items if i["kind"] == "input_request"][0]
    assert answered["answered"] and "Dataset: sales.csv" in answered["answer_text"]
    reply = [m for m in thread.messages if isinstance(m, HumanMessage)][-1]
    assert reply.additional_kwargs["human_input_response"]["tool_call_id"] == card["id"]
    assert "Dataset: sales.csv" in str(model.calls[-1][-1].content)
    # after a reload the card is still shown as answered
    reopened = thread.ui()
    cards = [i for i in reopened.items if i["kind"] == "input_request"]
    assert cards[0]["answered"] and reopened.status == "idle"
    with pytest.raises(UsageError, match="no open question"):
        reopened.respond("again")


def test_follow_up_from_input_box_and_busy_guard(make_agent, comm_log):
    agent = make_agent(["first answer", "second answer"])
    chat = agent.thread().ui()
    front_end_send(chat, {"kind": "send", "text": "one"})
    assert chat.wait(30) == "first answer"
    front_end_send(chat, {"kind": "send", "text": "two"})
    assert chat.wait(30) == "second answer"
    assert [i["text"] for i in chat.items if i["kind"] == "user"] == ["one", "two"]
    with pytest.raises(UsageError, match="non-empty"):
        chat.send("  ")


def test_stop_cancels_the_run(make_agent, comm_log):
    model = ScriptedChatModel(responses=[LONG], latency=0.01)
    agent = make_agent(model=model)
    chat = agent.thread().ui("go")
    with pytest.raises(UsageError, match="in progress"):
        chat.send("again")
    for _ in range(500):  # wait until the run has started streaming
        if chat.run is not None and any(i["kind"] == "assistant" for i in chat._transcript.items):
            break
        chat.task.result(timeout=0.01) if chat.task.done() else __import__("time").sleep(0.01)
    front_end_send(chat, {"kind": "stop"})
    chat.wait(30)
    assert chat.status == "stopped"
    # a stop is not an error: its own item kind, and the partial answer is marked interrupted
    assert chat.items[-1]["kind"] == "stopped" and chat.items[-1]["text"].startswith("Stopped")
    assert not any(i["kind"] == "error" for i in chat.items)
    [partial] = [i for i in chat.items if i["kind"] == "assistant"]
    assert partial["interrupted"] and partial["stop_reason"] == "cancelled"
    assert chat.run.status == "interrupted"
    # reopened, the thread's stored marker message shows the interrupted partial answer
    again = chat.thread.ui()
    [stored] = [i for i in again.items if i["kind"] == "assistant"]
    assert stored["interrupted"] and stored["text"]
    assert "*(interrupted:" in again._markdown()


class FakeRun:
    """A Run as a remote client would hand it out: only the public interface."""

    run_id = "r1"
    done = False

    def __init__(self, events, broken=False):
        self._events = events
        self._broken = broken

    async def aevents(self):
        for event in self._events:
            yield event
        if self._broken:
            raise ConnectionError("server went away")


class FakeThread:
    id = "remote-thread"

    def __init__(self, runs):
        self.runs = runs
        self.started = []

    @property
    def state(self):  # remote state carries serialized messages
        return {"title": "Remote", "messages": [{"type": "human", "id": "h0", "content": "earlier"},
                                                {"type": "ai", "id": "a0", "content": "earlier answer"}]}

    def start(self, message, **options):
        self.started.append((message, options))
        return self.runs.pop(0)


def test_works_against_the_public_interface_and_shows_run_errors(comm_log):
    error = StreamEvent("error", {"message": "sandbox unavailable", "type": "SandboxError"})
    thread = FakeThread([FakeRun([StreamEvent("messages-tuple", {"type": "ai", "id": "a1", "content": "partial"}),
                                  error]),
                         FakeRun([], broken=True)])
    chat = ChatWidget(thread, options={"plan_mode": True})
    assert [i["text"] for i in chat.items] == ["earlier", "earlier answer"] and chat.title == "Remote"
    chat.send("go")
    chat.wait(30)
    assert thread.started == [("go", {"plan_mode": True})]  # no astart: the sync start ran off the loop
    assert chat.status == "error"
    assert chat.items[-1] == {"kind": "error", "id": "error-1", "text": "Error: sandbox unavailable"}
    chat.send("again")
    chat.wait(30)
    assert chat.status == "error" and "server went away" in chat.items[-1]["text"]


@pytest.mark.asyncio
async def test_in_a_running_loop_the_run_is_a_task_and_the_caller_returns_at_once(make_agent, comm_log):
    agent = make_agent(["async answer"])
    thread = await agent.athread()
    chat = thread.ui("hello")
    assert isinstance(chat.task, asyncio.Task)  # scheduled on this loop (the kernel's, in Jupyter)
    assert not chat.task.done()  # the call returned before the run finished
    with pytest.raises(UsageError, match="await chat.finished"):
        chat.wait()
    assert await chat.finished() == "async answer"
    assert chat.status == "idle"


def test_attach_to_a_started_run(make_agent, comm_log):
    agent = make_agent(["attached"])
    thread = agent.thread()
    run = thread.start("hi")
    chat = thread.ui(run=run, options={"plan_mode": False})
    assert chat.wait(30) == "attached"
    assert chat.options == {"plan_mode": False}


def test_workspace_changes_without_runs_and_for_an_unknown_run(make_agent):
    from deerflow_nb.errors import NotFoundError

    thread = make_agent([]).thread()
    assert thread.workspace_changes() == {"run_id": None, "thread_id": thread.id, "status": None,
                                          "finished_at": None, "changes": [], "truncated": False}
    with pytest.raises(NotFoundError, match="nope"):
        thread.workspace_changes("nope")
    # a run that changed nothing still answers for itself, with no changes
    thread.chat("hi")
    latest = thread.workspace_changes()
    assert latest["run_id"] is not None and latest["changes"] == []


def test_attaching_to_a_finished_run_shows_its_answer_once(make_agent, comm_log):
    agent = make_agent(["earlier answer", "only once"])
    thread = agent.thread()
    thread.chat("first")
    run = thread.start("second")
    run.wait()  # finished before the widget attaches: the state already holds the answer
    chat = thread.ui(run=run)
    assert chat.wait(30) == "only once"
    texts = [str(item) for item in chat.items]
    assert sum("only once" in t for t in texts) == 1 and any("earlier answer" in t for t in texts)


class FakeDisplay:
    """Records what IPython's display machinery publishes (display_data / update_display_data)."""

    def __init__(self, monkeypatch):
        import IPython.display

        self.shown: list[tuple[str, dict, str]] = []
        monkeypatch.setattr(IPython.display, "display",
                            lambda data, **kw: self.shown.append(("display", data, kw["display_id"])))
        monkeypatch.setattr(IPython.display, "update_display",
                            lambda data, **kw: self.shown.append(("update", data, kw["display_id"])))


def test_the_saved_fallback_is_refreshed_when_a_run_ends(make_agent, comm_log, monkeypatch):
    shown = FakeDisplay(monkeypatch).shown
    agent = make_agent(["The **answer** is 42."])
    chat = agent.thread().ui("what is it?")
    chat._ipython_display_()  # what a cell's last expression does in a kernel
    chat.observe(lambda change: shown.append(("status", change.new, None)), names="status")
    chat.wait(30)
    # the output is re-sent before the view says idle: a view showing the final status is the re-sent one
    assert [k for k, _, _ in shown][-2:] == ["update", "status"] and shown[-1][1] == "idle"
    shown = [entry for entry in shown if entry[0] != "status"]
    kinds = [k for k, _, _ in shown]
    assert kinds[0] == "display" and kinds[-1] == "update"
    assert len({display_id for _, _, display_id in shown}) == 1  # the same output, updated in place
    final = shown[-1][1]
    assert "application/vnd.jupyter.widget-view+json" in final  # the live view stays
    assert "The **answer** is 42." in final["text/markdown"] and "**You:** what is it?" in final["text/markdown"]
    assert "<strong>answer</strong>" in final["text/html"]  # nbconvert HTML and GitHub pick this one
    assert "DeerFlow: The **answer** is 42." in final["text/plain"]


def test_content_that_changed_between_cells_is_sent_again_when_the_next_cell_starts(make_agent, comm_log,
                                                                                  monkeypatch):
    from deerflow_nb.widgets._base import _refresh_changed

    shown = FakeDisplay(monkeypatch).shown
    chat = make_agent(["Forty-two."]).thread().ui()
    chat._ipython_display_()
    _refresh_changed()  # nothing changed since it was shown: nothing is sent
    assert [k for k, _, _ in shown] == ["display"]
    chat.send("what is it?")
    chat.wait(30)
    shown.clear()
    _refresh_changed()  # the run's own refresh already sent the final content
    assert shown == []
    chat._transcript.add_error("Error: changed while the kernel was idle")  # content the last update lacks
    _refresh_changed()
    assert [k for k, _, _ in shown] == ["update"] and "changed while the kernel was idle" in shown[0][1]["text/plain"]
    _refresh_changed()
    assert len(shown) == 1


def test_a_run_that_cannot_start_shows_its_error_in_the_saved_output_too(comm_log, monkeypatch):
    shown = FakeDisplay(monkeypatch).shown
    chat = ChatWidget(FakeThread([]))  # no run to hand out: starting one fails
    chat._ipython_display_()
    chat.observe(lambda change: shown.append(("status", change.new, None)), names="status")
    chat.send("go")
    chat.wait(30)
    assert chat.status == "error" and "pop from empty list" in chat.items[-1]["text"]
    assert [k for k, _, _ in shown][-2:] == ["update", "status"] and shown[-1][1] == "error"
    assert "pop from empty list" in shown[-2][1]["text/markdown"]


def test_failed_tools_look_failed_and_errors_are_not_answers():
    from deerflow_nb.widgets._transcript import Transcript

    t = Transcript()
    t.apply(StreamEvent("messages-tuple", {"type": "ai", "id": "a1", "content": "", "tool_calls": [
        {"id": "c1", "name": "bash", "args": {"command": "python x.py"}}]}))
    assert t.items[-1]["status"] == "running"
    t.apply(StreamEvent("messages-tuple", {
        "type": "tool", "id": "t1", "tool_call_id": "c1", "content": "ModuleNotFoundError: pandas",
        "additional_kwargs": {"deerflow_tool_meta": {"status": "error", "error_type": "command_failed",
                                                     "exit_code": 1}}}))
    tool = t.items[-1]
    assert tool["status"] == "error" and tool["exit_code"] == 1 and tool["error_type"] == "command_failed"
    t.apply(StreamEvent("error", {"message": "model timed out", "type": "ModelTimeoutError"}))
    assert t.items[-1]["kind"] == "error" and t.final_text() == ""
    md = t.to_markdown()
    assert "> **failed** tool `bash` — error (exit code 1)" in md and "> **Error: model timed out**" in md
    assert md.isascii() or not any(0x1F300 <= ord(c) <= 0x1FAFF or 0x2600 <= ord(c) <= 0x27BF for c in md)  # no emoji


def test_presented_files_show_in_their_turn_as_soon_as_presented(make_agent, comm_log):
    agent = make_agent(write_and_present() + ["a second turn"])
    chat = agent.thread().ui("write the csv")
    chat.wait(30)
    present = next(i for i in chat.items if i["kind"] == "tool" and i["name"] == "present_files")
    [csv] = chat.files
    assert csv["anchor"] == present["id"]  # shown right after the call that presented it
    # the preview was pushed while the run was still going: before the final answer had streamed
    updates = comm_log.updates(chat)
    first = next(i for i, state in enumerate(updates) if state.get("files"))
    answers = [assistant_texts(state) for state in updates[:first + 1] if "items" in state]
    assert "I wrote **hello.csv**." not in answers[-1]
    assert "**Files:** `/mnt/user-data/outputs/hello.csv`" in chat._markdown()


def test_skip_and_ping_and_answered_elsewhere(make_agent, comm_log):
    model = ScriptedChatModel(responses=[FORM, "Went on with defaults.", FORM])
    agent = make_agent(model=model)
    thread = agent.thread()
    chat = thread.ui("Build the report")
    chat.wait(30)
    assert chat.status == "waiting"
    front_end_send(chat, {"kind": "skip", "tool_call_id": chat.items[-1]["id"]})
    assert chat.wait(30) == "Went on with defaults."
    card = next(i for i in chat.items if i["kind"] == "input_request")
    assert card["answered"] and card["skipped"]
    assert "skipped this question" in str(model.calls[-1][-1].content) if hasattr(model, "calls") else True
    # the front end's liveness check is answered with a pong
    sent = []
    monkey_send = chat.comm.send
    chat.comm.send = lambda data=None, **kw: sent.append(data) or monkey_send(data, **kw)
    front_end_send(chat, {"kind": "ping"})
    assert any((d or {}).get("content", {}).get("kind") == "pong" for d in sent)
    # a question answered from code closes the open card on the next check
    chat.send("again")
    chat.wait(30)
    assert chat.status == "waiting"
    thread.respond({"dataset": "sales.csv", "agree": True})
    front_end_send(chat, {"kind": "ping"})
    chat.wait(30)
    assert chat.status == "idle" and chat.items[-1]["answered"]


def test_load_into_variable_puts_a_presented_file_into_the_notebook(make_agent, comm_log, monkeypatch):
    import IPython
    import pandas as pd

    from deerflow_nb.widgets import chat as chat_module

    agent = make_agent(write_and_present())
    chat = agent.thread().ui("write the csv")
    chat.wait(30)
    path = chat.files[0]["path"]
    namespace: dict = {}
    value = chat.load_into(path, "hello", namespace)
    assert isinstance(value, pd.DataFrame) and value.to_dict("list") == {"a": [1], "b": [2]}
    assert namespace["hello"] is value
    assert chat.items[-1]["kind"] == "notice" and "`hello` (DataFrame)" in chat.items[-1]["text"]
    # the button: a front-end message, into the kernel's user namespace
    user_ns: dict = {}
    monkeypatch.setattr(chat_module, "_user_namespace", lambda: user_ns)
    front_end_send(chat, {"kind": "load", "path": path, "name": "df2"})
    assert isinstance(user_ns["df2"], pd.DataFrame)
    front_end_send(chat, {"kind": "load", "path": path, "name": "not a name"})
    assert "not a valid Python variable name" in chat.items[-1]["text"] and "not a name" not in user_ns
    monkeypatch.undo()
    assert IPython.get_ipython() is None  # outside a kernel the button says what to do instead
    front_end_send(chat, {"kind": "load", "path": path, "name": "df3"})
    assert "needs an IPython kernel" in chat.items[-1]["text"]
