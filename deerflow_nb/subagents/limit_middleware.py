"""Cap delegation: task calls per model response and per run."""

from __future__ import annotations

from typing import Any

from langchain.agents.middleware import ModelRequest, ModelResponse
from langchain.agents.middleware.types import ModelCallResult
from langchain_core.messages import AIMessage, SystemMessage

from deerflow_nb.agent.middlewares._base import ModelCallMiddleware, context_of, last_ai
from deerflow_nb.agent.middlewares.model_length_finish_reason import STOP_REASON_KEY
from deerflow_nb.subagents.config import clamp
from deerflow_nb.subagents.task_tool import TASK_TOOL_NAME

__all__ = ["CONCURRENCY_KEY", "LAUNCHED_KEY", "SubagentLimitMiddleware", "limit_note"]

#: ``context.extra`` key counting the task calls let through in this run.
LAUNCHED_KEY = "subagents_launched"
#: ``context.extra`` key of the run's ``max_concurrent_subagents`` option (1-4).
CONCURRENCY_KEY = "max_concurrent_subagents"


def limit_note(max_total: int) -> str:
    """The visible note appended when the per-run delegation budget is spent."""
    return (f"Subagent delegation limit reached: at most {max_total} subagent tasks per run. "
            "I will continue with the results already collected.")


def _raw_call_id(raw: Any) -> Any:
    return raw.get("id") if isinstance(raw, dict) else None


class SubagentLimitMiddleware(ModelCallMiddleware):
    """Keeps at most ``max_concurrent`` task calls per response and ``max_total`` per run.

    Excess task calls are removed from the response (and from the provider's raw
    ``tool_calls``), so they never run. Once the run's budget is spent every task call
    is stripped; if no other tool call remains the turn ends (``finish_reason=stop``)
    with a visible note, so the agent answers with what it has.
    """

    def __init__(self, max_concurrent: int = 3, max_total: int = 6) -> None:
        super().__init__()
        self.max_concurrent = max_concurrent
        self.max_total = max_total

    def _concurrent(self, request: ModelRequest) -> int:
        override = context_of(request).extra.get(CONCURRENCY_KEY)
        return clamp(override, 1, 4) if isinstance(override, int) else self.max_concurrent

    def prepare(self, request: ModelRequest) -> ModelRequest:
        """A per-run ``max_concurrent_subagents``: the prompt quotes the limit this run enforces."""
        limit = self._concurrent(request)
        system = request.system_message
        if limit == self.max_concurrent or system is None or not isinstance(system.content, str):
            return request
        note = (f"\nFor this run: at most {limit} task calls per response (this replaces the limit of "
                f"{self.max_concurrent} stated above; extra calls are dropped).")
        return request.override(system_message=SystemMessage(content=system.content + note))

    def finish(self, request: ModelRequest, response: ModelResponse) -> ModelCallResult:
        """Truncate the response's task calls to what the limits allow."""
        message = last_ai(response)
        if message is None:
            return response
        tasks = [c for c in message.tool_calls if c["name"] == TASK_TOOL_NAME]
        if not tasks:
            return response
        extra = context_of(request).extra
        used = int(extra.get(LAUNCHED_KEY, 0))
        allowed = max(0, min(self._concurrent(request), self.max_total - used))
        extra[LAUNCHED_KEY] = used + min(allowed, len(tasks))
        if len(tasks) <= allowed:
            return response
        dropped = {c.get("id") for c in tasks[allowed:]}
        calls = [c for c in message.tool_calls if c.get("id") not in dropped]
        kwargs = dict(message.additional_kwargs)
        if isinstance(kwargs.get("tool_calls"), list):  # keep the provider's raw view in sync
            kwargs["tool_calls"] = [r for r in kwargs["tool_calls"] if _raw_call_id(r) not in dropped]
            if not kwargs["tool_calls"]:
                del kwargs["tool_calls"]
        content: Any = message.content
        metadata = dict(message.response_metadata)
        if allowed == 0:  # the budget is spent: say so, and stop if nothing else is left to run
            text = message.content if isinstance(message.content, str) else message.text
            content = f"{text}\n\n{limit_note(self.max_total)}".strip()
            if not calls:
                metadata["finish_reason"] = "stop"
                kwargs[STOP_REASON_KEY] = "subagent_limit"
        capped = AIMessage(id=message.id, content=content, tool_calls=calls, additional_kwargs=kwargs,
                           response_metadata=metadata, usage_metadata=message.usage_metadata,
                           name=message.name)
        return ModelResponse(result=[capped if m is message else m for m in response.result],
                             structured_response=response.structured_response)
