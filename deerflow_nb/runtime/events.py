"""``StreamEvent``: what a run streams, in the embedded client and over HTTP alike."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["EVENT_TYPES", "StreamEvent"]

EventType = Literal["values", "messages-tuple", "custom", "end", "error", "progress"]
EVENT_TYPES: tuple[str, ...] = ("values", "messages-tuple", "custom", "end", "error", "progress")


@dataclass(frozen=True)
class StreamEvent:
    """One event of a run.

    - ``values``: a state snapshot (title, artifacts, todos, messages); AI text
      already streamed is not sent again (its ``content`` is ``None`` and
      ``streamed`` is true).
    - ``messages-tuple``: an AI text *delta* (concatenate per ``id``), a complete
      AI tool-call message, or a tool result — each tool call and result once.
    - ``custom``: events emitted by tools and middlewares (``type`` names them).
    - ``end``: the run finished; carries ``usage`` counted once per message id.
    - ``error``: the run failed; carries ``message`` and ``type``.
    - ``progress``: what the run is doing now (phase, elapsed seconds, tokens so far); sent at
      once and while the stream is quiet, never journaled (see :mod:`.progress`).
    """

    type: EventType
    data: Any = field(default=None)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form ``{"type": ..., "data": ...}``."""
        return {"type": self.type, "data": self.data}
