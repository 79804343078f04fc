"""``agent.ui()`` (filled in by the widgets feature)."""

from __future__ import annotations

from deerflow_nb.client.mixins import PluginHost

__all__ = ["UiMixin"]


class UiMixin(PluginHost):
    """Widget surface of :class:`~deerflow_nb.DeerFlow`."""
