"""Real provider exceptions (OpenAI SDK, httpx) for testing how runs fail.

``provider_error(kind)`` builds the exception a provider raises for ``kind``:
``timeout`` (``openai.APITimeoutError``), ``connect`` (``httpx.ConnectError``),
``rate_limit`` (``openai.RateLimitError``, 429, optional ``Retry-After``), ``server``
(``openai.InternalServerError``, 500), ``auth`` (``openai.AuthenticationError``, 401),
``bad_request`` (``openai.BadRequestError``, 400) and ``context_overflow`` (a 400 with
``code: context_length_exceeded``). A :class:`~deerflow_nb.testing.ScriptedChatModel`
raises an exception placed in its ``responses`` (or an entry ``{"error": kind,
"retry_after": seconds}``, which also works from ``config.yaml``). Needs the ``openai``
package (installed with ``langchain-openai``).
"""

from __future__ import annotations

from typing import Any

__all__ = ["PROVIDER_ERROR_KINDS", "provider_error"]

__test__ = False

PROVIDER_ERROR_KINDS = ("timeout", "connect", "rate_limit", "server", "auth", "bad_request", "context_overflow")
_URL = "https://api.openai.com/v1/chat/completions"


def provider_error(kind: str, *, retry_after: float | None = None, message: str | None = None) -> Exception:
    """The exception a provider raises for ``kind`` (see the module docstring)."""
    import httpx
    import openai

    request = httpx.Request("POST", _URL)

    def response(status: int) -> Any:  # the SDK's own httpx alias differs from httpx for type checkers
        headers = {"retry-after": f"{retry_after:g}"} if retry_after is not None else {}
        return httpx.Response(status, headers=headers, request=request)

    body: dict[str, Any]
    if kind == "timeout":
        return openai.APITimeoutError(request=request)  # type: ignore[arg-type]
    if kind == "connect":
        return httpx.ConnectError(message or "[Errno 111] Connection refused", request=request)
    if kind == "rate_limit":
        body = {"message": message or "Rate limit reached for requests", "code": "rate_limit_exceeded"}
        return openai.RateLimitError(body["message"], response=response(429), body=body)
    if kind == "server":
        body = {"message": message or "The server had an error while processing your request."}
        return openai.InternalServerError(body["message"], response=response(500), body=body)
    if kind == "auth":
        body = {"message": message or "Incorrect API key provided: sk-***.", "code": "invalid_api_key"}
        return openai.AuthenticationError(body["message"], response=response(401), body=body)
    if kind == "bad_request":
        body = {"message": message or "Invalid value for 'temperature'.", "code": "invalid_value"}
        return openai.BadRequestError(body["message"], response=response(400), body=body)
    if kind == "context_overflow":
        body = {"message": message or ("This model's maximum context length is 8192 tokens. However, your "
                                       "messages resulted in 9000 tokens."), "code": "context_length_exceeded"}
        return openai.BadRequestError(body["message"], response=response(400), body=body)
    raise ValueError(f"unknown provider error kind {kind!r}; known: {', '.join(PROVIDER_ERROR_KINDS)}")
