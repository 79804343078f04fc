"""Model failures: classification of real provider exceptions, retries with backoff and Retry-After."""

import asyncio

import httpx
import openai
import pytest
from langchain.agents.middleware import ModelRequest, ModelResponse
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.runtime import Runtime

from deerflow_nb.agent.middlewares.model_retry import (
    ModelRetryMiddleware,
    classify_model_error,
    retry_after_seconds,
)
from deerflow_nb.context import RunContext
from deerflow_nb.testing import ScriptedChatModel, provider_error


@pytest.mark.parametrize(("kind", "stop_reason", "transient"), [
    ("timeout", "model_timeout", True),
    ("connect", "model_unavailable", True),
    ("rate_limit", "rate_limited", True),
    ("server", "model_unavailable", True),
    ("auth", "model_auth", False),
    ("bad_request", "model_error", False),
    ("context_overflow", "context_overflow", False),
])
def test_provider_exceptions_are_classified(kind, stop_reason, transient):
    exc = provider_error(kind)
    failure = classify_model_error(exc)
    assert (failure.stop_reason, failure.transient) == (stop_reason, transient)


def test_provider_error_builds_the_real_sdk_types():
    assert isinstance(provider_error("timeout"), openai.APITimeoutError)
    assert isinstance(provider_error("connect"), httpx.ConnectError)
    assert isinstance(provider_error("rate_limit"), openai.RateLimitError)
    assert isinstance(provider_error("auth"), openai.AuthenticationError)
    overflow = provider_error("context_overflow")
    assert isinstance(overflow, openai.BadRequestError) and overflow.code == "context_length_exceeded"


def test_unknown_exceptions_are_not_retried():
    failure = classify_model_error(RuntimeError("a bug"))
    assert failure == classify_model_error(KeyError("x"))
    assert (failure.stop_reason, failure.transient) == ("model_error", False)


def test_retry_after_header_seconds_and_milliseconds():
    assert retry_after_seconds(provider_error("rate_limit", retry_after=7)) == 7
    assert retry_after_seconds(provider_error("rate_limit")) is None
    request = httpx.Request("POST", "https://example.invalid")
    ms = openai.RateLimitError("slow down", response=httpx.Response(429, headers={"retry-after-ms": "1500"},
                                                                    request=request), body=None)
    assert retry_after_seconds(ms) == 1.5
    assert classify_model_error(ms).retry_after == 1.5


def _request():
    return ModelRequest(model=ScriptedChatModel(responses=[]), messages=[HumanMessage("q")], system_message=None,
                        tools=[], state={"messages": []}, runtime=Runtime(context=RunContext()))


def _flaky(*failures):
    """A handler raising ``failures`` in turn, then answering; records its calls."""
    pending = list(failures)
    calls = []

    async def handler(request):
        calls.append(request)
        if pending:
            raise pending.pop(0)
        return ModelResponse(result=[AIMessage(content="ok")])

    return handler, calls


def _middleware(**kwargs):
    mw = ModelRetryMiddleware(**kwargs)
    waits: list[float] = []

    async def asleep(delay):
        waits.append(delay)

    mw.asleep = asleep
    return mw, waits


def test_transient_failures_are_retried_with_exponential_backoff():
    mw, waits = _middleware(max_retries=3, max_delay=60, initial_delay=1)
    handler, calls = _flaky(provider_error("timeout"), provider_error("connect"), provider_error("server"))
    result = asyncio.run(mw.awrap_model_call(_request(), handler))
    assert result.result[0].content == "ok" and len(calls) == 4
    # 1, 2, 4 seconds, each within +-25% jitter
    for wait, base in zip(waits, (1, 2, 4), strict=True):
        assert base * 0.75 <= wait <= base * 1.25


def test_retry_after_is_honoured_and_capped_by_retry_max_wait():
    mw, waits = _middleware(max_retries=2, max_delay=10)
    handler, _ = _flaky(provider_error("rate_limit", retry_after=7), provider_error("rate_limit", retry_after=30))
    asyncio.run(mw.awrap_model_call(_request(), handler))
    assert waits == [7, 10]


def test_retries_exhausted_raise_the_last_provider_error():
    mw, waits = _middleware(max_retries=2, max_delay=0)
    handler, calls = _flaky(*(provider_error("rate_limit") for _ in range(3)))
    with pytest.raises(openai.RateLimitError):
        asyncio.run(mw.awrap_model_call(_request(), handler))
    assert len(calls) == 3 and waits == [0, 0]


@pytest.mark.parametrize("kind", ["auth", "bad_request", "context_overflow"])
def test_non_transient_failures_are_not_retried(kind):
    mw, waits = _middleware(max_retries=5)
    handler, calls = _flaky(provider_error(kind))
    with pytest.raises(openai.APIStatusError):
        asyncio.run(mw.awrap_model_call(_request(), handler))
    assert len(calls) == 1 and waits == []


def test_sync_path_retries_too():
    mw = ModelRetryMiddleware(max_retries=1, max_delay=0)
    slept = []
    mw.sleep = slept.append
    pending = [provider_error("timeout")]

    def handler(request):
        if pending:
            raise pending.pop()
        return ModelResponse(result=[AIMessage(content="ok")])

    assert mw.wrap_model_call(_request(), handler).result[0].content == "ok"
    assert slept == []  # a zero wait does not sleep


def test_scripted_model_raises_exceptions_and_error_entries():
    model = ScriptedChatModel(responses=[provider_error("auth"), {"error": "rate_limit", "retry_after": 3}, "fine"])
    with pytest.raises(openai.AuthenticationError):
        model.invoke("hi")
    with pytest.raises(openai.RateLimitError) as caught:
        model.invoke("hi")
    assert retry_after_seconds(caught.value) == 3
    assert model.invoke("hi").content == "fine"
    with pytest.raises(ValueError, match="error must be one of"):
        ScriptedChatModel(responses=[{"error": "nope"}])
