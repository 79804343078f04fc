from __future__ import annotations

import functools
import operator
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from pydantic import ValidationError

import deerflow_nb.testing as testing_pkg
from deerflow_nb.config import load_config
from deerflow_nb.models import create_chat_model
from deerflow_nb.testing import ScriptedChatModel
from deerflow_nb.testing.base import split_words

WRITE: dict[str, Any] = {
    "name": "write_file",
    "args": {"path": "/mnt/user-data/outputs/a.txt", "content": "hello  world"},
}


def aggregate(chunks: list[AIMessageChunk]) -> AIMessageChunk:
    return functools.reduce(operator.add, chunks)


def test_public_exports_are_pinned() -> None:
    assert testing_pkg.__all__ == ["RecordingChatModel", "ReplayChatModel", "ScriptedChatModel", "provider_error"]
    assert testing_pkg.__test__ is False


@pytest.mark.parametrize("text", ["", "one", "  lead and trail  ", "a\n\nb\tc ", "mixed   spacing here"])
def test_split_words_round_trips(text: str) -> None:
    assert "".join(split_words(text)) == text


def test_invoke_returns_text_with_usage_and_metadata() -> None:
    model = ScriptedChatModel(responses=["The answer is 42."])
    message = model.invoke("what is the answer")
    assert isinstance(message, AIMessage)
    assert message.content == "The answer is 42."
    assert message.usage_metadata == {"input_tokens": 4, "output_tokens": 4, "total_tokens": 8}
    assert message.response_metadata["finish_reason"] == "stop"
    assert message.response_metadata["model_name"] == "scripted"
    assert message.id is not None and message.id.startswith("run-scripted-")


def test_tool_call_entries_get_deterministic_ids() -> None:
    model = ScriptedChatModel(
        responses=[
            {"content": "writing", "tool_calls": [WRITE, {"name": "ls", "args": {}}]},
            {"tool_calls": [{"name": "bash", "args": {"command": "ls"}, "id": "mine"}, {"name": "ls"}]},
        ]
    )
    first = model.invoke("go")
    second = model.invoke("again")
    assert [c["id"] for c in first.tool_calls] == ["call_1", "call_2"]
    assert [c["id"] for c in second.tool_calls] == ["mine", "call_3"]
    assert first.tool_calls[0]["args"] == WRITE["args"]
    assert first.response_metadata["finish_reason"] == "tool_calls"
    assert first.id != second.id


def test_aimessage_and_callable_entries() -> None:
    def shout(messages: list[BaseMessage]) -> str:
        return messages[-1].text.upper()

    model = ScriptedChatModel(responses=[AIMessage(content="as given", id="fixed-id"), shout])
    first = model.invoke("x")
    assert (first.content, first.id) == ("as given", "fixed-id")
    assert model.invoke("make me loud").content == "MAKE ME LOUD"


def test_exhausted_script_echoes_last_human_text() -> None:
    model = ScriptedChatModel(responses=["only one"])
    model.invoke("first")
    assert model.remaining == 0
    reply = model.invoke([HumanMessage("older"), AIMessage("x"), HumanMessage("latest question")])
    assert reply.content == "Echo: latest question"


def test_calls_record_inputs() -> None:
    model = ScriptedChatModel(responses=["a", "b"])
    model.invoke("one")
    model.invoke([HumanMessage("two"), AIMessage("mid"), HumanMessage("three")])
    assert [[m.text for m in call] for call in model.calls] == [["one"], ["two", "mid", "three"]]


def test_stream_concatenates_to_exact_text_with_one_id() -> None:
    text = "  Streaming keeps\n\nall   the whitespace.  "
    model = ScriptedChatModel(responses=[text])
    chunks = list(model.stream("hi"))
    assert len(chunks) > 3
    assert "".join(c.text for c in chunks) == text
    assert len({c.id for c in chunks}) == 1
    merged = aggregate(chunks)
    assert merged.content == text
    assert merged.usage_metadata is not None and merged.usage_metadata["output_tokens"] == 5
    assert merged.response_metadata == {"finish_reason": "stop", "model_name": "scripted"}


def test_stream_tool_call_chunks_aggregate_to_tool_calls() -> None:
    model = ScriptedChatModel(
        responses=[{"content": "ok", "tool_calls": [WRITE, {"name": "ls", "args": {"p": 1}}]}]
    )
    chunks = list(model.stream("go"))
    with_calls = [c for c in chunks if c.tool_call_chunks]
    assert [c.tool_call_chunks[0]["index"] for c in with_calls] == [0, 1]
    merged = aggregate(chunks)
    assert [(c["name"], c["args"], c["id"]) for c in merged.tool_calls] == [
        ("write_file", WRITE["args"], "call_1"),
        ("ls", {"p": 1}, "call_2"),
    ]
    assert merged.response_metadata["finish_reason"] == "tool_calls"


