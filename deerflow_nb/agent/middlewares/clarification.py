"""Intercept ``ask_clarification``: the tool never runs; the run pauses for human input."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import ToolMessage

from deerflow_nb.agent.human_input import build_human_input_request, format_request_text

__all__ = ["CLARIFICATION_TOOL", "ClarificationMiddleware", "clarification_message"]

CLARIFICATION_TOOL = "ask_clarification"


def clarification_message(tool_call: dict[str, Any]) -> ToolMessage:
    """The ``ToolMessage`` that ends the run: readable text plus ``artifact.human_input``."""
    from deerflow_nb.tools.meta import normalize_tool_result

    request = build_human_input_request(tool_call.get("args") or {}, tool_call["id"])
    message = ToolMessage(
        content=format_request_text(request),
        tool_call_id=tool_call["id"],
        name=CLARIFICATION_TOOL,
        artifact={"human_input": request},
    )
    return normalize_tool_result(message, status="success", source="builtin")


class ClarificationMiddleware(AgentMiddleware):
    """Must be last in the chain.

    The ``ask_clarification`` tool is bound with ``return_direct=True``, so the graph
    ends after this message and the thread waits for ``respond()``.
    """

    def wrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        """Short-circuit ``ask_clarification``; pass other tools through."""
        if request.tool_call["name"] == CLARIFICATION_TOOL:
            return clarification_message(request.tool_call)
        return handler(request)

    async def awrap_tool_call(self, request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        """Async twin of :meth:`wrap_tool_call`."""
        if request.tool_call["name"] == CLARIFICATION_TOOL:
            return clarification_message(request.tool_call)
        return await handler(request)
