"""Put per-turn context (the date, later memory) into the first human message.

The system prompt stays byte-identical across turns and days, so providers can
reuse their prompt-prefix cache. Only the model request changes; state does not.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

from langchain.agents.middleware import ModelRequest
from langchain_core.messages import HumanMessage

from deerflow_nb.agent.middlewares._base import ModelCallMiddleware

__all__ = ["ContextProvider", "DynamicContextMiddleware", "inject_into_first_human"]

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

    def reminder(self, request: ModelRequest) -> str:
        """The reminder text for this request."""
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
