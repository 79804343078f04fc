"""Summarize old history when the context grows long; the summary lives in ``summary_text``."""

from __future__ import annotations

import logging
from typing import Any

from langchain.agents.middleware import ModelRequest, ModelResponse
from langchain.agents.middleware.types import ModelCallResult
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage, ToolMessage

from deerflow_nb.agent.middlewares._base import ModelCallMiddleware, with_update
from deerflow_nb.config.schema import SummarizationConfig

__all__ = ["SummarizationMiddleware", "estimate_tokens", "split_for_summary"]

logger = logging.getLogger(__name__)


def estimate_tokens(messages: list[Any]) -> int:
    """Rough token count (4 characters a token); nothing is downloaded."""
    return sum(len(str(m.content)) for m in messages) // 4 + 4 * len(messages)


def split_for_summary(messages: list[Any], keep: int) -> tuple[list[Any], list[Any]]:
    """Split into (old, kept) without separating tool results from their AI call."""
    if len(messages) <= keep:
        return [], list(messages)
    cut = len(messages) - keep
    while cut > 0 and isinstance(messages[cut], ToolMessage):
        cut -= 1
    return list(messages[:cut]), list(messages[cut:])


def _summary_block(text: str) -> HumanMessage:
    return HumanMessage(content=f"<summary>\nSummary of the earlier conversation:\n{text}\n</summary>",
                        additional_kwargs={"deerflow_internal": True, "hide_from_ui": True})


class SummarizationMiddleware(ModelCallMiddleware):
    """Replaces old messages by a summary when ``trigger_tokens``/``trigger_messages`` is exceeded."""

    def __init__(self, config: SummarizationConfig, model: BaseChatModel | None = None) -> None:
        super().__init__()
        self.config = config
        self.model = model

    def _triggered(self, messages: list[Any]) -> bool:
        if self.config.trigger_messages and len(messages) > self.config.trigger_messages:
            return True
        return estimate_tokens(messages) > self.config.trigger_tokens

    def _prompt(self, previous: str | None, old: list[Any]) -> str:
        lines = [f"{type(m).__name__.replace('Message', '')}: {m.content}" for m in old
                 if isinstance(m, (HumanMessage, AIMessage, ToolMessage))]
        head = f"Previous summary:\n{previous}\n\n" if previous else ""
        return (f"{head}Summarize this conversation so far in a few short paragraphs, keeping facts, decisions, "
                f"file paths and open tasks:\n\n" + "\n".join(lines)[-40_000:])

    def _apply(self, request: ModelRequest, summary: str, old: list[Any], kept: list[Any]) -> tuple[ModelRequest, dict]:
        update = {"summary_text": summary, "messages": [RemoveMessage(id=m.id) for m in old if m.id]}
        return request.override(messages=[_summary_block(summary), *kept]), update

    def _model(self, request: ModelRequest) -> BaseChatModel:
        if self.model is not None:
            return self.model
        if self.config.model_name:
            from deerflow_nb.models import create_chat_model

            return create_chat_model(self.config.model_name)
        return request.model

    def wrap_model_call(self, request: ModelRequest, handler: Any) -> ModelCallResult:
        """Summarize if needed, then call the model on the compacted request."""
        summary: str | None = request.state.get("summary_text")  # type: ignore[assignment]
        messages = list(request.messages)
        update = None
        if self._triggered(messages):
            old, kept = split_for_summary(messages, self.config.keep_messages)
            if old:
                text = str(self._model(request).invoke(self._prompt(summary, old)).content)
                request, update = self._apply(request, text, old, kept)
        elif summary:
            request = request.override(messages=[_summary_block(summary), *messages])
        response: ModelResponse = handler(request)
        return with_update(response, update)

    async def awrap_model_call(self, request: ModelRequest, handler: Any) -> ModelCallResult:
        """Async twin of :meth:`wrap_model_call`."""
        summary: str | None = request.state.get("summary_text")  # type: ignore[assignment]
        messages = list(request.messages)
        update = None
        if self._triggered(messages):
            old, kept = split_for_summary(messages, self.config.keep_messages)
            if old:
                reply = await self._model(request).ainvoke(self._prompt(summary, old))
                request, update = self._apply(request, str(reply.content), old, kept)
        elif summary:
            request = request.override(messages=[_summary_block(summary), *messages])
        response: ModelResponse = await handler(request)
        return with_update(response, update)
