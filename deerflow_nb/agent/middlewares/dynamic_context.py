"""Put per-turn context (the date, later memory) into the first human message.

The system prompt stays byte-identical across turns and days, so providers can
reuse their prompt-prefix cache. Only the model request changes; state does not.
"""

from __future__ import annotations

import datetime as dt
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from langchain.agents.middleware import ModelRequest
from langchain_core.messages import HumanMessage

from deerflow_nb.agent.middlewares._base import ModelCallMiddleware

__all__ = ["ContextProvider", "DynamicContextMiddleware", "inject_into_first_human"]

#: Reminders kept for runs in flight (oldest dropped first; a dropped run just recomputes).
_MAX_RUNS = 64
#: Returns a block of text for the reminder (or ``None``); plug-ins such as memory add one.
ContextProvider = Callable[[ModelRequest], str | None]


def inject_into_first_human(messages: list[Any], block: str) -> list[Any]:
    """Prefix ``block`` to the first human message (string or content-block form)."""
    out = list(messages)
    for i, message in enumerate(out):
        if isinstance(message, HumanMessage):
            if isinstance(message.content, str):
                content: Any = f"{block}\n\n{message.content}"
            else:
                content = [{"type": "text", "text": block}, *message.content]
            out[i] = message.model_copy(update={"content": content})
            break
    return out


class DynamicContextMiddleware(ModelCallMiddleware):
    """Adds a ``<system-reminder>`` with the current date and any provider blocks."""

    def __init__(self, providers: list[ContextProvider] | None = None,
                 clock: Callable[[], dt.datetime] | None = None) -> None:
        super().__init__()
        self.providers = list(providers or [])
        self._clock = clock or (lambda: dt.datetime.now().astimezone())
        self._by_run: OrderedDict[str, str] = OrderedDict()  # run_id -> its reminder (one per run)

    def reminder(self, request: ModelRequest) -> str:
        """The reminder text for this request: computed on a run's first model call, then reused.

        Every call of a run sends the same first message (so the provider's prompt cache
        keeps hitting), even across midnight.
        """
        run_id = getattr(request.runtime.context, "run_id", None) if request.runtime is not None else None
        if run_id is None:
            return self._compute(request)
        cached = self._by_run.get(run_id)
        if cached is None:
            cached = self._by_run[run_id] = self._compute(request)
            while len(self._by_run) > _MAX_RUNS:
                self._by_run.popitem(last=False)
        return cached

    def _compute(self, request: ModelRequest) -> str:
        now = self._clock()
        parts = [f"Current date: {now:%Y-%m-%d} ({now:%A})."]
        for provider in self.providers:
            block = provider(request)
            if block:
                parts.append(block)
        return "<system-reminder>\n" + "\n\n".join(parts) + "\n</system-reminder>"

    def prepare(self, request: ModelRequest) -> ModelRequest:
        """Inject the reminder into the first human message of the request."""
        return request.override(messages=inject_into_first_human(list(request.messages), self.reminder(request)))
