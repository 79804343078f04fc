"""Checkpoints as a user reads them: ``thread.history()``'s entries, the same in both modes."""

from __future__ import annotations

from typing import Any

from deerflow_nb.runtime.serialize import message_text

__all__ = ["PREVIEW_CHARS", "readable_checkpoint"]

#: How much of the last message an entry shows.
PREVIEW_CHARS = 120


def _kind_and_text(message: Any) -> tuple[str, str]:
    if isinstance(message, dict):  # the HTTP form of a message
        content = message.get("content", "")
        text = content if isinstance(content, str) else "".join(
            b.get("text", "") if isinstance(b, dict) else str(b) for b in content or [])
        return str(message.get("type", "")), text
    return str(getattr(message, "type", "")), message_text(message)


def readable_checkpoint(item: dict[str, Any]) -> dict[str, Any]:
    """``item`` (a backend history item) plus ``source``, ``messages``, ``last_message_type`` and ``last_message``.

    ``last_message`` is the first :data:`PREVIEW_CHARS` characters of the checkpoint's last
    message, on one line (tool calls without text read ``→ tool_name(...)``).
    """
    messages = list((item.get("values") or {}).get("messages") or [])
    kind, preview = "", ""
    if messages:
        last = messages[-1]
        kind, text = _kind_and_text(last)
        calls = last.get("tool_calls") if isinstance(last, dict) else getattr(last, "tool_calls", None)
        if not text.strip() and calls:
            text = ", ".join(f"→ {c.get('name')}(...)" for c in calls)
        preview = " ".join(text.split())
        if len(preview) > PREVIEW_CHARS:
            preview = preview[:PREVIEW_CHARS - 1] + "…"
    return {**item, "source": (item.get("metadata") or {}).get("source"), "messages": len(messages),
            "last_message_type": kind or None, "last_message": preview}
