"""Tool exceptions become error ``ToolMessage``s; every result carries ``deerflow_tool_meta``."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import ToolMessage
from langgraph.errors import GraphBubbleUp
from langgraph.types import Command

from deerflow_nb.agent.middlewares._base import tool_error

__all__ = ["ToolErrorHandlingMiddleware", "stamp_result"]

logger = logging.getLogger(__name__)


def _stamp_message(message: Any, source: str) -> Any:
    from deerflow_nb.tools.meta import normalize_tool_result

    if not isinstance(message, ToolMessage) or "deerflow_tool_meta" in message.additional_kwargs:
        return message
    if message.status == "error":
        return normalize_tool_result(message, status="error", source=source)
    return normalize_tool_result(message, status="success", source=source)


def stamp_result(result: Any, source: str = "builtin") -> Any:
    """Add ``deerflow_tool_meta`` to a tool result (a ``ToolMessage`` or a ``Command``) lacking it."""
    if isinstance(result, Command) and isinstance(result.update, dict) and "messages" in result.update:
        messages = [_stamp_message(m, source) for m in result.update["messages"]]
        return Command(update={**result.update, "messages": messages}, goto=result.goto, graph=result.graph)
    return _stamp_message(result, source)


def _source(request: Any) -> str:
    tool = getattr(request, "tool", None)
    metadata = getattr(tool, "metadata", None) or {}
    return str(metadata.get("deerflow_source", "builtin"))


class ToolErrorHandlingMiddleware(AgentMiddleware):
    """The run continues after a tool raises: the model sees an error result instead."""

    def _on_error(self, request: Any, exc: Exception) -> ToolMessage:
        from deerflow_nb.tools.meta import classify_exception

        logger.info("tool %s raised %s: %s", request.tool_call["name"], type(exc).__name__, exc)
        meta = classify_exception(exc)
        return tool_error(request, f"Error: {type(exc).__name__}: {exc}", **meta)

    def wrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        """Run the tool; convert exceptions; stamp metadata."""
        try:
            return stamp_result(handler(request), _source(request))
        except GraphBubbleUp:
            raise
        except Exception as exc:
            return self._on_error(request, exc)

    async def awrap_tool_call(self, request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        """Async twin of :meth:`wrap_tool_call`."""
        try:
            return stamp_result(await handler(request), _source(request))
        except (GraphBubbleUp, asyncio.CancelledError):
            raise
        except Exception as exc:
            return self._on_error(request, exc)
