"""OpenTelemetry spans of real runs, captured with the SDK's in-memory exporter."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import yaml
from opentelemetry.trace import StatusCode
from pydantic import ValidationError

import deerflow_nb as df
from deerflow_nb.config import AppConfig
from deerflow_nb.testing import ScriptedChatModel
from deerflow_nb.tracing import otel_tracer
from tests.tracing.fakes import FakeTracingServer, attrs, delegating_router, otlp_spans


def by_name(finished, name):
    return [s for s in finished if s.name == name]


def test_no_spans_without_a_tracer_provider(make_agent):
    assert otel_tracer() is None  # the test process sets no global provider
    agent = make_agent(["Hello"], persistence="memory")
    assert agent.thread().chat("Hi") == "Hello"


def test_a_run_has_model_tool_and_subagent_spans_below_it(make_agent, spans):
    agent = make_agent(model=ScriptedChatModel(responses=[delegating_router] * 4), subagents=True, persistence="memory",
                       user_id="ada")
    thread = agent.thread()
    run = thread.start("How many apples?")
    assert run.wait() == "There are 3 apples."
    finished = spans.get_finished_spans()

    (root,) = by_name(finished, "deerflow.run")
    assert root.parent is None
    assert root.attributes["deerflow.thread_id"] == thread.id
    assert root.attributes["deerflow.run_id"] == run.run_id
    assert root.attributes["deerflow.user_id"] == "ada"
    assert root.attributes["deerflow.run.status"] == "success"
    assert root.status.status_code is StatusCode.OK
    trace_id = root.attributes["deerflow.trace_id"]
    assert len(trace_id) == 32  # generated: no request bound one

    models = by_name(finished, "deerflow.model_call")
    tools = by_name(finished, "deerflow.tool_call")
    (subagent,) = by_name(finished, "deerflow.subagent")
    (task,) = [t for t in tools if t.attributes["gen_ai.tool.name"] == "task"]
    assert task.parent.span_id == root.context.span_id
    assert task.attributes["gen_ai.tool.call.id"]
    # the subagent's graph hangs below the task call, and its model call below the subagent
    assert subagent.parent.span_id == task.context.span_id
    assert subagent.attributes["deerflow.subagent.type"] == "general-purpose"
    below_subagent = [m for m in models if m.parent.span_id == subagent.context.span_id]
    below_root = [m for m in models if m.parent.span_id == root.context.span_id]
    assert len(below_subagent) == 1 and len(below_root) == 2
    assert all(m.attributes["gen_ai.request.model"] for m in models)
    assert all(s.context.trace_id == root.context.trace_id for s in finished)
    # the journal's run_end carries the same trace id
    entries = agent.runtime.loop.run(agent.runtime.run_events(thread.id, run.run_id, event_type="run_end"))
    assert entries[-1]["payload"]["trace_id"] == trace_id


def test_a_failed_run_has_an_error_status(make_agent, spans):
    agent = make_agent(model=ScriptedChatModel(responses=["never"], error_at=1, max_retries=0),
                       persistence="memory")
    thread = agent.thread()
    with pytest.raises(df.RunError):
        thread.chat("Hi")
    (root,) = by_name(spans.get_finished_spans(), "deerflow.run")
    assert root.attributes["deerflow.run.status"] == "error"
    assert root.status.status_code is StatusCode.ERROR
    assert "RuntimeError" in (root.status.description or "")
    (model,) = by_name(spans.get_finished_spans(), "deerflow.model_call")
    assert model.status.status_code is StatusCode.ERROR
    assert model.parent.span_id == root.context.span_id


CONFIGURED_RUN = """
import sys
import deerflow_nb as df
from deerflow_nb.testing import ScriptedChatModel

agent = df.DeerFlow(sys.argv[1], model=ScriptedChatModel(responses=["Hello"]), persistence="memory")
assert agent.thread().chat("Hi") == "Hello"
agent.close()
"""


def test_tracing_otel_enabled_installs_a_batching_otlp_exporter(tmp_path, home):
    # A process-global tracer provider can be set once per process: a child process owns this one.
    server = FakeTracingServer()
    try:
        config = tmp_path / "config.yaml"
        config.write_text(yaml.safe_dump({"memory": {"enabled": False}, "tracing": {"otel": {
            "enabled": True, "endpoint": f"{server.url}/v1/traces", "service_name": "nb-tests"}}}))
        env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
        subprocess.run([sys.executable, "-c", CONFIGURED_RUN, str(config)], env=env, check=True, timeout=300,
                       capture_output=True)
        spans = otlp_spans(server, "/v1/traces")  # exported at exit (the batch processor's flush)
    finally:
        server.close()
    names = [s.name for s in spans]
    assert names.count("deerflow.run") == 1 and "deerflow.model_call" in names
    (root,) = [s for s in spans if s.name == "deerflow.run"]
    assert attrs(root)["deerflow.run.status"] == "success"


def test_tracing_otel_keys_are_checked():
    with pytest.raises(ValidationError, match="tracing.otel.enabeld"):
        AppConfig.model_validate({"tracing": {"otel": {"enabeld": True}}})


def test_a_failed_tool_call_has_an_error_status_and_model_calls_their_usage(make_agent, spans):
    missing = {"content": "", "tool_calls": [{"name": "read_file", "args": {
        "description": "read", "path": "/mnt/user-data/workspace/missing.txt"}}]}
    agent = make_agent([missing, "It is missing."], persistence="memory")
    assert agent.thread().chat("Read missing.txt") == "It is missing."
    finished = spans.get_finished_spans()
    (tool,) = by_name(finished, "deerflow.tool_call")
    assert tool.attributes["gen_ai.tool.name"] == "read_file"
    assert tool.status.status_code is StatusCode.ERROR
    (root,) = by_name(finished, "deerflow.run")
    assert root.status.status_code is StatusCode.OK  # the model saw the failure and answered
    models = by_name(finished, "deerflow.model_call")
    assert len(models) == 2 and all(m.attributes["gen_ai.usage.input_tokens"] > 0 for m in models)
