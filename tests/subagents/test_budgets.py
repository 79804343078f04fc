"""Subagent token budgets (``stop_reason: token_capped``) and the per-run ``max_concurrent_subagents`` option,
embedded and against a real ``jupyter server``."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from deerflow_nb.config.schema import AppConfig
from deerflow_nb.errors import UsageError
from deerflow_nb.subagents import resolve_limits
from deerflow_nb.testing import ScriptedChatModel
from tests.client.conftest import two_backend_client
from tests.guardrails.guardrail_models import calls

LS = {"name": "ls", "args": {"description": "look", "path": "/mnt/user-data/workspace"}}


def task(prompt: str, subagent_type: str = "general-purpose") -> tuple[str, dict]:
    return "task", {"description": prompt[:20], "prompt": prompt, "subagent_type": subagent_type}


def task_results(thread) -> list[ToolMessage]:
    return [m for m in thread.messages if isinstance(m, ToolMessage) and m.name == "task"]


def test_default_budget_follows_summarization_and_a_set_budget_wins():
    assert resolve_limits(AppConfig()).token_budget == 1_000_000  # summarization is on by default
    off = AppConfig.model_validate({"summarization": {"enabled": False}})
    assert resolve_limits(off).token_budget == 2_000_000
    set_ = AppConfig.model_validate({"summarization": {"enabled": False},
                                     "subagents": {"token_budget": {"max_tokens": 5000, "warn_ratio": 0.5}}})
    assert (resolve_limits(set_).token_budget, resolve_limits(set_).token_warn_ratio) == (5000, 0.5)
    with pytest.raises(ValueError, match="greater than 0"):
        AppConfig.model_validate({"subagents": {"token_budget": {"max_tokens": 0}}})


def test_token_budget_warns_then_caps_with_a_partial_answer(make_agent):
    lead = {"content": "", "tool_calls": [{"name": "task", "args": dict(task("Explore", "spender")[1])}]}
    agent = make_agent([lead, "Lead: done"], subagents={
        "custom": [{"name": "spender", "description": "spends tokens", "tools": ["ls"], "token_budget": 1000}]})
    usage = {"input_tokens": 700, "output_tokens": 50, "total_tokens": 750}
    sub = ScriptedChatModel(responses=[
        {"content": "Looking around.", "tool_calls": [LS], "usage_metadata": usage},
        {"content": "Found three files.", "tool_calls": [LS], "usage_metadata": usage},
        "never reached",
    ])
    agent.subagents.model = sub
    thread = agent.thread()
    assert thread.chat("go") == "Lead: done"
    # the second call saw the hidden wrap-up note (750 >= 0.7 * 1000); the first did not
    notes = [[m.text for m in call if isinstance(m, HumanMessage) and "token budget" in m.text] for call in sub.calls]
    assert notes[0] == [] and notes[1] == ["You have used 750 of your 1,000-token budget. Stop exploring: write "
                                           "your final report now from what you already have."]
    assert len(sub.calls) == 2 and sub.remaining == 1  # the capped turn was the last: its ls never ran
    (result,) = task_results(thread)
    assert result.text.startswith("Task Succeeded (capped: token_capped). Result: Found three files.")
    assert "used its token budget (1,500 of 1,000 tokens)" in result.text
    assert result.additional_kwargs["subagent_stop_reason"] == "token_capped"
    entry = thread.state["delegations"][0]
    assert (entry["status"], entry["stop_reason"]) == ("completed", "token_capped")
    assert sum(1 for s in entry["steps"] if s["type"] == "tool") == 1
    assert {s["name"]: s["token_budget"] for s in agent.subagents.list()}["spender"] == 1000


def test_under_budget_there_is_no_stop_reason(make_agent):
    lead = {"content": "", "tool_calls": [{"name": "task", "args": dict(task("Explore")[1])}]}
    agent = make_agent([lead, "ok"])
    agent.subagents.model = ScriptedChatModel(responses=[{"content": "", "tool_calls": [LS]}, "all good"])
    thread = agent.thread()
    thread.chat("go")
    (result,) = task_results(thread)
    assert result.text == "Task Succeeded. Result: all good" and "subagent_stop_reason" not in result.additional_kwargs


@pytest.fixture(scope="module", params=["embedded", "server"])
def agent(request, tmp_path_factory):
    config = {"config_version": 1,
              "models": [{"name": "guard", "use": "tests.guardrails.guardrail_models:GuardrailModel"}],
              "memory": {"enabled": False}, "title": {"enabled": False},
              "subagents": {"max_concurrent_subagents": 3,
                            "custom": [{"name": "tiny", "description": "a tiny budget", "tools": ["ls"],
                                        "token_budget": 1}]}}
    with two_backend_client(request.param, tmp_path_factory.mktemp(f"budgets-{request.param}"), config) as client:
        yield client


def test_per_run_max_concurrent_subagents(agent):
    thread = agent.thread()
    three = calls(task("one"), task("two"), task("three"))
    thread.chat(three, subagent_enabled=True, max_concurrent_subagents=1)
    assert len(task_results(thread)) == 1
    delegating = next(m for m in thread.messages if isinstance(m, AIMessage) and m.tool_calls)
    assert [c["args"]["prompt"] for c in delegating.tool_calls] == ["one"]
    other = agent.thread()
    other.chat(three, subagent_enabled=True)  # without the option: the config's 3
    assert len(task_results(other)) == 3


@pytest.mark.parametrize("value", [0, 5, "2", True, 1.5])
def test_invalid_max_concurrent_subagents_is_refused_before_running(agent, value):
    thread = agent.thread()
    with pytest.raises(UsageError, match="max_concurrent_subagents"):
        thread.chat("hi", subagent_enabled=True, max_concurrent_subagents=value)
    assert thread.messages == []


def test_token_capped_in_both_backends(agent):
    thread = agent.thread()
    inner = calls(("ls", LS["args"]))
    thread.chat(calls(task(inner, "tiny")), subagent_enabled=True)
    (result,) = task_results(thread)
    assert result.text.startswith("Task Succeeded (capped: token_capped).")
    assert result.additional_kwargs["subagent_stop_reason"] == "token_capped"
    assert {s["name"]: s["token_budget"] for s in agent.subagents.list()}["tiny"] == 1
