"""Cap tool output before it re-enters the model context."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import ToolMessage
from langgraph.types import Command

__all__ = ["ToolOutputBudgetMiddleware", "truncate_middle"]


def truncate_middle(text: str, max_chars: int) -> str:
    """Keep the head and tail of ``text`` within ``max_chars``, saying how much was cut."""
    if len(text) <= max_chars:
        return text
    head = max_chars * 2 // 3
    tail = max_chars - head
    omitted = len(text) - head - tail
    return f"{text[:head]}\n\n[... {omitted} characters omitted ...]\n\n{text[-tail:]}"


class ToolOutputBudgetMiddleware(AgentMiddleware):
    """Truncate long string tool results to ``tool_output_budget.max_chars``."""

    def __init__(self, max_chars: int = 20_000) -> None:
        super().__init__()
        self.max_chars = max_chars

    def _cap(self, result: Any) -> Any:
        if isinstance(result, ToolMessage) and isinstance(result.content, str):
            if len(result.content) > self.max_chars:
                return result.model_copy(update={"content": truncate_middle(result.content, self.max_chars)})
        if isinstance(result, Command) and isinstance(result.update, dict):
            messages = result.update.get("messages")
            if isinstance(messages, list):
                capped = [self._cap(m) for m in messages]
                return Command(update={**result.update, "messages": capped}, goto=result.goto, graph=result.graph)
        return result

    def wrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        """Cap the result of the wrapped tool call."""
        return self._cap(handler(request))

    async def awrap_tool_call(self, request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        """Async twin of :meth:`wrap_tool_call`."""
        return self._cap(await handler(request))
