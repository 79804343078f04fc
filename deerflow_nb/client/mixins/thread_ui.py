"""``thread.ui()`` and ``thread.workspace_changes()`` (filled in by the widgets feature)."""

from __future__ import annotations

__all__ = ["ThreadUiMixin"]


class ThreadUiMixin:
    """Widget surface of :class:`~deerflow_nb.Thread`."""
