"""LangSmith and Langfuse tracing of real runs, against fake servers on 127.0.0.1."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import pytest

from deerflow_nb.errors import ConfigError
from deerflow_nb.testing import ScriptedChatModel
from deerflow_nb.tracing import bind_trace_id, enabled_providers, flush_tracing, reset_trace_id
from tests.tracing.fakes import FakeTracingServer, attrs, delegating_router, otlp_spans


@pytest.fixture(scope="module")
def server() -> Iterator[FakeTracingServer]:
    fake = FakeTracingServer()
    yield fake
    fake.close()


def run_traced(make_agent, trace_id: str) -> tuple[Any, Any]:
    agent = make_agent(model=ScriptedChatModel(responses=[delegating_router] * 4), subagents=True, persistence="memory",
                       user_id="ada")
    thread = agent.thread()
    token = bind_trace_id(trace_id)  # as the gateway does for a request's X-Trace-Id
    try:
        run = thread.start("How many apples?")
    finally:
        reset_trace_id(token)
    assert run.wait() == "There are 3 apples."
    flush_tracing()
    return thread, run


def langsmith_runs(server: FakeTracingServer) -> dict[str, dict[str, Any]]:
    runs: dict[str, dict[str, Any]] = {}
    for _, body in server.posted("/runs/batch"):
        batch = json.loads(body)
        for item in [*batch.get("post", []), *batch.get("patch", [])]:
            runs.setdefault(item["id"], {}).update({k: v for k, v in item.items() if v is not None})
    return runs


def test_nothing_is_traced_unless_configured(make_agent, server, monkeypatch):
    for name in ("LANGSMITH_TRACING", "LANGCHAIN_TRACING_V2", "LANGFUSE_TRACING"):
        monkeypatch.delenv(name, raising=False)
    assert enabled_providers() == []
    before = len(server.requests)
    run_traced(make_agent, "quiet-1")
    assert len(server.requests) == before


def test_a_provider_switched_on_without_keys_refuses_the_run(make_agent, monkeypatch):
    monkeypatch.setenv("LANGFUSE_TRACING", "true")
    monkeypatch.delenv("LANGFUSE_PUBLIC_KEY", raising=False)
    monkeypatch.setenv("LANGFUSE_SECRET_KEY", "sk-test")
    agent = make_agent(["never"], persistence="memory")
    thread = agent.thread()
    with pytest.raises(ConfigError, match="LANGFUSE_PUBLIC_KEY"):
        thread.chat("Hi")
    # refused before a run was stored
    assert agent.runtime.loop.run(agent.runtime.runs.list_by_thread(thread.id, "default")) == []


@pytest.fixture
def langsmith_env(server) -> Iterator[None]:
    """LangSmith switched on, and off again for the rest of the session.

    ``langsmith`` caches what it read of the environment: LangChain would otherwise keep
    tracing every later run of this process (to a server that is gone).
    """
    from langsmith import utils

    values = {"LANGSMITH_TRACING": "true", "LANGSMITH_API_KEY": "ls-test-key", "LANGSMITH_ENDPOINT": server.url,
              "LANGSMITH_PROJECT": "deerflow-tests", "DEER_FLOW_ENV": "ci"}
    utils.get_env_var.cache_clear()
    os.environ.update(values)
    try:
        yield
    finally:
        for name in values:
            os.environ.pop(name, None)
        utils.get_env_var.cache_clear()
        utils.get_tracer_project.cache_clear()
    assert not utils.tracing_is_enabled()  # later tests' runs are not traced


def test_langsmith_trace_has_the_thread_as_session_and_the_subagent_nested(make_agent, server, langsmith_env):
    thread, run = run_traced(make_agent, "req-langsmith-1")

    runs = langsmith_runs(server)
    roots = [r for r in runs.values() if not r.get("parent_run_id")]
    (root,) = [r for r in roots if r["extra"]["metadata"].get("run_id") == run.run_id]
    meta = root["extra"]["metadata"]
    assert root["name"] == "lead_agent"
    assert meta["session_id"] == thread.id and meta["thread_id"] == thread.id
    assert meta["user_id"] == "ada"
    assert meta["deerflow_trace_id"] == "req-langsmith-1"
    assert "env:ci" in root["tags"] and any(tag.startswith("model:") for tag in root["tags"])
    assert root.get("session_name") == "deerflow-tests"
    # the subagent's graph is a run inside the same trace, below the ``task`` tool call
    (subagent,) = [r for r in runs.values() if r.get("name") == "subagent:general-purpose"]
    assert subagent["trace_id"] == root["id"]
    (task,) = [r for r in runs.values() if r.get("name") == "task" and r.get("run_type") == "tool"]
    assert subagent["parent_run_id"] == task["id"]
    assert subagent["dotted_order"].startswith(task["dotted_order"])
    assert any(r.get("run_type") == "llm" and r.get("parent_run_id") and
               r["dotted_order"].startswith(subagent["dotted_order"]) for r in runs.values())
    with server.lock:
        keys = {h.get("x-api-key") for m, p, h, _ in server.requests
                if p.endswith("/runs/batch")}
    assert keys == {"ls-test-key"}


def test_langfuse_trace_has_session_user_name_tags_and_the_subagent_nested(make_agent, server, monkeypatch):
    monkeypatch.setenv("LANGFUSE_TRACING", "true")
    monkeypatch.setenv("LANGFUSE_PUBLIC_KEY", "pk-lf-test")
    monkeypatch.setenv("LANGFUSE_SECRET_KEY", "sk-lf-test")
    monkeypatch.setenv("LANGFUSE_BASE_URL", server.url)
    trace_id = "0af7651916cd43dd8448eb211c80319c"  # 32 hex digits: also the Langfuse trace's id
    thread, run = run_traced(make_agent, trace_id)

    spans = otlp_spans(server, "/api/public/otel/v1/traces")
    mine = [s for s in spans if s.trace_id.hex() == trace_id]
    assert mine, f"no span of trace {trace_id} among {len(spans)}"
    by_id = {s.span_id: s for s in mine}
    (root,) = [s for s in mine if s.parent_span_id not in by_id]  # below the trace id's (remote) parent
    root_attrs = attrs(root)
    assert root_attrs["session.id"] == thread.id
    assert root_attrs["user.id"] == "ada"
    assert root_attrs["langfuse.trace.name"] == "lead_agent"
    assert any(tag.startswith("model:") for tag in root_attrs["langfuse.trace.tags"])
    assert json.loads(root_attrs["langfuse.trace.metadata.run_id"]) == run.run_id
    assert json.loads(root_attrs["langfuse.trace.metadata.deerflow_trace_id"]) == trace_id
    (subagent,) = [s for s in mine if s.name == "subagent:general-purpose"]
    (task,) = [s for s in mine if s.name == "task"]
    assert subagent.parent_span_id == task.span_id
    ancestor = by_id[task.parent_span_id]
    while ancestor.parent_span_id in by_id:
        ancestor = by_id[ancestor.parent_span_id]
    assert ancestor.span_id == root.span_id
    with server.lock:
        auth = {h.get("authorization") for m, p, h, _ in server.requests if p.endswith("/otel/v1/traces")}
    assert auth and all(a and a.startswith("Basic ") for a in auth)
