"""``StreamEvent``: what a run streams, in the embedded client and over HTTP alike."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["EVENT_TYPES", "StreamEvent"]

EventType = Literal["values", "messages-tuple", "updates", "custom", "end", "error", "progress"]
EVENT_TYPES: tuple[str, ...] = ("values", "messages-tuple", "updates", "custom", "end", "error", "progress")


@dataclass(frozen=True)
class StreamEvent:
    """One event of a run.

    - ``values``: the full state (title, artifacts, todos, messages), as LangGraph sends it.
    - ``messages-tuple``: an AI text *delta* (concatenate per ``id``), a complete
      AI tool-call message, or a tool result — each tool call and result once.
    - ``updates``: ``{node: update}`` after each step (only for runs started with
      ``stream_updates=True``, e.g. an HTTP run that asked for ``stream_mode="updates"``).
    - ``custom``: events emitted by tools and middlewares (``type`` names them).
    - ``end``: the run finished; carries ``usage`` counted once per message id.
    - ``error``: the run failed; carries ``message`` and ``type``.
    - ``progress``: what the run is doing now (phase, elapsed seconds, tokens so far); sent at
      once and while the stream is quiet, never journaled (see :mod:`.progress`).
    """

    type: EventType
    data: Any = field(default=None)
    #: LangGraph's metadata of a ``messages-tuple`` event (``langgraph_node``, ``langgraph_step``, ...),
    #: sent over HTTP as the second item of the ``[chunk, metadata]`` tuple; not part of ``to_dict()``.
    meta: dict[str, Any] | None = field(default=None, compare=False, repr=False)
    #: LangGraph's subgraph namespace of a frame a subagent streamed (``tools:<task_id>``), only in runs
    #: started with ``stream_subgraphs``; over HTTP the event is named ``<mode>|<namespace>``. ``None``: the run's own.
    namespace: str | None = field(default=None)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form ``{"type": ..., "data": ...}`` (plus ``namespace`` when set)."""
        if self.namespace is not None:
            return {"type": self.type, "data": self.data, "namespace": self.namespace}
        return {"type": self.type, "data": self.data}
