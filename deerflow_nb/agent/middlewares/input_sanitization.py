"""Neutralize framework tags that a user types into a message.

DeerFlow wraps trusted context (date, memory, uploads, skills) in tags such as
``<system-reminder>``; a user message must not be able to forge them.
"""

from __future__ import annotations

import re

from langchain.agents.middleware import ModelRequest
from langchain_core.messages import BaseMessage, HumanMessage

from deerflow_nb.agent.middlewares._base import ModelCallMiddleware
from deerflow_nb.utils.memo import PrefixMap

__all__ = ["RESERVED_TAGS", "InputSanitizationMiddleware", "sanitize_text"]

RESERVED_TAGS = ("system-reminder", "memory", "uploaded_files", "skill", "summary", "durable_context")
_TAG_RE = re.compile(r"<(/?)\s*(" + "|".join(map(re.escape, RESERVED_TAGS)) + r")\b([^>]*)>", re.IGNORECASE)
_CONTROL_RE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def sanitize_text(text: str) -> str:
    """Escape reserved tags and drop control characters."""
    text = _CONTROL_RE.sub("", text)
    return _TAG_RE.sub(lambda m: f"&lt;{m.group(1)}{m.group(2)}{m.group(3)}&gt;", text)


def _is_internal(message: HumanMessage) -> bool:
    return bool(message.additional_kwargs.get("deerflow_internal"))


def _sanitized(message: BaseMessage) -> BaseMessage:
    """``message`` with its user-authored text sanitized (the same object when nothing changes)."""
    if not isinstance(message, HumanMessage) or _is_internal(message):
        return message
    if isinstance(message.content, str):
        clean = sanitize_text(message.content)
        if clean != message.content:
            return message.model_copy(update={"content": clean})
    elif isinstance(message.content, list):
        blocks = [
            {**b, "text": sanitize_text(b["text"])}
            if isinstance(b, dict) and isinstance(b.get("text"), str)
            else b
            for b in message.content
        ]
        if blocks != message.content:
            return message.model_copy(update={"content": blocks})
    return message


def _needs_sanitizing(message: BaseMessage) -> bool:
    return _sanitized(message) is not message


class InputSanitizationMiddleware(ModelCallMiddleware):
    """Outermost model wrapper: every inner middleware sees sanitized user text."""

    def __init__(self) -> None:
        super().__init__()
        # each message is checked once, not on every model call of every later turn
        # (a flag per message, so the common case, nothing to change, passes the request's own list on:
        # a memoised copy may be an earlier, equal object, and comparing those would cost a pass)
        self._sanitized: PrefixMap[BaseMessage, BaseMessage] = PrefixMap(_sanitized)
        self._flags: PrefixMap[BaseMessage, bool] = PrefixMap(_needs_sanitizing)

    def prepare(self, request: ModelRequest) -> ModelRequest:
        """Sanitize user-authored human messages in the request (state is untouched)."""
        if not any(self._flags(request.messages)):  # a C-speed pass over bools
            return request
        return request.override(messages=self._sanitized(request.messages))  # type: ignore[arg-type]
