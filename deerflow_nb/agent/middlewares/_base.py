"""Small bases for middlewares that only touch model or tool calls.

LangChain runs ``before_model``/``after_model`` hooks as graph nodes, each one a
checkpoint write; ``wrap_model_call``/``wrap_tool_call`` are not. Every DeerFlow
middleware therefore works through the wrapping hooks, with a sync and an async
entry point sharing one implementation.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain.agents.middleware.types import ExtendedModelResponse, ModelCallResult
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.types import Command

from deerflow_nb.context import RunContext

__all__ = ["ModelCallMiddleware", "ToolCallGate", "context_of", "last_ai", "tool_error", "with_update"]


def context_of(request: Any) -> RunContext:
    """The run's :class:`RunContext` (an empty one when the graph runs without context)."""
    runtime = getattr(request, "runtime", None)
    ctx = getattr(runtime, "context", None)
    return ctx if isinstance(ctx, RunContext) else RunContext()


def last_ai(response: ModelResponse) -> AIMessage | None:
    """The AI message of a model response, if any."""
    return next((m for m in response.result if isinstance(m, AIMessage)), None)


def with_update(response: ModelResponse, update: dict[str, Any] | None) -> ModelCallResult:
    """Attach a state update to a model response without an extra graph node."""
    if not update:
        return response
    return ExtendedModelResponse(model_response=response, command=Command(update=update))


class ModelCallMiddleware(AgentMiddleware):
    """A middleware defined by ``prepare(request)`` and ``finish(request, response)``.

    ``aprepare`` defaults to ``prepare``; override it to move blocking I/O to a thread.
    """

    def prepare(self, request: ModelRequest) -> ModelRequest:
        """Adjust the request before the model sees it."""
        return request

    async def aprepare(self, request: ModelRequest) -> ModelRequest:
        """Async twin of :meth:`prepare`."""
        return self.prepare(request)

    def finish(self, request: ModelRequest, response: ModelResponse) -> ModelCallResult:
        """Inspect or replace the response; may return an ``ExtendedModelResponse``."""
        return response

    async def afinish(self, request: ModelRequest, response: ModelResponse) -> ModelCallResult:
        """Async twin of :meth:`finish`."""
        return self.finish(request, response)

    def wrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> ModelCallResult:
        """Run :meth:`prepare`, the model, then :meth:`finish`."""
        request = self.prepare(request)
        return self.finish(request, handler(request))

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> ModelCallResult:
        """Async twin of :meth:`wrap_model_call`."""
        request = await self.aprepare(request)
        return await self.afinish(request, await handler(request))


async def run_blocking(func: Callable[..., Any], *args: Any) -> Any:
    """Run blocking work off the event loop."""
    return await asyncio.to_thread(func, *args)


def tool_error(request: Any, text: str, **meta: Any) -> ToolMessage:
    """An error ``ToolMessage`` for the current tool call, stamped with ``deerflow_tool_meta``."""
    from deerflow_nb.tools.meta import normalize_tool_result

    call = request.tool_call
    meta = {k: v for k, v in meta.items() if k != "status"}
    message = ToolMessage(content=text, tool_call_id=call["id"], name=call["name"], status="error")
    return normalize_tool_result(message, status="error", **meta)


class ToolCallGate:
    """Mixin for a middleware that may refuse a tool call before it runs.

    Subclasses define ``_refusal(request)``: the error ``ToolMessage`` to answer instead of
    running the tool, or ``None`` to let the call through. Put it before
    ``AgentMiddleware`` in the bases so LangChain sees the wrapping hooks.
    """

    def _refusal(self, request: Any) -> Any:
        raise NotImplementedError

    def wrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        """Answer the refusal, or run the tool."""
        refusal = self._refusal(request)
        return refusal if refusal is not None else handler(request)

    async def awrap_tool_call(self, request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        """Async twin of :meth:`wrap_tool_call`."""
        refusal = self._refusal(request)
        return refusal if refusal is not None else await handler(request)
