"""Program mode of the embedded model: a code tool's program written as a fenced block, prefilled and recovered."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool

from deerflow_nb.models.embedded import EmbeddedChatModel
from deerflow_nb.models.program_mode import PROGRAM_MAX_TOKENS, as_text_turns, split_program
from deerflow_nb.tools.python_tool import python_tool
from tests.models.test_embedded_model import ScriptClient

PREFIX = "import pandas as pd\ndf = pd.read_csv('/mnt/user-data/uploads/a.csv')"
FORCED = {"type": "function", "function": {"name": "python"}}


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def _model(*replies: str) -> tuple[EmbeddedChatModel, ScriptClient]:
    client = ScriptClient(replies=list(replies))
    return EmbeddedChatModel(client=client), client


@pytest.mark.parametrize("echoed", [True, False], ids=["server-echoes-prefill", "continuation-only"])
def test_a_forced_program_is_prefilled_stopped_at_the_fence_and_becomes_the_call(echoed: bool) -> None:
    body = "print(len(df))\n```\nSome chatter after the block."
    prefill = f"```python\n{PREFIX}\n"
    model, client = _model((prefill if echoed else "") + body)
    bound = model.bind_tools([python_tool()], tool_choice=FORCED, code_prefix=PREFIX)
    reply = bound.invoke([SystemMessage("sys"), HumanMessage("rows?")])
    assert reply.content == "" and len(reply.tool_calls) == 1
    assert reply.tool_calls[0]["name"] == "python"
    assert reply.tool_calls[0]["args"] == {"code": f"{PREFIX}\nprint(len(df))\n"}
    sent, kwargs = client.calls[0]
    assert isinstance(sent[-1], AIMessage) and sent[-1].content == prefill  # the prefill, as the last turn
    assert "tools" not in kwargs and "tool_choice" not in kwargs and "code_prefix" not in kwargs
    assert kwargs["max_tokens"] == PROGRAM_MAX_TOKENS
    assert "Tools:" not in sent[0].text  # no tool listing, no grammar in program mode
    assert "grammar" not in (kwargs.get("extra_body") or {})


def test_a_free_reply_may_be_text_or_a_fenced_program() -> None:
    model, client = _model("You're welcome!", "Sure:\n```python\nprint(2 + 2)\n```")
    bound = model.bind_tools([python_tool()])
    text = bound.invoke("thanks")
    assert text.content == "You're welcome!" and not text.tool_calls
    assert not isinstance(client.calls[0][0][-1], AIMessage)  # nothing prefilled
    program = bound.invoke("what is 2+2?")
    assert program.content == "Sure:" and program.tool_calls[0]["args"] == {"code": "print(2 + 2)\n"}


def test_streaming_holds_the_program_back_and_sums_to_the_invoke_message() -> None:
    model, _ = _model("Here it is.\n```python\nprint(1)\n```")
    chunks = list(model.bind_tools([python_tool()]).stream("one?"))
    shown = "".join(c.content for c in chunks)
    assert shown == "Here it is.\n" and "print" not in shown
    total = chunks[0]
    for chunk in chunks[1:]:
        total = total + chunk
    assert isinstance(total, AIMessageChunk) and total.tool_calls[0]["args"] == {"code": "print(1)\n"}
    assert chunks[-1].chunk_position == "last" and len({c.id for c in chunks}) == 1


def test_a_forced_stream_shows_nothing_and_carries_the_call() -> None:
    model, _ = _model("print(len(df))\n```")
    chunks = list(model.bind_tools([python_tool()], tool_choice=FORCED, code_prefix=PREFIX).stream("rows?"))
    assert "".join(c.content for c in chunks) == ""
    total = chunks[0]
    for chunk in chunks[1:]:
        total = total + chunk
    assert total.tool_calls[0]["args"] == {"code": f"{PREFIX}\nprint(len(df))\n"}


@pytest.mark.asyncio
async def test_async_paths_match_sync() -> None:
    model, _ = _model("print(1)\n```", "print(1)\n```")
    bound = model.bind_tools([python_tool()], tool_choice=FORCED)
    reply = await bound.ainvoke("x")
    chunks = [c async for c in bound.astream("x")]
    total = chunks[0]
    for chunk in chunks[1:]:
        total = total + chunk
    assert reply.tool_calls[0]["args"] == total.tool_calls[0]["args"] == {"code": "print(1)\n"}


def test_other_tools_keep_the_json_tool_call_modes() -> None:
    model, client = _model('{"name": "add", "arguments": {"a": 1, "b": 2}}')
    model.tool_mode = "grammar"
    reply = model.bind_tools([add, python_tool()]).invoke("1+2?")
    assert reply.tool_calls[0]["name"] == "add"
    assert "grammar" in client.calls[0][1]["extra_body"]


def test_history_shows_earlier_programs_as_blocks_and_results_as_user_turns() -> None:
    call = {"name": "python", "args": {"code": "print(1)\n"}, "id": "c1", "type": "tool_call"}
    history = [HumanMessage("q"), AIMessage("", tool_calls=[call]), ToolMessage("1", tool_call_id="c1", name="python"),
               AIMessage("", tool_calls=[{"name": "add", "args": {"a": 1, "b": 2}, "id": "c2", "type": "tool_call"}])]
    turns = as_text_turns(history, frozenset({"python"}))
    assert turns[1].content == "```python\nprint(1)\n```" and not turns[1].tool_calls
    assert isinstance(turns[2], HumanMessage) and turns[2].content == "Output of the program:\n1"
    assert turns[3] is history[3]  # another tool's call is left as it is


def test_split_program_finds_the_first_python_block() -> None:
    assert split_program("no code here") == ("no code here", None)
    assert split_program("a\n```py\nx = 1\n```\n```python\ny\n```") == ("a", "x = 1\n")
    assert split_program("```python\n\n```") == ("```python\n\n```", None)
    assert split_program("rest\n```", "```python\nimport x\n") == ("", "import x\nrest\n")


def test_a_program_that_repeats_itself_is_cut_short() -> None:
    loop = "".join(f"df['y'] = df['y'].astype(str)\ndf['y'] = df['y'].str.replace('{i % 3}', 'k')\n" for i in range(60))
    model, _ = _model(loop + "print(df)\n```")
    reply = model.bind_tools([python_tool()], tool_choice=FORCED).invoke("x")
    code = reply.tool_calls[0]["args"]["code"]
    assert 12 <= len(code.splitlines()) < 30 and "print(df)" not in code  # stopped soon after the loop began
