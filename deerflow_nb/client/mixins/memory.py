"""``agent.memory`` (filled in by the memory feature)."""

from __future__ import annotations

from deerflow_nb.client.mixins import PluginHost

__all__ = ["MemoryMixin"]


class MemoryMixin(PluginHost):
    """Memory surface of :class:`~deerflow_nb.DeerFlow`."""
