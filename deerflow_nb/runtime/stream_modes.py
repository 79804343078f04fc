"""Public stream modes of the HTTP API and what each one delivers.

``messages-tuple`` is the public name of LangGraph's internal ``messages`` mode
(AI text as per-message-id deltas). Public ``messages``, ``events`` and every other
mode DeerFlow does not produce are rejected, never silently replaced.
"""

from __future__ import annotations

from collections.abc import Iterable

from deerflow_nb.errors import UsageError

__all__ = ["ALWAYS_SENT", "PUBLIC_STREAM_MODES", "normalize_stream_modes"]

PUBLIC_STREAM_MODES = ("values", "messages-tuple", "custom")
#: Event types every stream carries, whatever modes were asked for.
ALWAYS_SENT = frozenset({"metadata", "end", "error"})


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
