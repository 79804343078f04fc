"""The guardrail policy in one process: rules, custom providers, fail-closed, subagents, held parallel calls."""

from __future__ import annotations

import pytest
import yaml

import deerflow_nb as df
from deerflow_nb.config.schema import AppConfig, GuardrailRule
from deerflow_nb.errors import ConfigError, HumanInputRequired, NotFoundError
from deerflow_nb.guardrails import GuardrailRequest, RulesGuardrailProvider, argument_at, build_guardrail_provider
from tests.guardrails.guardrail_models import calls
from tests.guardrails.providers import NoPrefix

OUT = "/mnt/user-data/outputs"


def write(path: str, content: str = "hello") -> tuple[str, dict]:
    return "write_file", {"description": "write", "path": path, "content": content}


@pytest.fixture
def make(tmp_path):
    agents = []

    def _make(guardrails: dict, **kwargs) -> df.DeerFlow:
        path = tmp_path / f"config-{len(agents)}.yaml"
        path.write_text(yaml.safe_dump({
            "config_version": 1, "memory": {"enabled": False}, "title": {"enabled": False},
            "models": [{"name": "guard", "use": "tests.guardrails.guardrail_models:GuardrailModel"}],
            "guardrails": guardrails}))
        agent = df.DeerFlow(path, home=tmp_path / "home", **kwargs)
        agents.append(agent)
        return agent

    yield _make
    for agent in agents:
        agent.close()


def request(name: str, **args) -> GuardrailRequest:
    return GuardrailRequest(tool_name=name, tool_input=args)


def test_rules_match_names_globs_argument_paths_and_serialized_args():
    provider = RulesGuardrailProvider(deny=[
        GuardrailRule(tool="mcp_*"),
        GuardrailRule(tool="bash", arg="command", pattern=r"\brm\s+-rf\b", reason="no recursive deletes"),
        GuardrailRule(arg="options.targets.1", pattern="^prod$"),
        GuardrailRule(pattern="password"),
    ])
    assert provider.evaluate(request("mcp_github_delete_repo")).policy_id == "deny[0]"
    assert not provider.evaluate(request("github_mcp")).require_approval
    assert provider.evaluate(request("github_mcp")).allow
    denied = provider.evaluate(request("bash", command="cd /tmp && rm  -rf data"))
    assert (denied.allow, denied.reason, denied.policy_id) == (False, "no recursive deletes", "deny[1]")
    assert provider.evaluate(request("bash", command="rm -f data")).allow
    assert provider.evaluate(request("deploy", options={"targets": ["dev", "prod"]})).policy_id == "deny[2]"
    assert provider.evaluate(request("deploy", options={"targets": ["prod", "dev"]})).allow
    assert provider.evaluate(request("deploy", options={"targets": "prod"})).allow  # no such path: no match
    assert provider.evaluate(request("login", user={"password": "x"})).policy_id == "deny[3]"
    assert argument_at({"a": [{"b": 1}]}, "a.0.b") == 1


def test_rules_are_validated_when_the_config_loads():
    with pytest.raises(ValueError, match="needs tool and/or pattern"):
        GuardrailRule(reason="everything?")
    with pytest.raises(ValueError, match="arg needs a pattern"):
        GuardrailRule(tool="bash", arg="command")
    with pytest.raises(ValueError, match="not a valid regular expression"):
        GuardrailRule(pattern="(")
    with pytest.raises(ValueError, match="extra"):
        AppConfig.model_validate({"guardrails": {"deny": [{"tool": "bash", "regex": "x"}]}})
    assert build_guardrail_provider(AppConfig()) is None
    assert build_guardrail_provider(AppConfig.model_validate(
        {"guardrails": {"enabled": False, "deny": [{"tool": "bash"}]}})) is None


def test_custom_provider_from_use_sees_every_call(make):
    NoPrefix.seen.clear()
    agent = make({"provider": {"use": "tests.guardrails.providers:NoPrefix", "config": {"prefix": f"{OUT}/locked"}}})
    thread = agent.thread()
    answer = thread.chat(calls(write(f"{OUT}/locked/a.txt"), write(f"{OUT}/open.txt")))
    assert f"nothing may be written under {OUT}/locked" in answer and "team.paths" in answer
    assert thread.artifact(f"{OUT}/open.txt")[0] == b"hello"
    with pytest.raises(NotFoundError):
        thread.artifact(f"{OUT}/locked/a.txt")
    seen = {r.tool_call_id: r for r in NoPrefix.seen}
    # both writes, then the presentation of the one written (every call is seen)
    assert set(seen) == {"call-0-write_file", "call-1-write_file", "present-5"}
    assert seen["present-5"].tool_name == "present_files"
    assert seen["call-0-write_file"].thread_id == thread.id and seen["call-0-write_file"].run_id
    assert not seen["call-0-write_file"].is_subagent and seen["call-0-write_file"].interactive


