"""Account token usage per run and per model."""

from __future__ import annotations

from typing import Any

from langchain.agents.middleware import ModelRequest, ModelResponse
from langchain.agents.middleware.types import ModelCallResult

from deerflow_nb.agent.middlewares._base import ModelCallMiddleware, context_of, last_ai

__all__ = ["TokenUsageMiddleware", "add_usage", "model_label"]


def model_label(request: ModelRequest) -> str:
    """The configured model name of the run, else the model's own identifier."""
    ctx = context_of(request)
    if ctx.model_name:
        return ctx.model_name
    for attr in ("model_name", "model", "model_id"):
        value = getattr(request.model, attr, None)
        if isinstance(value, str) and value:
            return value
    return type(request.model).__name__


def add_usage(total: dict[str, int], usage: dict[str, Any] | None) -> dict[str, int]:
    """Add one ``usage_metadata`` into a running total (input, output, total, cache_read)."""
    if not usage:
        return total
    total["input_tokens"] = total.get("input_tokens", 0) + int(usage.get("input_tokens") or 0)
    total["output_tokens"] = total.get("output_tokens", 0) + int(usage.get("output_tokens") or 0)
    total["total_tokens"] = total.get("total_tokens", 0) + int(
        usage.get("total_tokens") or (usage.get("input_tokens") or 0) + (usage.get("output_tokens") or 0)
    )
    details = usage.get("input_token_details") or {}
    total["cache_read_tokens"] = total.get("cache_read_tokens", 0) + int(details.get("cache_read") or 0)
    return total


class TokenUsageMiddleware(ModelCallMiddleware):
    """Sums each response's ``usage_metadata`` into ``context.extra["token_usage"][model]``.

    The run worker reads that total when the run ends; nothing is added to state.
    """

    def finish(self, request: ModelRequest, response: ModelResponse) -> ModelCallResult:
        """Record the usage of this response."""
        message = last_ai(response)
        if message is not None and message.usage_metadata:
            ctx = context_of(request)
            per_model = ctx.extra.setdefault("token_usage", {})
            add_usage(per_model.setdefault(model_label(request), {}), dict(message.usage_metadata))
        return response
