"""Public stream modes of the HTTP API and what each one delivers.

``messages-tuple`` is the public name of LangGraph's internal ``messages`` mode
(AI text as per-message-id deltas; over HTTP, events named ``messages`` carrying
``[chunk, metadata]`` as LangGraph Platform sends them). ``end`` and ``progress`` are
DeerFlow's opt-in modes: a stream carries the ``end`` event (usage, stop reason,
pending input) and ``progress`` events only when asked for. Public ``messages``,
``events``, ``debug`` and every other mode DeerFlow does not produce are rejected,
never silently replaced.
"""

from __future__ import annotations

from collections.abc import Iterable

from deerflow_nb.errors import UsageError

__all__ = ["ALWAYS_SENT", "DEERFLOW_STREAM_MODES", "LANGGRAPH_STREAM_MODES", "PUBLIC_STREAM_MODES",
           "normalize_stream_modes"]

#: The LangGraph Platform modes DeerFlow produces.
LANGGRAPH_STREAM_MODES = ("values", "messages-tuple", "updates", "custom")
#: DeerFlow's opt-in modes (never sent unless asked for, so LangGraph clients see LangGraph's streams).
DEERFLOW_STREAM_MODES = ("end", "progress")
PUBLIC_STREAM_MODES = (*LANGGRAPH_STREAM_MODES, *DEERFLOW_STREAM_MODES)
#: Event types every stream carries, whatever modes were asked for.
ALWAYS_SENT = frozenset({"metadata", "error"})


def normalize_stream_modes(modes: str | Iterable[str] | None, *, default: str = "values") -> list[str]:
    """The requested modes as a list; unsupported ones raise :class:`UsageError` naming them."""
    if modes is None:
        return [default]
    requested = [modes] if isinstance(modes, str) else list(modes)
    bad = [m for m in requested if m not in PUBLIC_STREAM_MODES]
    if bad:
        raise UsageError(f"stream_mode {', '.join(map(repr, bad))} is not supported; "
                         f"supported: {', '.join(PUBLIC_STREAM_MODES)}")
    return list(dict.fromkeys(requested)) or [default]
