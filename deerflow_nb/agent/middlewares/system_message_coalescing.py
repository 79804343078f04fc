"""Exactly one leading system message per model request."""

from __future__ import annotations

from langchain.agents.middleware import ModelRequest
from langchain_core.messages import SystemMessage

from deerflow_nb.agent.middlewares._base import ModelCallMiddleware

__all__ = ["SystemMessageCoalescingMiddleware"]


def _text(message: SystemMessage) -> str:
    if isinstance(message.content, str):
        return message.content
    return "\n".join(b.get("text", "") if isinstance(b, dict) else str(b) for b in message.content)


class SystemMessageCoalescingMiddleware(ModelCallMiddleware):
    """Merges the system prompt and any system messages in the history into one.

    Strict backends (vLLM, SGLang, Qwen templates, Anthropic) reject non-leading
    system messages. Only the request changes; checkpointed state does not.
    """

    def prepare(self, request: ModelRequest) -> ModelRequest:
        """Fold every ``SystemMessage`` of the request into ``request.system_message``."""
        extra = [m for m in request.messages if isinstance(m, SystemMessage)]
        if not extra:
            return request
        parts = ([_text(request.system_message)] if request.system_message else []) + [_text(m) for m in extra]
        merged = SystemMessage(content="\n\n".join(p for p in parts if p))
        rest = [m for m in request.messages if not isinstance(m, SystemMessage)]
        return request.override(system_message=merged, messages=rest)  # type: ignore[arg-type]
