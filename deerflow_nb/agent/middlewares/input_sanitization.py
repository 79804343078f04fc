"""Neutralize framework tags that a user types into a message.

DeerFlow wraps trusted context (date, memory, uploads, skills) in tags such as
``<system-reminder>``; a user message must not be able to forge them.
"""

from __future__ import annotations

import re

from langchain.agents.middleware import ModelRequest
from langchain_core.messages import HumanMessage

from deerflow_nb.agent.middlewares._base import ModelCallMiddleware

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


class InputSanitizationMiddleware(ModelCallMiddleware):
    """Outermost model wrapper: every inner middleware sees sanitized user text."""

    def prepare(self, request: ModelRequest) -> ModelRequest:
        """Sanitize user-authored human messages in the request (state is untouched)."""
        changed = False
        messages = []
        for message in request.messages:
            if isinstance(message, HumanMessage) and not _is_internal(message):
                if isinstance(message.content, str):
                    clean = sanitize_text(message.content)
                    if clean != message.content:
                        message = message.model_copy(update={"content": clean})
                        changed = True
                elif isinstance(message.content, list):
                    blocks = [
                        {**b, "text": sanitize_text(b["text"])}
                        if isinstance(b, dict) and isinstance(b.get("text"), str)
                        else b
                        for b in message.content
                    ]
                    if blocks != message.content:
                        message = message.model_copy(update={"content": blocks})
                        changed = True
            messages.append(message)
        return request.override(messages=messages) if changed else request
