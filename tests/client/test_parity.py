"""One API, two backends: the same SDK-level checks against an embedded DeerFlow and a real ``jupyter server``."""

from __future__ import annotations

import io
import zipfile

import pytest

import deerflow_nb as df
from deerflow_nb.errors import HumanInputRequired, NotFoundError, SandboxPathError, UsageError
from tests.client.conftest import two_backend_client


@pytest.fixture(scope="module", params=["embedded", "server"])
def agent(request, tmp_path_factory):
    with two_backend_client(request.param, tmp_path_factory.mktemp(f"parity-{request.param}"), {
        "config_version": 1,
        "models": [{"name": "parity", "use": "tests.client.parity_models:ParityModel", "latency": 0.005}],
        "memory": {"enabled": False}, "title": {"enabled": False},
    }) as client:
        yield client


def test_same_class_and_threads(agent):
    assert type(agent) is df.DeerFlow
    thread = agent.thread()
    assert isinstance(thread, df.Thread)
    assert thread.chat("hello one") == "Answer to one."
    assert thread.id in {t["thread_id"] for t in agent.threads()}
    assert [type(m).__name__ for m in thread.messages][:2] == ["HumanMessage", "AIMessage"]
    assert thread.state["artifacts"] == [] and len(thread.history(limit=2)) == 2
    assert thread.history(limit=0) == []
    agent.delete_thread(thread.id)
    assert thread.id not in {t["thread_id"] for t in agent.threads()}


