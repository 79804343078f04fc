"""A failed model call ends the run as an error (never as an assistant answer)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core.messages import AIMessage
from langgraph.errors import GraphBubbleUp

from deerflow_nb.agent.middlewares._base import context_of
from deerflow_nb.errors import ModelCallError, RunError

__all__ = ["ERROR_FLAG", "LLMErrorHandlingMiddleware", "error_fallback", "model_call_error"]

logger = logging.getLogger(__name__)
#: ``additional_kwargs`` flag of an assistant message that stands in for a missing answer
#: (an empty terminal response); a failed model call raises instead.
ERROR_FLAG = "deerflow_error_fallback"


def error_fallback(exc: BaseException) -> AIMessage:
    """A marked assistant message describing ``exc`` (kept for callers that want one)."""
    text = f"The model call failed: {type(exc).__name__}: {exc}"
    return AIMessage(
        content=text,
        additional_kwargs={ERROR_FLAG: True, "deerflow_error": {"type": type(exc).__name__, "message": str(exc)}},
    )


def model_call_error(exc: Exception, run_id: str | None = None) -> ModelCallError:
    """``exc`` (a provider failure) as a :class:`ModelCallError` with its ``stop_reason``."""
    from deerflow_nb.agent.middlewares.model_retry import classify_model_error

    if isinstance(exc, ModelCallError):
        return exc
    stop_reason = classify_model_error(exc).stop_reason
    cause = f"{type(exc).__name__}: {exc}"
    error = ModelCallError(f"the model call failed ({stop_reason}): {cause}", run_id=run_id,
                           stop_reason=stop_reason, cause=cause,
                           detail={"type": type(exc).__name__, "message": str(exc)})
    return error


class LLMErrorHandlingMiddleware(AgentMiddleware):
    """Classifies exceptions from the model (and inner wrappers) and ends the run with them.

    The exception is re-raised as :class:`~deerflow_nb.errors.ModelCallError` carrying
    the ``stop_reason``; nothing is written into the conversation. It is logged as one
    warning line (the traceback at debug level).
    """

    def _fail(self, request: ModelRequest, exc: Exception) -> ModelCallError:
        error = model_call_error(exc, context_of(request).run_id)
        logger.warning("model call failed (%s): %s: %s", error.stop_reason, type(exc).__name__, exc)
        logger.debug("model call failure", exc_info=exc)
        return error

    def wrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> ModelResponse:
        """Call the model; a failure raises :class:`~deerflow_nb.errors.ModelCallError`."""
        try:
            return handler(request)
        except (GraphBubbleUp, RunError):  # a RunError (an inner check's verdict) already says why
            raise
        except Exception as exc:
            raise self._fail(request, exc) from exc

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> ModelResponse:
        """Async twin of :meth:`wrap_model_call` (cancellation propagates)."""
        try:
            return await handler(request)
        except (GraphBubbleUp, asyncio.CancelledError, RunError):
            raise
        except Exception as exc:
            raise self._fail(request, exc) from exc
