"""Cap the tokens one subagent spends: warn near the budget, then make it answer (``token_capped``).

The count is the ``total_tokens`` of the subagent's own model responses (each counted
once), so it needs no state of its own: the subagent graph's messages are the run.
At ``warn_ratio`` of the budget the model is told, in a hidden note, to wrap up; once a
response reaches the budget its tool calls are removed and the turn is final, with a
visible note, so the lead still receives what the subagent found. The executor reports
the run as ``completed`` with ``stop_reason: token_capped``.
"""

from __future__ import annotations

from typing import Any

from langchain.agents.middleware import ModelRequest, ModelResponse
from langchain.agents.middleware.types import ModelCallResult
from langchain_core.messages import AIMessage, HumanMessage

from deerflow_nb.agent.middlewares._base import ModelCallMiddleware, context_of, last_ai
from deerflow_nb.agent.middlewares.model_length_finish_reason import STOP_REASON_KEY

__all__ = ["TOKEN_CAPPED", "TokenBudgetMiddleware", "tokens_used"]

TOKEN_CAPPED = "token_capped"


def tokens_used(messages: list[Any]) -> int:
    """``total_tokens`` of the AI messages in ``messages``, once per message id."""
    seen: set[str] = set()
    total = 0
    for message in messages:
        if isinstance(message, AIMessage) and message.usage_metadata:
            key = message.id or str(id(message))
            if key not in seen:
                seen.add(key)
                total += int(message.usage_metadata.get("total_tokens") or 0)
    return total


class TokenBudgetMiddleware(ModelCallMiddleware):
    """Holds a subagent to ``max_tokens`` (warning at ``warn_ratio`` of it)."""

    def __init__(self, max_tokens: int, warn_ratio: float = 0.7) -> None:
        super().__init__()
        self.max_tokens = max_tokens
        self.warn_ratio = warn_ratio

    def prepare(self, request: ModelRequest) -> ModelRequest:
        """Past ``warn_ratio`` of the budget: a hidden note asking for the final report now."""
        used = tokens_used(list(request.state.get("messages", [])))
        if used < self.warn_ratio * self.max_tokens:
            return request
        note = HumanMessage(
            content=f"You have used {used:,} of your {self.max_tokens:,}-token budget. Stop exploring: write "
            "your final report now from what you already have.",
            additional_kwargs={"deerflow_internal": True, "hide_from_ui": True})
        return request.override(messages=[*request.messages, note])

    def finish(self, request: ModelRequest, response: ModelResponse) -> ModelCallResult:
        """Once the budget is spent, drop the response's tool calls and end the subagent's work."""
        message = last_ai(response)
        if message is None:
            return response
        used = tokens_used([*request.state.get("messages", []), message])
        if used < self.max_tokens or not message.tool_calls:
            return response
        context_of(request).extra["stop_reason"] = TOKEN_CAPPED
        text = message.content if isinstance(message.content, str) else message.text
        note = (f"Stopped: this subagent used its token budget ({used:,} of {self.max_tokens:,} tokens), so its "
                "work ended here.")
        stopped = AIMessage(
            id=message.id, content=f"{text}\n\n{note}".strip(),
            additional_kwargs={k: v for k, v in message.additional_kwargs.items() if k != "tool_calls"}
            | {STOP_REASON_KEY: TOKEN_CAPPED},
            response_metadata={**message.response_metadata, "finish_reason": "stop"},
            usage_metadata=message.usage_metadata, name=message.name)
        return ModelResponse(result=[stopped if m is message else m for m in response.result],
                             structured_response=response.structured_response)