@pytest.mark.asyncio
async def test_async_invoke_and_stream() -> None:
    model = ScriptedChatModel(responses=["async one", "async two words"])
    assert (await model.ainvoke("a")).content == "async one"
    chunks = [c async for c in model.astream("b")]
    assert aggregate(chunks).content == "async two words"
    assert len(model.calls) == 2


def test_bind_tools_shares_the_script_and_calls() -> None:
    @tool
    def ping(host: str) -> str:
        """Ping a host."""
        return host

    model = ScriptedChatModel(responses=["first", "second"])
    bound = model.bind_tools([ping])
    assert bound.invoke("via binding").content == "first"
    assert model.invoke("direct").content == "second"
    assert len(model.calls) == 2
    assert model.model_copy(deep=True).calls is model.calls


def test_error_at_raises_without_consuming_an_entry() -> None:
    model = ScriptedChatModel(responses=["a", "b"], error_at=2, error_message="provider down")
    assert model.invoke("1").content == "a"
    with pytest.raises(RuntimeError, match=r"provider down \(call 2\)"):
        model.invoke("2")
    assert model.invoke("3").content == "b"
    assert len(model.calls) == 3


def test_latency_sleeps_per_chunk(monkeypatch: pytest.MonkeyPatch) -> None:
    slept: list[float] = []
    monkeypatch.setattr("deerflow_nb.testing.base.time.sleep", slept.append)
    model = ScriptedChatModel(responses=["three word answer"], latency=0.01)
    chunks = list(model.stream("x"))
    assert slept == [0.01] * len(chunks)


@pytest.mark.asyncio
async def test_async_latency_uses_asyncio_sleep(monkeypatch: pytest.MonkeyPatch) -> None:
    slept: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        slept.append(seconds)

    monkeypatch.setattr("deerflow_nb.testing.base.asyncio.sleep", fake_sleep)
    await ScriptedChatModel(responses=["x"], latency=0.5).ainvoke("x")
    assert slept == [0.5]


@pytest.mark.parametrize(
    ("bad", "fragment"),
    [
        (42, "responses[1] must be a string"),
        ({"content": "x", "toolcalls": []}, "responses[1]: unknown key"),
        ({"tool_calls": [{"args": {}}]}, "responses[1].tool_calls[0].name"),
        ({"tool_calls": [{"name": "x", "args": "nope"}]}, "responses[1].tool_calls[0].args"),
    ],
)
def test_invalid_entries_fail_at_construction(bad: Any, fragment: str) -> None:
    with pytest.raises(ValidationError) as info:
        ScriptedChatModel(responses=["fine", bad])
    assert fragment in str(info.value)


def test_usable_from_config_yaml(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(
        "models:\n"
        "  - name: scripted\n"
        "    use: deerflow_nb.testing:ScriptedChatModel\n"
        "    responses:\n"
        "      - content: ''\n"
        "        tool_calls: [{name: ls, args: {path: /mnt/user-data}}]\n"
        "      - Done.\n",
        encoding="utf-8",
    )
    model = create_chat_model("scripted", config=load_config(path))
    assert isinstance(model, ScriptedChatModel)
    assert model.invoke("x").tool_calls[0]["args"] == {"path": "/mnt/user-data"}
    assert model.invoke("y").content == "Done."


def test_drives_a_langchain_agent_loop() -> None:
    written: list[tuple[str, str]] = []

    @tool
    def write_file(path: str, content: str) -> str:
        """Write a file."""
        written.append((path, content))
        return f"wrote {path}"

    model = ScriptedChatModel(responses=[{"content": "", "tool_calls": [WRITE]}, "All done."])
    agent = create_agent(model, tools=[write_file])
    result = agent.invoke({"messages": [HumanMessage("please write a file")]})
    messages = result["messages"]
    assert written == [(WRITE["args"]["path"], WRITE["args"]["content"])]
    assert isinstance(messages[2], ToolMessage) and messages[2].tool_call_id == "call_1"
    assert messages[-1].content == "All done."
    # The second model call saw the tool result.
    assert isinstance(model.calls[1][-1], ToolMessage)


@pytest.mark.asyncio
async def test_agent_streams_tokens_in_messages_mode() -> None:
    model = ScriptedChatModel(responses=["streamed final answer"])
    agent = create_agent(model, tools=[])
    pieces = [
        chunk.text
        async for chunk, _meta in agent.astream({"messages": [HumanMessage("hi")]}, stream_mode="messages")
        if isinstance(chunk, AIMessageChunk)
    ]
    assert len(pieces) > 1
    assert "".join(pieces) == "streamed final answer"
