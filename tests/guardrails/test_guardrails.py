"""Guardrails in both modes (embedded and a real ``jupyter server``): deny by name, deny by an argument
pattern, approval through the human-input card (approve and reject), non-interactive runs, the journal."""

from __future__ import annotations

import pytest

from deerflow_nb.errors import HumanInputRequired, NotFoundError
from tests.client.conftest import two_backend_client
from tests.guardrails.guardrail_models import calls

OUT = "/mnt/user-data/outputs"
GUARDRAILS = {
    "deny": [
        {"tool": "bash", "reason": "No shell in this project; use the file tools."},
        {"tool": "write_file", "arg": "path", "pattern": r"secret", "id": "no-secrets"},
        {"pattern": r"DROP\s+TABLE"},
    ],
    "require_approval": [{"tool": "write_file", "arg": "path", "pattern": r"/reports/", "id": "reports",
                          "reason": "Reports are published to everyone."}],
}


@pytest.fixture(scope="module", params=["embedded", "server"])
def agent(request, tmp_path_factory):
    config = {"config_version": 1,
              "models": [{"name": "guard", "use": "tests.guardrails.guardrail_models:GuardrailModel"}],
              "memory": {"enabled": False}, "title": {"enabled": False}, "guardrails": GUARDRAILS}
    with two_backend_client(request.param, tmp_path_factory.mktemp(f"guardrails-{request.param}"), config) as client:
        yield client


def write(path: str, content: str = "hello") -> tuple[str, dict]:
    return "write_file", {"description": "write", "path": path, "content": content}


def tool_messages(thread):
    return [m for m in thread.messages if m.type == "tool"]


def guardrail_events(thread, run_id):
    return [e["payload"] for e in thread.run_events(run_id, event_type="guardrail")]


def test_deny_by_name_is_the_tool_result_and_a_journal_event(agent):
    thread = agent.thread()
    run = thread.start(calls(("bash", {"description": "x", "command": "echo hi > /mnt/user-data/outputs/x"})))
    answer = run.wait()
    assert "No shell in this project; use the file tools." in answer and "Guardrail denied" in answer
    (result,) = tool_messages(thread)
    assert result.status == "error" and result.name == "bash"
    with pytest.raises(NotFoundError):
        thread.artifact(f"{OUT}/x")
    (event,) = guardrail_events(thread, run.run_id)
    assert (event["action"], event["tool_name"], event["policy_id"]) == ("deny", "bash", "deny[0]")
    assert event["reasons"] == ["No shell in this project; use the file tools."]


def test_deny_by_argument_pattern_and_serialized_args(agent):
    thread = agent.thread()
    answer = thread.chat(calls(write(f"{OUT}/secret.txt"), write(f"{OUT}/fine.txt")))
    assert "forbids tool 'write_file' with argument 'path' matching 'secret'" in answer
    results = {m.tool_call_id: m for m in tool_messages(thread)}
    assert results["call-0-write_file"].status == "error"
    assert results["call-1-write_file"].status != "error"
    assert "DROP" not in answer
    answer = thread.chat(calls(write(f"{OUT}/q.sql", "drop  table users; DROP TABLE users")))
    assert "Guardrail denied" in answer and "DROP\\\\s+TABLE" in answer or "DROP" in answer


def test_approval_approve_runs_the_held_call(agent):
    thread = agent.thread()
    with pytest.raises(HumanInputRequired) as info:
        thread.chat(calls(write(f"{OUT}/reports/q3.md", "Q3 is up")))
    card = info.value.request
    assert card["source"] == "guardrail" and card["options"] == ["Approve", "Reject"]
    assert card["tool_call"] == {"name": "write_file", "args": write(f"{OUT}/reports/q3.md", "Q3 is up")[1]}
    assert "Reports are published to everyone." in card["context"]
    assert thread.pending_input == card
    answer = thread.respond("Approve")
    assert answer.startswith("Tool said: ") and "Guardrail" not in answer
    assert thread.pending_input is None
    written = [m for m in tool_messages(thread) if m.name == "write_file"]
    assert len(written) == 1 and written[0].status != "error"
    assert thread.artifact(f"{OUT}/reports/q3.md")[0] == b"Q3 is up"
    first, second = [m.additional_kwargs["run_id"] for m in thread.messages if m.type == "human"]
    assert [(e["action"], e["policy_id"]) for e in guardrail_events(thread, first)] == [("require_approval",
                                                                                         "reports")]
    assert [(e["action"], e["allow"]) for e in guardrail_events(thread, second)] == [("approved", True)]


def test_approval_reject_denies_the_call(agent):
    thread = agent.thread()
    with pytest.raises(HumanInputRequired):
        thread.chat(calls(write(f"{OUT}/reports/q4.md")))
    run_answer = thread.respond("Reject")
    assert "the user rejected this call" in run_answer
    written = [m for m in tool_messages(thread) if m.name == "write_file"]
    assert len(written) == 1 and written[0].status == "error"
    with pytest.raises(NotFoundError):
        thread.artifact(f"{OUT}/reports/q4.md")


def test_non_interactive_run_denies_what_needs_approval(agent):
    thread = agent.thread()
    answer = thread.chat(calls(write(f"{OUT}/reports/q5.md")), non_interactive=True)
    assert "Reports are published to everyone." in answer and "non-interactive run" in answer
    assert thread.pending_input is None


def test_a_scheduled_run_denies_what_needs_approval(agent):
    import time

    task = agent.schedules.create(calls(write(f"{OUT}/reports/nightly.md")), every=3600)
    started = agent.schedules.trigger(task["id"])
    deadline = time.monotonic() + 180
    while (runs := agent.schedules.runs(task["id"]))[0]["status"] in {"queued", "running"}:
        assert time.monotonic() < deadline, runs
        time.sleep(0.1)
    assert runs[0]["status"] == "success"
    thread = agent.thread(started["thread_id"])
    (result,) = tool_messages(thread)
    assert result.status == "error" and "non-interactive run, where nobody can approve it" in result.content
    assert thread.pending_input is None
    with pytest.raises(NotFoundError):
        thread.artifact(f"{OUT}/reports/nightly.md")
    agent.schedules.delete(task["id"])
