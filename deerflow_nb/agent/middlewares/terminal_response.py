"""Recover from an empty final answer after tool execution."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from deerflow_nb.agent.middlewares._base import last_ai
from deerflow_nb.agent.middlewares.llm_error_handling import ERROR_FLAG

__all__ = ["RECOVERY_PROMPT", "TerminalResponseMiddleware", "is_empty_terminal"]

RECOVERY_PROMPT = (
    "Your last reply was empty. Using the tool results above, write your final answer to the user now."
)


def is_empty_terminal(message: AIMessage | None) -> bool:
    """An answer with no text and no tool calls."""
    if message is None or message.tool_calls:
        return False
    content = message.content
    if isinstance(content, list):
        content = "".join(b.get("text", "") if isinstance(b, dict) else str(b) for b in content)
    return not str(content).strip()


def _after_tools(request: ModelRequest) -> bool:
    return bool(request.messages) and isinstance(request.messages[-1], ToolMessage)


def _retry_request(request: ModelRequest) -> ModelRequest:
    hint = HumanMessage(content=RECOVERY_PROMPT, additional_kwargs={"deerflow_internal": True, "hide_from_ui": True})
    return request.override(messages=[*request.messages, hint])


def _fallback() -> ModelResponse:
    message = AIMessage(
        content="The model returned an empty answer twice after using its tools, so the run stopped.",
        additional_kwargs={ERROR_FLAG: True, "deerflow_error": {"type": "EmptyTerminalResponse"}},
    )
    return ModelResponse(result=[message])


class TerminalResponseMiddleware(AgentMiddleware):
    """Retries once with a hidden recovery prompt; a second empty answer becomes a visible error."""

    def wrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> ModelResponse:
        """Call the model, retrying an empty post-tool answer once."""
        response = handler(request)
        if not (_after_tools(request) and is_empty_terminal(last_ai(response))):
            return response
        retry = handler(_retry_request(request))
        return _fallback() if is_empty_terminal(last_ai(retry)) else retry

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> ModelResponse:
        """Async twin of :meth:`wrap_model_call`."""
        response = await handler(request)
        if not (_after_tools(request) and is_empty_terminal(last_ai(response))):
            return response
        retry = await handler(_retry_request(request))
        return _fallback() if is_empty_terminal(last_ai(retry)) else retry
