"""Generate the thread title after the first complete exchange."""

from __future__ import annotations

import logging
import re
from typing import Any

from langchain.agents.middleware import ModelRequest, ModelResponse
from langchain.agents.middleware.types import ModelCallResult
from langchain_core.messages import HumanMessage

from deerflow_nb.agent.middlewares._base import ModelCallMiddleware, last_ai, with_update
from deerflow_nb.config.schema import TitleConfig

__all__ = ["TitleMiddleware", "fallback_title"]

logger = logging.getLogger(__name__)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(b.get("text", "") for b in content if isinstance(b, dict))
    return str(content)


def fallback_title(text: str, max_words: int = 6, max_chars: int = 60) -> str:
    """A title from the first words of the user's message (no model call)."""
    text = re.sub(r"<[^>]+>.*?</[^>]+>", " ", text, flags=re.S)  # drop injected context blocks
    words = re.sub(r"\s+", " ", text).strip().split(" ")
    title = " ".join(words[:max_words]).strip(" .,:;!?")
    cut = len(words) > max_words
    if len(title) > max_chars:  # at a word boundary (a single long word is cut inside)
        head = title[: max_chars - 1]
        title = head.rsplit(" ", 1)[0] if " " in head else head
        cut = True
    if cut:  # the title is the message's beginning: say so
        title = title.rstrip(" .,:;!?-") + "…"
    return title or "New conversation"


class TitleMiddleware(ModelCallMiddleware):
    """Sets ``title`` once, when the first final answer arrives.

    With ``title.model_name`` unset the title comes from the first user message;
    otherwise that model is asked for a short title (falling back on any error).
    """

    def __init__(self, config: TitleConfig | None = None) -> None:
        super().__init__()
        self.config = config or TitleConfig()

    def _needs_title(self, request: ModelRequest, response: ModelResponse) -> str | None:
        if not self.config.enabled or request.state.get("title"):
            return None
        message = last_ai(response)
        if message is None or message.tool_calls:
            return None
        human = next((m for m in request.state.get("messages", []) if isinstance(m, HumanMessage)
                      and not m.additional_kwargs.get("deerflow_internal")), None)
        return _text(human.content) if human is not None else None

    def _prompt(self, first: str) -> str:
        return (f"Write a title of at most {self.config.max_words} words for a conversation that starts with "
                f"this message. Reply with the title only.\n\n{first[:2000]}")

    def _clean(self, raw: Any, first: str) -> str:
        text = _text(raw).strip().strip('"').strip()
        return fallback_title(text or first, self.config.max_words, self.config.max_chars)

    def finish(self, request: ModelRequest, response: ModelResponse) -> ModelCallResult:
        """Attach the title update on the first final answer."""
        first = self._needs_title(request, response)
        if first is None:
            return response
        title = fallback_title(first, self.config.max_words, self.config.max_chars)
        if self.config.model_name:
            try:
                from deerflow_nb.models import create_chat_model

                title = self._clean(create_chat_model(self.config.model_name).invoke(self._prompt(first)).content,
                                    first)
            except Exception as exc:  # a title is never worth failing a run
                logger.warning("title model failed, using fallback: %s", exc)
        return with_update(response, {"title": title})

    async def afinish(self, request: ModelRequest, response: ModelResponse) -> ModelCallResult:
        """Async twin of :meth:`finish`."""
        first = self._needs_title(request, response)
        if first is None:
            return response
        title = fallback_title(first, self.config.max_words, self.config.max_chars)
        if self.config.model_name:
            try:
                from deerflow_nb.models import create_chat_model

                reply = await create_chat_model(self.config.model_name).ainvoke(self._prompt(first))
                title = self._clean(reply.content, first)
            except Exception as exc:
                logger.warning("title model failed, using fallback: %s", exc)
        return with_update(response, {"title": title})
