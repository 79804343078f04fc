"""Transient model failures are retried (backoff, jitter, ``Retry-After``); the rest are classified.

:func:`classify_model_error` names a provider failure with the run's ``stop_reason``:

- timeouts (openai, httpx, ``TimeoutError``, HTTP 408): ``model_timeout``, retried;
- HTTP 429 / rate limits: ``rate_limited``, retried;
- connection errors, HTTP 5xx (529 overloaded too): ``model_unavailable``, retried;
- HTTP 401 / 403: ``model_auth``, not retried;
- context length exceeded: ``context_overflow``, not retried;
- anything else (400, 404, 422, a bug): ``model_error``, not retried.

Provider classes are recognised without importing the SDKs (OpenAI's and httpx's
types by ``isinstance`` when they are loaded; others by ``status_code`` and name).
:class:`ModelRetryMiddleware` is LangChain's ``ModelRetryMiddleware`` with that
predicate, ``on_failure="error"`` and the provider's ``Retry-After`` honoured (capped
by ``retry_max_wait``); each retry is announced as a ``custom`` event
``{"type": "model_retry", ...}``.
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from langchain.agents.middleware import ModelRequest, ModelResponse
from langchain.agents.middleware import ModelRetryMiddleware as _LangChainModelRetry
from langchain.agents.middleware._retry import calculate_delay
from langgraph.errors import GraphBubbleUp

from deerflow_nb.utils.custom_events import emit_custom_event

__all__ = ["ModelFailure", "ModelRetryMiddleware", "classify_model_error", "retry_after_seconds"]

logger = logging.getLogger(__name__)

_CONTEXT_MARKERS = ("context_length_exceeded", "maximum context length", "context length", "context window",
                    "prompt is too long", "too many tokens", "reduce the length")


@dataclass(frozen=True)
class ModelFailure:
    """What a model exception means for the run."""

    stop_reason: str
    transient: bool
    retry_after: float | None = None


def _status_code(exc: BaseException) -> int | None:
    for holder in (exc, getattr(exc, "response", None)):
        code = getattr(holder, "status_code", None)
        if isinstance(code, int):
            return code
    return None


def retry_after_seconds(exc: BaseException) -> float | None:
    """The wait a provider asked for (``retry-after-ms`` / ``retry-after`` header), if any."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    try:
        millis = headers.get("retry-after-ms")
        if millis is not None:
            return max(0.0, float(millis) / 1000)
        value = headers.get("retry-after")
    except Exception:  # a header object we cannot read
        return None
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:  # an HTTP date
        when = email.utils.parsedate_to_datetime(str(value))
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _is_context_overflow(exc: BaseException) -> bool:
    code = getattr(exc, "code", None)
    if code == "context_length_exceeded":
        return True
    text = str(exc).lower()
    return any(marker in text for marker in _CONTEXT_MARKERS)


def classify_model_error(exc: BaseException) -> ModelFailure:
    """The ``stop_reason`` of a failed model call and whether a retry may help."""
    retry_after = retry_after_seconds(exc)
    openai = sys.modules.get("openai")
    httpx = sys.modules.get("httpx")
    if openai is not None and isinstance(exc, openai.APITimeoutError):
        return ModelFailure("model_timeout", True)
    if httpx is not None and isinstance(exc, httpx.TimeoutException):
        return ModelFailure("model_timeout", True)
    if openai is not None and isinstance(exc, openai.APIConnectionError):  # after APITimeoutError (a subclass)
        return ModelFailure("model_unavailable", True)
    if httpx is not None and isinstance(exc, httpx.TransportError):
        return ModelFailure("model_unavailable", True)
    status = _status_code(exc)
    name = type(exc).__name__
    if status == 429 or name == "RateLimitError":
        return ModelFailure("rate_limited", True, retry_after)
    if status == 408:
        return ModelFailure("model_timeout", True, retry_after)
    if status is not None and status >= 500:
        return ModelFailure("model_unavailable", True, retry_after)
    if status in {401, 403} or name in {"AuthenticationError", "PermissionDeniedError"}:
        return ModelFailure("model_auth", False)
    if _is_context_overflow(exc):
        return ModelFailure("context_overflow", False)
    if status is None and isinstance(exc, TimeoutError | ConnectionError):
        return ModelFailure("model_timeout" if isinstance(exc, TimeoutError) else "model_unavailable", True)
    retryable = getattr(exc, "is_retryable", None)  # langchain_core.exceptions.ModelError
    if status is None and isinstance(retryable, bool) and retryable:
        return ModelFailure("model_error", True, retry_after)
    return ModelFailure("model_error", False)