@pytest.mark.parametrize(("use", "message"), [
    ("tests.guardrails.providers:NotAProvider", "has no evaluate/aevaluate methods"),
    ("tests.guardrails.providers:Nope", "has no attribute"),
    ("tests.guardrails.providers:NoPrefix", "cannot be created"),  # prefix missing
])
def test_bad_custom_providers_are_config_errors(use, message):
    with pytest.raises(ConfigError, match=message):
        build_guardrail_provider(AppConfig.model_validate({"guardrails": {"provider": {"use": use}}}))


def test_provider_errors_fail_closed_or_open(make):
    closed = make({"provider": {"use": "tests.guardrails.providers:Broken"}}).thread()
    answer = closed.chat(calls(write(f"{OUT}/a.txt")))
    assert "guardrail provider failed (RuntimeError)" in answer and "fail-closed" in answer
    with pytest.raises(NotFoundError):
        closed.artifact(f"{OUT}/a.txt")
    opened = make({"fail_closed": False, "provider": {"use": "tests.guardrails.providers:Broken"}}).thread()
    assert "Guardrail" not in opened.chat(calls(write(f"{OUT}/b.txt")))
    assert opened.artifact(f"{OUT}/b.txt")[0] == b"hello"
    assert [e["payload"]["action"] for e in opened.run_events(event_type="guardrail")] == \
        ["allow_after_provider_error"] * 2  # the write and its presentation


def test_the_approval_tool_is_never_bound_and_cannot_be_called(make):
    from langchain.agents.middleware import ModelRequest, ModelResponse
    from langchain_core.messages import AIMessage, HumanMessage

    from deerflow_nb.agent.middlewares.guardrail import APPROVAL_TOOL, GuardrailMiddleware

    middleware = GuardrailMiddleware(RulesGuardrailProvider(require_approval=[GuardrailRule(tool="write_file")]))
    (hidden,) = middleware.tools
    assert hidden.name == APPROVAL_TOOL and hidden.return_direct
    assert GuardrailMiddleware(middleware.provider, interactive=False).tools == []
    seen = []
    request = ModelRequest(model=None, messages=[HumanMessage("hi")], tools=[hidden],  # type: ignore[arg-type]
                           system_message=None, tool_choice=None, response_format=None, state={}, runtime=None)
    middleware.wrap_model_call(request, lambda r: seen.append(r.tools) or ModelResponse(result=[AIMessage("ok")]))
    assert seen == [[]]
    # a model that calls it anyway gets a denial, and nothing runs
    thread = make({"require_approval": [{"tool": "write_file"}]}).thread()
    thread.chat(calls(("guardrail_approval", {})))
    (result,) = [m for m in thread.messages if m.type == "tool"]
    assert result.status == "error" and "not a callable tool" in result.content
    assert thread.pending_input is None


def test_parallel_calls_hold_only_the_one_needing_approval(make):
    agent = make({"require_approval": [{"tool": "write_file", "arg": "path", "pattern": "/reports/"}]})
    thread = agent.thread()
    with pytest.raises(HumanInputRequired) as info:
        thread.chat(calls(write(f"{OUT}/notes.txt"), write(f"{OUT}/reports/r.md"), write(f"{OUT}/more.txt")))
    assert info.value.request["tool_call"]["args"]["path"] == f"{OUT}/reports/r.md"
    (ai,) = [m for m in thread.messages if m.type == "ai"]
    assert [c["args"]["path"] for c in ai.tool_calls] == [f"{OUT}/reports/r.md"]  # the others were held back
    assert "Tool said: " in thread.respond("Approve")
    assert thread.artifact(f"{OUT}/reports/r.md")[0] == b"hello"
    with pytest.raises(NotFoundError):
        thread.artifact(f"{OUT}/notes.txt")


def test_an_approval_answers_only_the_call_on_its_card(make):
    agent = make({"require_approval": [{"tool": "write_file"}]})
    thread = agent.thread()
    with pytest.raises(HumanInputRequired):
        thread.chat(calls(write(f"{OUT}/a.txt")))
    assert "Tool said: " in thread.respond("approve")  # answers are matched case-insensitively
    # a later call, even the same one, needs its own approval
    with pytest.raises(HumanInputRequired):
        thread.chat(calls(write(f"{OUT}/a.txt", "again")))
    assert "the user rejected this call" in thread.respond("not today")  # anything but approve rejects
    # a model's call that looks like a re-issued approved call is judged like any other
    with pytest.raises(HumanInputRequired):
        thread.chat(calls(write(f"{OUT}/a.txt"), call_id="guardrail-approve:call-0-write_file"))


