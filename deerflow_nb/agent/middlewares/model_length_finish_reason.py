"""Record ``stop_reason=model_length_capped`` when the model ran out of output tokens."""

from __future__ import annotations

from langchain.agents.middleware import ModelRequest, ModelResponse
from langchain.agents.middleware.types import ModelCallResult
from langchain_core.messages import AIMessage

from deerflow_nb.agent.middlewares._base import ModelCallMiddleware, context_of, last_ai

__all__ = ["STOP_REASON_KEY", "ModelLengthFinishReasonMiddleware", "is_length_capped"]

STOP_REASON_KEY = "deerflow_stop_reason"


def is_length_capped(message: AIMessage) -> bool:
    """Provider-specific length signals on a final (tool-call-free) answer."""
    if message.tool_calls:
        return False
    meta = message.response_metadata or {}
    finish = str(meta.get("finish_reason") or meta.get("stop_reason") or "").lower()
    return finish in {"length", "max_tokens"}


class ModelLengthFinishReasonMiddleware(ModelCallMiddleware):
    """Marks the message and the run context; the content is kept as the model wrote it."""

    def finish(self, request: ModelRequest, response: ModelResponse) -> ModelCallResult:
        """Stamp the stop reason on a length-capped answer."""
        message = last_ai(response)
        if message is None or not is_length_capped(message):
            return response
        context_of(request).extra["stop_reason"] = "model_length_capped"
        stamped = message.model_copy(
            update={"additional_kwargs": {**message.additional_kwargs, STOP_REASON_KEY: "model_length_capped"}}
        )
        return ModelResponse(result=[stamped if m is message else m for m in response.result],
                             structured_response=response.structured_response)