def _is_transient(exc: Exception) -> bool:
    return classify_model_error(exc).transient


class ModelRetryMiddleware(_LangChainModelRetry):
    """LangChain's retry middleware for transient model failures, honouring ``Retry-After``.

    Waits ``initial_delay * 2**n`` seconds (±25% jitter) before retry ``n+1``, or what
    the provider's ``Retry-After`` asks; never longer than ``max_delay``
    (``models[].retry_max_wait``). After ``max_retries`` the last error propagates.
    """

    #: How waits happen (replaceable in tests).
    sleep: Callable[[float], None] = staticmethod(time.sleep)
    asleep: Callable[[float], Awaitable[None]] = staticmethod(asyncio.sleep)

    def __init__(self, *, max_retries: int = 2, max_delay: float = 60.0, initial_delay: float = 1.0) -> None:
        super().__init__(max_retries=max_retries, retry_on=_is_transient, on_failure="error",
                         initial_delay=min(initial_delay, max_delay), max_delay=max_delay, jitter=True)

    def delay_for(self, exc: BaseException, attempt: int) -> float:
        """Seconds to wait before retry ``attempt + 1`` (0-based ``attempt``)."""
        asked = classify_model_error(exc).retry_after
        if asked is not None:
            return min(asked, self.max_delay)
        return calculate_delay(attempt, backoff_factor=self.backoff_factor, initial_delay=self.initial_delay,
                               max_delay=self.max_delay, jitter=self.jitter)

    def _should_retry(self, exc: Exception, attempt: int) -> bool:
        return attempt < self.max_retries and _is_transient(exc)

    def _announce(self, exc: Exception, attempt: int, delay: float) -> None:
        failure = classify_model_error(exc)
        logger.info("model call failed (%s: %s); retry %d of %d in %.1f s", type(exc).__name__, exc,
                    attempt + 1, self.max_retries, delay)
        emit_custom_event({"type": "model_retry", "attempt": attempt + 1, "max_retries": self.max_retries,
                           "delay": round(delay, 3), "stop_reason": failure.stop_reason,
                           "error": f"{type(exc).__name__}: {exc}"[:500]})

    def _retry_delay(self, exc: Exception, attempt: int) -> float | None:
        """The announced wait before retrying ``exc``, or ``None`` when it is not retried."""
        if not self._should_retry(exc, attempt):
            return None
        delay = self.delay_for(exc, attempt)
        self._announce(exc, attempt, delay)
        return delay

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]) -> Any:
        """Call the model; retry transient failures after a (blocking) wait."""
        attempt = 0
        while True:
            try:
                return handler(request)
            except GraphBubbleUp:
                raise
            except Exception as exc:
                delay = self._retry_delay(exc, attempt)
                if delay is None:
                    raise
                if delay > 0:
                    self.sleep(delay)
                attempt += 1

    async def awrap_model_call(self, request: ModelRequest,
                               handler: Callable[[ModelRequest], Awaitable[ModelResponse]]) -> Any:
        """Async twin of :meth:`wrap_model_call` (the wait is cancellable)."""
        attempt = 0
        while True:
            try:
                return await handler(request)
            except GraphBubbleUp:
                raise
            except Exception as exc:
                delay = self._retry_delay(exc, attempt)
                if delay is None:
                    raise
                await self.asleep(delay)
                attempt += 1
