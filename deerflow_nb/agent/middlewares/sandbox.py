"""Acquire the thread's sandbox and record its id in state."""

from __future__ import annotations

from langchain.agents.middleware import ModelRequest, ModelResponse
from langchain.agents.middleware.types import ModelCallResult

from deerflow_nb.agent.middlewares._base import ModelCallMiddleware, context_of, with_update

__all__ = ["SandboxMiddleware"]


class SandboxMiddleware(ModelCallMiddleware):
    """Stores ``{"sandbox_id": ...}`` in ``state["sandbox"]`` on the first model call.

    Tools acquire the same (cached) sandbox through the provider in the run context.
    """

    def finish(self, request: ModelRequest, response: ModelResponse) -> ModelCallResult:
        """Acquire synchronously (sync graph runs only)."""
        ctx = context_of(request)
        if request.state.get("sandbox") or ctx.sandbox_provider is None:
            return response
        sandbox = ctx.sandbox_provider.acquire(ctx.thread_id, user_id=ctx.user_id)
        return with_update(response, {"sandbox": {"sandbox_id": sandbox.id}})

    async def afinish(self, request: ModelRequest, response: ModelResponse) -> ModelCallResult:
        """Acquire through the provider's async lifecycle (never blocks the loop)."""
        ctx = context_of(request)
        if request.state.get("sandbox") or ctx.sandbox_provider is None:
            return response
        sandbox_id = ctx.extra.get("sandbox_id")  # acquired by the run before the graph started
        if sandbox_id is None:
            sandbox_id = (await ctx.sandbox_provider.acquire_async(ctx.thread_id, user_id=ctx.user_id)).id
        return with_update(response, {"sandbox": {"sandbox_id": sandbox_id}})
