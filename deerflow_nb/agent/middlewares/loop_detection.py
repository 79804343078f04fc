"""Stop runs in which the model repeats the same tool calls."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from langchain.agents.middleware import ModelRequest, ModelResponse
from langchain.agents.middleware.types import ModelCallResult
from langchain_core.messages import AIMessage, HumanMessage

from deerflow_nb.agent.middlewares._base import ModelCallMiddleware, context_of, last_ai
from deerflow_nb.agent.middlewares.model_length_finish_reason import STOP_REASON_KEY

__all__ = ["LoopDetectionMiddleware", "calls_signature"]


def calls_signature(message: AIMessage) -> str | None:
    """A stable hash of a message's tool calls (names and arguments), ``None`` without calls."""
    if not message.tool_calls:
        return None
    canon = sorted(json.dumps([c["name"], c.get("args")], sort_keys=True, default=str) for c in message.tool_calls)
    return hashlib.sha1("\n".join(canon).encode()).hexdigest()


def _current_run(messages: list[Any]) -> list[Any]:
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if isinstance(m, HumanMessage) and not m.additional_kwargs.get("deerflow_internal"):
            return messages[i + 1 :]
    return messages


class LoopDetectionMiddleware(ModelCallMiddleware):
    """Warns at ``warn_threshold`` identical call sets in one turn, hard-stops at ``hard_limit``."""

    def __init__(self, warn_threshold: int = 3, hard_limit: int = 5) -> None:
        super().__init__()
        self.warn_threshold = warn_threshold
        self.hard_limit = hard_limit

    def _counts(self, messages: list[Any]) -> dict[str, int]:
        counts: dict[str, int] = {}
        for m in _current_run(messages):
            if isinstance(m, AIMessage) and (sig := calls_signature(m)):
                counts[sig] = counts.get(sig, 0) + 1
        return counts

    def prepare(self, request: ModelRequest) -> ModelRequest:
        """Add a hidden hint when the last call set already repeated ``warn_threshold`` times."""
        counts = self._counts(list(request.messages))
        if counts and max(counts.values()) >= self.warn_threshold:
            hint = HumanMessage(
                content="You are repeating the same tool call with the same arguments. Stop repeating it: "
                "use the results you already have, or try a different approach.",
                additional_kwargs={"deerflow_internal": True, "hide_from_ui": True},
            )
            return request.override(messages=[*request.messages, hint])
        return request

    def finish(self, request: ModelRequest, response: ModelResponse) -> ModelCallResult:
        """Strip the tool calls once they repeat ``hard_limit`` times and force a final answer."""
        message = last_ai(response)
        sig = calls_signature(message) if message is not None else None
        if message is None or sig is None:
            return response
        if self._counts(list(request.state.get("messages", []))).get(sig, 0) + 1 < self.hard_limit:
            return response
        context_of(request).extra["stop_reason"] = "loop_capped"
        text = message.content if isinstance(message.content, str) else ""
        note = "Stopped: the same tool call was repeated too many times, so the run ended here."
        stopped = AIMessage(
            id=message.id,
            content=f"{text}\n\n{note}".strip(),
            additional_kwargs={k: v for k, v in message.additional_kwargs.items() if k != "tool_calls"}
            | {STOP_REASON_KEY: "loop_capped"},
            response_metadata={**message.response_metadata, "finish_reason": "stop"},
            usage_metadata=message.usage_metadata,
        )
        return ModelResponse(result=[stopped], structured_response=response.structured_response)
