from __future__ import annotations

import functools
import json
import operator
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage
from langchain_core.tools import tool
from pydantic import ValidationError

from deerflow_nb.config import load_config
from deerflow_nb.models import create_chat_model
from deerflow_nb.testing import RecordingChatModel, ReplayChatModel, ScriptedChatModel

SCRIPT: list[Any] = [
    {"content": "Let me look.", "tool_calls": [{"name": "ls", "args": {"path": "/mnt/user-data"}}]},
    "There are  two files.\n",
]


def fingerprint(message: AIMessage) -> tuple[Any, ...]:
    return (
        message.content,
        [(c["name"], c["args"], c["id"]) for c in message.tool_calls],
        message.usage_metadata,
        message.response_metadata,
    )


def record(path: Path, *, stream: bool = False) -> list[AIMessage]:
    recorder = RecordingChatModel(inner=ScriptedChatModel(responses=SCRIPT), path=str(path))
    if stream:
        return [_collect(recorder.stream(prompt)) for prompt in ("one", "two")]
    return [recorder.invoke(prompt) for prompt in ("one", "two")]


def _collect(chunks: Any) -> AIMessage:
    merged: AIMessageChunk = functools.reduce(operator.add, chunks)
    return AIMessage(
        content=merged.content,
        tool_calls=merged.tool_calls,
        usage_metadata=merged.usage_metadata,
        response_metadata=merged.response_metadata,
    )


def test_record_then_replay_gives_identical_messages(tmp_path: Path) -> None:
    path = tmp_path / "rec.jsonl"
    original = record(path)
    assert len(path.read_text(encoding="utf-8").splitlines()) == 2
    replay = ReplayChatModel(path=str(path))
    replayed = [replay.invoke("a"), replay.invoke("b")]
    assert [fingerprint(m) for m in replayed] == [fingerprint(m) for m in original]
    assert replayed[0].id != original[0].id  # fresh ids: replays never overwrite each other in a thread
    assert [[m.text for m in call] for call in replay.calls] == [["a"], ["b"]]


def test_streamed_recording_replays_identically_when_streamed(tmp_path: Path) -> None:
    path = tmp_path / "stream.jsonl"
    original = record(path, stream=True)
    replay = ReplayChatModel(path=str(path))
    replayed = [_collect(replay.stream("a")), _collect(replay.stream("b"))]
    assert [fingerprint(m) for m in replayed] == [fingerprint(m) for m in original]
    assert replayed[1].content == "There are  two files.\n"


@pytest.mark.asyncio
async def test_async_record_and_replay(tmp_path: Path) -> None:
    path = tmp_path / "async.jsonl"
    recorder = RecordingChatModel(inner=ScriptedChatModel(responses=SCRIPT), path=str(path))
    first = await recorder.ainvoke("one")
    second = _collect([c async for c in recorder.astream("two")])
    replay = ReplayChatModel(path=str(path))
    assert fingerprint(await replay.ainvoke("x")) == fingerprint(first)
    assert fingerprint(_collect([c async for c in replay.astream("y")])) == fingerprint(second)


def test_recording_an_agent_loop_then_replaying_it(tmp_path: Path) -> None:
    listed: list[str] = []

    @tool
    def ls(path: str) -> str:
        """List a directory."""
        listed.append(path)
        return "a.csv\nb.csv"

    path = tmp_path / "agent.jsonl"
    recorder = RecordingChatModel(inner=ScriptedChatModel(responses=SCRIPT), path=str(path))
    live = create_agent(recorder, tools=[ls]).invoke({"messages": [HumanMessage("what is there?")]})
    replayed = create_agent(ReplayChatModel(path=str(path)), tools=[ls]).invoke(
        {"messages": [HumanMessage("what is there?")]}
    )
    assert listed == ["/mnt/user-data", "/mnt/user-data"]
    assert [m.text for m in replayed["messages"]] == [m.text for m in live["messages"]]
    assert replayed["messages"][-1].content == "There are  two files.\n"


def test_recording_passes_bound_tools_to_inner(tmp_path: Path) -> None:
    @tool
    def ping(host: str) -> str:
        """Ping a host."""
        return host

    seen: list[dict[str, Any]] = []

    class SpyChat(ScriptedChatModel):
        def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> Any:
            seen.append(kwargs)
            return super()._generate(messages, stop, run_manager, **kwargs)

    recorder = RecordingChatModel(inner=SpyChat(responses=["pong"]), path=str(tmp_path / "r.jsonl"))
    assert recorder.bind_tools([ping]).invoke("x").content == "pong"
    assert seen[0]["tools"][0]["function"]["name"] == "ping"


def test_exhausted_replay_raises_or_echoes(tmp_path: Path) -> None:
    path = tmp_path / "one.jsonl"
    RecordingChatModel(inner=ScriptedChatModel(responses=["only"]), path=str(path)).invoke("x")
    strict = ReplayChatModel(path=str(path))
    strict.invoke("x")
    with pytest.raises(RuntimeError, match="on_exhausted='echo'"):
        strict.invoke("y")
    lenient = ReplayChatModel(path=str(path), on_exhausted="echo")
    lenient.invoke("x")
    assert lenient.invoke("hello again").content == "Echo: hello again"


def test_missing_recording_fails_at_construction(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="recording not found"):
        ReplayChatModel(path=str(tmp_path / "nope.jsonl"))


def test_relative_paths_resolve_against_cwd() -> None:
    recorder = RecordingChatModel(inner=ScriptedChatModel(responses=["hi"]), path="rec/here.jsonl")
    recorder.invoke("x")
    assert Path(recorder.path) == Path.cwd() / "rec" / "here.jsonl"
    assert ReplayChatModel(path="rec/here.jsonl").invoke("y").content == "hi"


def test_invalid_line_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"content": "ok"}\n\n{not json\n', encoding="utf-8")
    model = ReplayChatModel(path=str(path))
    with pytest.raises(ValueError, match=r"bad\.jsonl:3: invalid JSON"):
        model.invoke("x")


def test_new_recording_overwrites_unless_append(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps({"content": "old"}) + "\n", encoding="utf-8")
    RecordingChatModel(inner=ScriptedChatModel(responses=["new"]), path=str(path)).invoke("x")
    assert [json.loads(line)["content"] for line in path.read_text().splitlines()] == ["new"]
    RecordingChatModel(inner=ScriptedChatModel(responses=["more"]), path=str(path), append=True).invoke("x")
    assert [json.loads(line)["content"] for line in path.read_text().splitlines()] == ["new", "more"]
    assert not list(tmp_path.glob("*.tmp"))


def test_scripted_from_replay(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    original = record(path)
    scripted = ScriptedChatModel.from_replay(path)
    assert [fingerprint(scripted.invoke(p)) for p in ("a", "b")] == [fingerprint(m) for m in original]


def test_replay_usable_from_config_yaml(tmp_path: Path) -> None:
    record(Path.cwd() / "rec.jsonl")
    config_path = tmp_path / "config.yaml"
    config_path.write_text(
        "models:\n  - name: replay\n    use: deerflow_nb.testing:ReplayChatModel\n    path: rec.jsonl\n",
        encoding="utf-8",
    )
    model = create_chat_model(config=load_config(config_path))
    assert isinstance(model, ReplayChatModel)
    assert model.invoke("x").tool_calls[0]["name"] == "ls"
