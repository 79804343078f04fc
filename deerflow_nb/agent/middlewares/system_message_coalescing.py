"""Exactly one leading system message per model request."""

from __future__ import annotations

from langchain.agents.middleware import ModelRequest
from langchain_core.messages import BaseMessage, SystemMessage

from deerflow_nb.agent.middlewares._base import ModelCallMiddleware
from deerflow_nb.utils.memo import PrefixMap

__all__ = ["SystemMessageCoalescingMiddleware"]


def _is_system(message: BaseMessage) -> bool:
    return isinstance(message, SystemMessage)


def _text(message: SystemMessage) -> str:
    if isinstance(message.content, str):
        return message.content
    return "\n".join(b.get("text", "") if isinstance(b, dict) else str(b) for b in message.content)


class SystemMessageCoalescingMiddleware(ModelCallMiddleware):
    """Merges the system prompt and any system messages in the history into one.

    Strict backends (vLLM, SGLang, Qwen templates, Anthropic) reject non-leading
    system messages. Only the request changes; checkpointed state does not.
    """

    def __init__(self) -> None:
        super().__init__()
        # which messages are system messages, looked at once per message (a long thread's history
        # comes back as the same objects on every model call)
        self._is_system: PrefixMap[BaseMessage, bool] = PrefixMap(_is_system)

    def prepare(self, request: ModelRequest) -> ModelRequest:
        """Fold every ``SystemMessage`` of the request into ``request.system_message``."""
        if not any(self._is_system(request.messages)):
            return request
        extra = [m for m in request.messages if isinstance(m, SystemMessage)]
        parts = ([_text(request.system_message)] if request.system_message else []) + [_text(m) for m in extra]
        merged = SystemMessage(content="\n\n".join(p for p in parts if p))
        rest = [m for m in request.messages if not isinstance(m, SystemMessage)]
        return request.override(system_message=merged, messages=rest)  # type: ignore[arg-type]