def test_a_named_thread_reopens_after_a_kernel_restart(agent):
    import subprocess
    import sys

    thread = agent.thread("sales-review")
    assert thread.chat("hello seven") == "Answer to seven."
    if agent.url:  # a new kernel connects to the same server
        token = agent.backend._headers["Authorization"].split()[-1]
        make = f"df.DeerFlow.connect(url={agent.url!r}, token={token!r})"
    else:  # a new kernel opens the same home
        make = f"df.DeerFlow({str(agent.backend.runtime.config_path)!r}, home={str(agent.home)!r})"
    code = (f"import deerflow_nb as df\nagent = {make}\nthread = agent.thread('sales-review')\n"
            "print([m.content for m in thread.messages])\nprint(thread.chat('hello eight'))\nagent.close()\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True).stdout
    assert out.splitlines() == ["['hello seven', 'Answer to seven.']", "Answer to eight."]
    assert [m.content for m in agent.thread("sales-review").messages][-2:] == ["hello eight", "Answer to eight."]


def test_files_written_and_never_presented_end_the_run_as_undelivered(agent):
    thread = agent.thread()
    run = thread.start("write hidden.txt and never show it")
    with pytest.raises(df.AnswerError) as caught:
        run.wait()
    assert (caught.value.status, caught.value.stop_reason) == ("error", "undelivered_outputs")
    assert "/mnt/user-data/outputs/hidden.txt" in caught.value.cause and run.status == "error"
    [receipt] = [e["payload"] for e in thread.run_events(run.run_id, event_type="run.delivery")]
    assert receipt["satisfied"] is False and receipt["produced_paths"] == ["/mnt/user-data/outputs/hidden.txt"]
    assert thread.messages[-1].type != "ai" or thread.messages[-1].tool_calls  # no answer was stored


def test_runs_start_stream_wait_replay(agent):
    thread = agent.thread()
    events = list(thread.stream("stream two"))
    assert events[-1].type == "end"
    assert "".join(e.data["content"] for e in events
                   if e.type == "messages-tuple" and e.data.get("type") == "ai") == "Answer to two."
    run = thread.start("start three")
    assert isinstance(run, df.Run)
    first = list(run.events())
    second = list(run.events())  # a replay is a fresh replay, never appended to the first
    assert [e.type for e in first] == [e.type for e in second]
    assert run.wait() == "Answer to three."
    assert run.wait() == "Answer to three."  # not "Answer to three.Answer to three."
    assert run.status == "success" and run.done
    assert run.usage is not None and run.cancel() == "not_cancellable"


def test_run_events_of_one_run_and_of_the_whole_thread(agent):
    thread = agent.thread()
    first = thread.start("journal one")
    assert first.wait() == "Answer to one."
    run = thread.start("journal two")
    assert run.wait() == "Answer to two."
    mine = thread.run_events(run.run_id)
    assert mine and {e["run_id"] for e in mine} == {run.run_id}
    every = thread.run_events()
    assert {e["run_id"] for e in every} == {first.run_id, run.run_id}
    assert [e for e in every if e["run_id"] == run.run_id] == mine  # oldest first, the same entries
    ends = thread.run_events(event_type="run_end")
    assert [e["run_id"] for e in ends] == [first.run_id, run.run_id]
    agent.delete_thread(thread.id)
    with pytest.raises(NotFoundError):
        thread.run_events()


def test_cancel_is_an_interrupted_outcome(agent):
    thread = agent.thread()
    run = thread.start("slow please")
    for event in run.events():
        if event.type == "messages-tuple":
            break
    assert run.cancel() == "cancelled"
    with pytest.raises(df.RunError) as info:
        run.wait()
    assert info.value.status == "interrupted"


def test_human_input(agent):
    thread = agent.thread()
    with pytest.raises(HumanInputRequired) as info:
        thread.chat("Build the report")
    assert info.value.request["question"] == "Which dataset?"
    assert thread.pending_input["question"] == "Which dataset?"
    with pytest.raises(UsageError, match="invalid form answer"):
        thread.respond({"dataset": "c.csv"})
    assert thread.respond({"dataset": "a.csv"}) == "Report built from a.csv."
    assert thread.pending_input is None
    assert agent.thread().chat("another report", responses={"dataset": "b.csv"}) == "Report built from b.csv."


def test_uploads_artifacts_and_workspace_changes(agent, tmp_path):
    thread = agent.thread()
    data = tmp_path / "data.csv"
    data.write_text("a,b\n1,2\n")
    reply = thread.upload(data)
    assert reply["success"] and reply["files"][0]["filename"] == "data.csv"
    assert [f["filename"] for f in thread.uploads()["files"]] == ["data.csv"]
    assert agent.list_uploads(thread.id)["count"] == 1
    content, mime = thread.artifact("/mnt/user-data/uploads/data.csv")
    assert content == b"a,b\n1,2\n" and mime.startswith("text/csv")
    with pytest.raises(NotFoundError):
        thread.artifact("/mnt/user-data/outputs/missing.txt")
    with pytest.raises((SandboxPathError, UsageError, NotFoundError)):
        thread.artifact("/mnt/user-data/../../etc/passwd")
    thread.delete_upload("data.csv")
    assert thread.uploads()["count"] == 0
    assert thread.workspace_changes()["changes"] == []
    assert thread.chat("write notes.txt") == "Wrote the file."
    changes = thread.workspace_changes()
    assert [(c["path"], c["status"]) for c in changes["changes"]] == [("/mnt/user-data/outputs/notes.txt", "added")]
    assert (thread.aworkspace_changes  # the async twin exists in both modes
            is not None)
    assert thread.artifact("/mnt/user-data/outputs/notes.txt")[0] == b"hello notes.txt\n"


def test_usage(agent):
    thread = agent.thread()
    thread.chat("count four")
    usage = thread.usage()
    assert usage["thread_id"] == thread.id and usage["total_tokens"] > 0 and usage["runs"] == 1
    assert agent.usage()["total_tokens"] >= usage["total_tokens"]


def test_skills(agent, tmp_path):
    names = [s.name for s in agent.skills.list()]
    assert names and agent.list_skills()["skills"][0]["name"] == names[0]
    name = names[0]
    assert agent.skills.disable(name).enabled is False
    assert agent.get_skill(name)["enabled"] is False
    assert agent.skills.resolve(f"/{name} go") is None
    assert agent.update_skill(name, True)["enabled"] is True
    with pytest.raises(NotFoundError):
        agent.get_skill("no-such-skill")
    archive = tmp_path / "parity-kpis.skill"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        zf.writestr("parity-kpis/SKILL.md", "---\nname: parity-kpis\ndescription: KPIs for tests.\n---\n# KPIs\n")
    archive.write_bytes(buffer.getvalue())
    assert agent.skills.install(archive).name == "parity-kpis"
    assert agent.skills.get("parity-kpis").category == "custom"
    agent.skills.uninstall("parity-kpis")
    assert "parity-kpis" not in [s.name for s in agent.skills.list()]


def test_memory_and_mcp_config(agent):
    assert set(agent.get_memory()) >= {"version", "facts"}
    assert agent.reload_memory() == agent.get_memory()
    assert agent.get_memory_config()["enabled"] is False
    assert set(agent.get_memory_status()) == {"config", "data"}
    assert agent.get_mcp_config() == {"mcp_servers": {}}
    servers = {"notes": {"enabled": False, "type": "stdio", "command": "true", "args": []}}
    assert agent.update_mcp_config(servers)["mcp_servers"]["notes"]["enabled"] is False
    assert agent.mcp.config()["notes"]["enabled"] is False
    agent.update_mcp_config({})


def test_models_and_errors(agent):
    assert [m["name"] for m in agent.list_models()["models"]] == ["parity"]
    assert agent.get_model("parity")["name"] == "parity"
    with pytest.raises(df.DeerFlowError):
        agent.get_model("nope")
    with pytest.raises(UsageError):
        agent.thread().chat("hi", no_such_option=True)
    with pytest.raises(UsageError):
        agent.thread().chat("   ")


def test_rename_thread_and_active_run(agent):
    thread = agent.thread()
    assert thread.active_run() is None
    thread.rename("  Quarterly   report ")
    assert {t["thread_id"]: t["title"] for t in agent.threads()}[thread.id] == "Quarterly report"
    assert thread.title == "Quarterly report"  # in the state too, so the next run keeps it
    assert thread.chat("hello five") == "Answer to five."
    assert {t["thread_id"]: t["title"] for t in agent.threads()}[thread.id] == "Quarterly report"
    assert thread.title == "Quarterly report" and len(thread.messages) == 2
    agent.rename_thread(thread.id, "Renamed")
    assert thread.title == "Renamed"
    with pytest.raises(UsageError):
        thread.rename("   ")
    with pytest.raises(NotFoundError):
        agent.rename_thread("no-such-thread", "x")
    run = thread.start("slow please")
    active = thread.active_run()
    assert isinstance(active, df.Run) and active.run_id == run.run_id
    with pytest.raises(df.ThreadBusyError):
        thread.rename("while running")
    run.cancel()
    with pytest.raises(df.RunError):
        run.wait()
    assert thread.active_run() is None


@pytest.mark.parametrize(("message", "field"), [
    ({"type": "human", "content": [{"type": "image_url", "image_url": 5}]}, "values.messages[0].content[0].image_url"),
    ({"type": "ai", "content": "x", "tool_calls": [{"name": "f", "args": "x", "id": "1"}]},
     "values.messages[0].tool_calls[0].args"),
    ({"type": "human", "content": "x", "additional_kwargs": []}, "values.messages[0].additional_kwargs"),
])
def test_malformed_messages_in_a_state_update_are_refused_alike(agent, message, field):
    thread = agent.thread()
    assert thread.chat("hello six") == "Answer to six."
    head = thread.history(limit=1)[0]["checkpoint_id"]
    with pytest.raises(UsageError, match=field.replace("[", r"\[").replace("]", r"\]")):
        thread.update_state({"messages": [message]})
    assert thread.history(limit=1)[0]["checkpoint_id"] == head  # nothing written


def test_a_known_run_id_gives_a_run_in_both_modes(agent):
    import warnings

    from deerflow_nb.client import remote

    thread = agent.thread()
    first = thread.start("hello seven")
    assert first.wait() == "Answer to seven."
    assert thread.chat("hello eight") == "Answer to eight."
    again = thread.run(first.run_id)  # a finished run, not the latest: its own answer
    assert isinstance(again, df.Run) and again.status == "success" and again.wait() == "Answer to seven."
    with pytest.raises(NotFoundError):
        agent.thread().run(first.run_id)  # another thread's run
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        assert remote.RemoteRun(agent, thread.id, first.run_id).wait() == "Answer to seven."
        assert remote.RemoteThread(agent, thread.id).id == thread.id