def test_subagent_tool_calls_are_guarded_and_cannot_wait_for_approval(make):
    agent = make({"deny": [{"tool": "bash"}], "require_approval": [{"tool": "write_file"}]}, subagents=True)
    thread = agent.thread()
    inner = calls(("bash", {"description": "x", "command": "ls"}), write(f"{OUT}/sub.txt"))
    run = thread.start(calls(("task", {"description": "inner work", "prompt": inner,
                                       "subagent_type": "general-purpose"})))
    answer = run.wait()
    assert "Guardrail denied the tool call 'bash'" in answer
    assert "needs a human's approval, and this is a subagent" in answer
    with pytest.raises(NotFoundError):
        thread.artifact(f"{OUT}/sub.txt")
    events = [e["payload"] for e in thread.run_events(run.run_id, event_type="guardrail")]
    assert {(e["tool_name"], e["action"], e["is_subagent"]) for e in events} == {
        ("bash", "deny", True), ("write_file", "deny", True)}


def test_mcp_tool_calls_are_guarded(make, home):
    import json
    import pathlib

    from tests.mcp.conftest import server_entry

    (pathlib.Path.cwd() / "extensions_config.json").write_text(
        json.dumps({"mcpServers": {"notes": server_entry()}, "skills": {}}))
    agent = make({"deny": [{"tool": "write_*", "arg": "name", "pattern": "^secret", "reason": "no secret notes"}]})
    thread = agent.thread()
    answer = thread.chat(calls(("write_note", {"name": "secret.txt", "text": "x"}),
                               ("write_note", {"name": "ok.txt", "text": "fine"})))
    assert "no secret notes" in answer
    denied, written = [m for m in thread.messages if m.type == "tool"]
    assert denied.status == "error" and written.content == "wrote /mnt/user-data/workspace/ok.txt"
    workspace = home / "users/default/threads" / thread.id / "user-data/workspace"
    assert (workspace / "ok.txt").read_text() == "fine" and not (workspace / "secret.txt").exists()


def test_sync_hooks_judge_like_the_async_ones():
    """The sync twins (graphs run with invoke): deny, allow, a card, and a held batch."""
    from types import SimpleNamespace

    from langchain.agents.middleware import ModelRequest, ModelResponse
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    from deerflow_nb.agent.middlewares.guardrail import APPROVAL_TOOL, GuardrailMiddleware

    middleware = GuardrailMiddleware(RulesGuardrailProvider(
        deny=[GuardrailRule(tool="bash")], require_approval=[GuardrailRule(tool="write_file")]))

    def tool_request(name: str, call_id: str = "c1"):
        return SimpleNamespace(tool_call={"name": name, "args": {"path": "x"}, "id": call_id}, runtime=None, state={})

    ran = []
    denied = middleware.wrap_tool_call(tool_request("bash"), lambda r: ran.append(r) or "ran")
    assert isinstance(denied, ToolMessage) and denied.status == "error" and ran == []
    assert middleware.wrap_tool_call(tool_request("ls"), lambda r: "ran") == "ran"
    card = middleware.wrap_tool_call(tool_request("write_file"), lambda r: "ran")
    assert card.name == APPROVAL_TOOL and card.artifact["human_input"]["tool_call"]["name"] == "write_file"

    batch = AIMessage("", tool_calls=[{"name": "ls", "args": {}, "id": "a"},
                                      {"name": "write_file", "args": {"path": "x"}, "id": "b"}])
    request = ModelRequest(model=None, messages=[HumanMessage("go")], tools=[],  # type: ignore[arg-type]
                           system_message=None, tool_choice=None, response_format=None, state={}, runtime=None)
    held = middleware.wrap_model_call(request, lambda r: ModelResponse(result=[batch]))
    assert [c["id"] for c in held.result[0].tool_calls] == ["b"]
    # after the human's answer the held call is re-issued without a model call
    answer = HumanMessage("Approve", additional_kwargs={"human_input_response": {
        "source": "ask_clarification", "tool_call_id": "b", "response_kind": "option", "option": "Approve"}})
    resumed = ModelRequest(model=None, messages=[HumanMessage("go"), held.result[0],  # type: ignore[arg-type]
                                                 middleware.wrap_tool_call(tool_request("write_file", "b"),
                                                                           lambda r: "ran"), answer],
                           tools=[], system_message=None, tool_choice=None, response_format=None, state={},
                           runtime=None)
    reissued = middleware.wrap_model_call(resumed, lambda r: pytest.fail("the model must not be called"))
    (call,) = reissued.result[0].tool_calls
    assert (call["name"], call["id"]) == ("write_file", "guardrail-approve:b")
