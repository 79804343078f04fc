"""Built-in custom events reach both LangGraph channels: the ``custom`` stream and ``astream_events`` v2."""

from __future__ import annotations

from typing import TypedDict

import openai
import pytest
from langgraph.graph import END, START, StateGraph

from deerflow_nb.agent.middlewares.model_retry import ModelRetryMiddleware
from deerflow_nb.testing import provider_error
from deerflow_nb.utils.custom_events import aemit_custom_event, emit_custom_event


class _State(TypedDict, total=False):
    n: int


def _graph(node):
    builder = StateGraph(_State)
    builder.add_node("work", node)
    builder.add_edge(START, "work")
    builder.add_edge("work", END)
    return builder.compile()


def _announce(_state: _State) -> _State:
    # the real emitter: a retry announcement from sync code, as the model-retry middleware makes it
    error = provider_error("rate_limit")
    assert isinstance(error, openai.RateLimitError)
    ModelRetryMiddleware(max_retries=2)._announce(error, 0, 0.5)
    emit_custom_event({"no_type": True})  # typeless: writer only
    emit_custom_event({"type": "__plumbing__"})  # stream plumbing: writer only
    return {"n": 1}


async def _async_node(_state: _State) -> _State:
    await aemit_custom_event({"type": "task_started", "task_id": "t1"})
    return {"n": 2}


@pytest.mark.asyncio
@pytest.mark.parametrize(("node", "name"), [(_announce, "model_retry"), (_async_node, "task_started")])
async def test_each_typed_event_reaches_the_writer_and_on_custom_event_once(node, name):
    graph = _graph(node)
    custom = [chunk async for chunk in graph.astream({}, stream_mode="custom")]
    assert [c.get("type") for c in custom if isinstance(c, dict)][0] == name  # the writer path, first
    events = [e async for e in graph.astream_events({}, version="v2") if e["event"] == "on_custom_event"]
    assert [e["name"] for e in events] == [name]  # one each; typeless and plumbing payloads stay writer-only
    assert events[0]["data"]["type"] == name
    if name == "model_retry":
        assert events[0]["data"]["attempt"] == 1 and events[0]["data"]["stop_reason"] == "rate_limited"
        assert {"no_type": True} in custom and {"type": "__plumbing__"} in custom


def test_outside_a_run_emitting_does_nothing():
    emit_custom_event({"type": "model_retry"})  # no writer, no parent run: no error
    seen = []
    emit_custom_event({"type": "x"}, seen.append)
    assert seen == [{"type": "x"}]
