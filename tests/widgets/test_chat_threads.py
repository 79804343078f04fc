"""``agent.ui()``: the thread list (open, rename, delete, new), the model picker, and reattaching to runs."""

from __future__ import annotations

import re
import time

import pytest
import yaml

import deerflow_nb as df
from deerflow_nb.errors import UsageError

from .conftest import front_end_send


@pytest.fixture
def agent(home, tmp_path):
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({
        "config_version": 1,
        "models": [{"name": "fast", "display_name": "Fast model", "use": "tests.client.parity_models:ParityModel"},
                   {"name": "smart", "use": "tests.client.parity_models:ParityModel", "latency": 0.01}],
        "memory": {"enabled": False}, "title": {"enabled": False}}))
    client = df.DeerFlow(config, home=home)
    yield client
    client.close()


def test_thread_list_open_rename_delete_new(agent, comm_log):
    first = agent.thread()
    first.chat("hello one")
    first.rename("First")
    chat = agent.ui()
    assert chat.browser
    assert {t["thread_id"]: t["title"] for t in chat.threads} == {chat.thread_id: "", first.id: "First"}
    front_end_send(chat, {"kind": "send", "text": "hello two"})
    assert chat.wait(30) == "Answer to two."
    chat.refresh_threads()
    assert chat.threads[0]["thread_id"] == chat.thread_id
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d", chat.threads[0]["updated_at"])
    # open the first thread: its history replaces the transcript
    front_end_send(chat, {"kind": "open_thread", "thread_id": first.id})
    assert chat.thread_id == first.id and chat.title == "First"
    assert [i["text"] for i in chat.items] == ["hello one", "Answer to one."]
    # rename from the list; the open chat's title follows
    front_end_send(chat, {"kind": "rename_thread", "thread_id": first.id, "title": "Sales  review"})
    assert chat.title == "Sales review" and agent.thread(first.id).title == "Sales review"
    assert {t["thread_id"]: t["title"] for t in chat.threads}[first.id] == "Sales review"
    # delete the open thread: a new empty thread takes its place
    front_end_send(chat, {"kind": "delete_thread", "thread_id": first.id})
    assert first.id not in {t["thread_id"] for t in agent.threads()}
    assert chat.thread_id != first.id and chat.items == []
    front_end_send(chat, {"kind": "new_thread"})
    assert chat.items == [] and chat.status == "idle"
    assert any("threads" in u for u in comm_log.updates(chat))


def test_model_picker_sets_the_run_option(agent, comm_log):
    chat = agent.ui()
    assert chat.models == [{"name": "fast", "display_name": "Fast model"}, {"name": "smart", "display_name": "smart"}]
    front_end_send(chat, {"kind": "set_model", "model_name": "smart"})
    assert chat.model_name == "smart" and chat.options["model_name"] == "smart"
    chat.send("hello three")
    assert chat.wait(30) == "Answer to three."
    assert agent.runtime.runs.local(chat.run.run_id).kwargs["model_name"] == "smart"
    with pytest.raises(UsageError, match="unknown model"):
        chat.set_model("nope")
    chat.set_model("")
    assert "model_name" not in chat.options
    assert df.DeerFlow.ui.__doc__ and "model" in df.DeerFlow.ui.__doc__


def test_thread_ui_reattaches_to_a_run_still_going(agent, comm_log):
    thread = agent.thread()
    thread.chat("hello four")
    run = thread.start("slow please", model_name="smart")
    chat = agent.thread(thread.id).ui()  # e.g. the cell re-run: no message, no run given
    assert chat.status == "running" and chat.busy
    deadline = time.monotonic() + 120  # generous: a loaded 2-core machine (waits on the state, not a sleep)
    while time.monotonic() < deadline:  # the widget consumes the run in the background
        if chat.run is not None and chat.text.startswith("tick"):
            break
        time.sleep(0.01)
    assert chat.run.run_id == run.run_id
    chat.stop()
    chat.wait(30)
    assert chat.status == "stopped"
    texts = [i["text"] for i in chat.items if i["kind"] in {"user", "assistant"}]
    assert texts[:3] == ["hello four", "Answer to four.", "slow please"]
    assert sum(t == "slow please" for t in texts) == 1  # the run's input is shown once
    [partial] = [i for i in chat.items if i["kind"] == "assistant" and i.get("interrupted")]
    assert partial["text"].startswith("tick")
    # reopened later, the stored marker shows the interrupted run with its partial answer
    again = agent.thread(thread.id).ui()
    assert again.run is None
    [stored] = [i for i in again.items if i["kind"] == "assistant" and i.get("interrupted")]
    assert stored["text"].startswith("tick")


def test_thread_list_needs_a_client(make_agent, comm_log):
    chat = make_agent(["x"]).thread().ui()
    assert not chat.browser
    with pytest.raises(UsageError, match="agent.ui"):
        chat.refresh_threads()


def test_threads_nobody_wrote_in_are_not_listed(agent, comm_log):
    empty = agent.thread("never-used")  # created, never written in
    used = agent.thread()
    used.chat("hello one")  # titles are off in this fixture: written in, but untitled
    chat = agent.ui()
    listed = {t["thread_id"] for t in chat.threads}
    assert used.id in listed and chat.thread_id in listed  # the open (still empty) thread stays
    assert empty.id not in listed and empty.id in {t["thread_id"] for t in agent.threads()}
    empty.rename("Kept on purpose")  # a title is a reason to list it
    chat.refresh_threads()
    assert empty.id in {t["thread_id"] for t in chat.threads}
