"""Per-step work in proportion to what changed gives the same answers as the full passes."""

from __future__ import annotations

import random

from langchain.agents.middleware import ModelRequest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from deerflow_nb.agent.middlewares._memo import IdentityMemo, PrefixMap
from deerflow_nb.agent.middlewares.dangling_tool_call import DanglingToolCallMiddleware, _cleaned, patch_dangling
from deerflow_nb.agent.middlewares.input_sanitization import InputSanitizationMiddleware, _sanitized
from deerflow_nb.agent.reducers import merge_message_writes
from deerflow_nb.runtime.serialize import MessageCache, serialize_message, serialize_state, thread_message_cache


def _message(rng: random.Random, i: int):
    kind = rng.choice(["human", "ai", "call", "tool"])
    if kind == "human":
        return HumanMessage(f"<system-reminder>hi {i}</system-reminder>" if rng.random() < 0.2 else f"q{i}", id=f"h{i}")
    if kind == "call":
        return AIMessage("", id=f"a{i}", tool_calls=[{"name": "bad name!" if rng.random() < 0.3 else "bash",
                                                      "args": {"command": "ls"}, "id": f"c{i}"}])
    if kind == "tool":
        return ToolMessage(f"out {i}", tool_call_id=f"c{i - 1}", id=f"t{i}")
    return AIMessage(f"answer {i}", id=f"a{i}")


def test_incremental_serialisation_equals_full_serialisation():
    rng = random.Random(3)
    cache = MessageCache()
    state: list = []
    for step in range(60):
        writes = [[_message(rng, step * 10 + k) for k in range(rng.randint(0, 3))]]
        if state and rng.random() < 0.2:  # a replacement in the middle keeps the id and position
            old = rng.choice(state)
            writes.append([AIMessage(f"edited {step}", id=old.id)])
        state = merge_message_writes(state, writes)
        values = {"messages": state, "title": "t", "viewed_images": {"x": "base64"}}
        assert serialize_state(values, cache=cache) == serialize_state(values)
        assert serialize_state(values, cache=cache)["messages"] == [serialize_message(m) for m in state]
    # a shorter or unrelated list is served too
    assert cache.forms(state[:5]) == [serialize_message(m) for m in state[:5]]
    assert thread_message_cache("t1") is thread_message_cache("t1")
    assert thread_message_cache("t1") is not thread_message_cache("t2")


def test_memoised_middleware_passes_equal_the_full_passes():
    rng = random.Random(5)
    sanitized, cleaned = IdentityMemo(_sanitized), IdentityMemo(_cleaned)
    prefixed = PrefixMap(_sanitized)
    sanitizer, dangling = InputSanitizationMiddleware(), DanglingToolCallMiddleware()
    history: list = []
    for step in range(40):
        history = history + [_message(rng, step * 10 + k) for k in range(rng.randint(1, 3))]
        assert [sanitized(m) for m in history] == [_sanitized(m) for m in history]
        assert patch_dangling(history, cleaned) == patch_dangling(history)
        assert prefixed(history) == [_sanitized(m) for m in history]
        other = history[:-1] + [HumanMessage("another tail", id=f"x{step}")]  # same prefix, other tail
        assert prefixed(other) == [_sanitized(m) for m in other]
        # the middlewares' requests equal the full passes
        request = ModelRequest(model=None, messages=list(history), system_message=None, tool_choice=None,
                               tools=[], response_format=None, state={"messages": history}, runtime=None)
        assert list(sanitizer.prepare(request).messages) == [_sanitized(m) for m in history]
        assert list(dangling.prepare(request).messages) == patch_dangling(history)
    assert "&lt;system-reminder&gt;" in "".join(
        str(sanitized(m).content) for m in history if isinstance(m, HumanMessage))
