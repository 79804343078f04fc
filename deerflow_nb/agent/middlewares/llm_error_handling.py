"""Turn provider/model failures into an assistant message the run can finish with."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core.messages import AIMessage
from langgraph.errors import GraphBubbleUp

__all__ = ["ERROR_FLAG", "LLMErrorHandlingMiddleware", "error_fallback"]

logger = logging.getLogger(__name__)
ERROR_FLAG = "deerflow_error_fallback"


def error_fallback(exc: BaseException) -> AIMessage:
    """The visible assistant message that replaces a failed model call."""
    text = f"The model call failed: {type(exc).__name__}: {exc}"
    return AIMessage(
        content=text,
        additional_kwargs={ERROR_FLAG: True, "deerflow_error": {"type": type(exc).__name__, "message": str(exc)}},
    )


class LLMErrorHandlingMiddleware(AgentMiddleware):
    """Catches exceptions from the model (and inner wrappers); the run ends as an error, not a crash."""

    def wrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> ModelResponse:
        """Call the model; on failure answer with :func:`error_fallback`."""
        try:
            return handler(request)
        except GraphBubbleUp:
            raise
        except Exception as exc:
            logger.warning("model call failed: %s", exc, exc_info=True)
            return ModelResponse(result=[error_fallback(exc)])

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> ModelResponse:
        """Async twin of :meth:`wrap_model_call` (cancellation propagates)."""
        try:
            return await handler(request)
        except (GraphBubbleUp, asyncio.CancelledError):
            raise
        except Exception as exc:
            logger.warning("model call failed: %s", exc, exc_info=True)
            return ModelResponse(result=[error_fallback(exc)])
