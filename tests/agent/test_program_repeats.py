"""A repair that writes a failed program again, word for word, is written afresh (both hooks)."""

from __future__ import annotations

import asyncio

import pytest
from langchain.agents.middleware import ModelRequest, ModelResponse
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.runtime import Runtime

from deerflow_nb.agent.middlewares.program_answer import ProgramAnswerMiddleware
from deerflow_nb.context import RunContext
from deerflow_nb.testing import ScriptedChatModel
from deerflow_nb.tools.python_tool import PROGRAM_KEY

BROKEN = "import pandas as pd\nprint(undefined_name)\n"
FIXED = "import pandas as pd\nprint('rows:', 3)\n"


@tool("python")
def python(code: str) -> str:
    """Run a program."""
    return code


def _request() -> ModelRequest:
    messages = [HumanMessage("How many rows are in /mnt/user-data/uploads/s.csv?"),
                AIMessage("", tool_calls=[{"name": "python", "args": {"code": BROKEN}, "id": "call_1"}]),
                ToolMessage("NameError: name 'undefined_name' is not defined", tool_call_id="call_1", name="python",
                            status="error", additional_kwargs={PROGRAM_KEY: {
                                "exit_code": 1, "stdout": "", "stderr": "NameError: name 'undefined_name' is not defined",
                                "code": BROKEN}})]
    return ModelRequest(model=ScriptedChatModel(responses=[]), messages=messages, system_message=SystemMessage("s"),
                        tools=[python], state={"messages": messages}, runtime=Runtime(context=RunContext()))


def _program(code: str) -> ModelResponse:
    return ModelResponse(result=[AIMessage("", tool_calls=[{"name": "python", "args": {"code": code}, "id": "c"}])])


@pytest.mark.parametrize("hook", ["sync", "async"])
def test_a_repair_that_repeats_the_failed_program_is_written_afresh(hook):
    seen: list[ModelRequest] = []

    def handler(request: ModelRequest) -> ModelResponse:
        seen.append(request)
        return _program(BROKEN if len(seen) == 1 else FIXED)

    async def ahandler(request: ModelRequest) -> ModelResponse:
        return handler(request)

    middleware = ProgramAnswerMiddleware()
    result = (middleware.wrap_model_call(_request(), handler) if hook == "sync"
              else asyncio.run(middleware.awrap_model_call(_request(), ahandler)))
    assert isinstance(result, ModelResponse)
    assert result.result[-1].tool_calls[0]["args"]["code"] == FIXED
    assert len(seen) == 2
    assert any(isinstance(m, ToolMessage) for m in seen[0].messages)  # the repair saw the error
    assert not any(isinstance(m, ToolMessage | AIMessage) for m in seen[1].messages)  # the fresh one no program


def test_a_repair_that_changes_the_program_is_kept():
    seen: list[ModelRequest] = []

    def handler(request: ModelRequest) -> ModelResponse:
        seen.append(request)
        return _program(FIXED)

    result = ProgramAnswerMiddleware().wrap_model_call(_request(), handler)
    assert isinstance(result, ModelResponse) and result.result[-1].tool_calls[0]["args"]["code"] == FIXED
    assert len(seen) == 1
