"""``agent.mcp``, subagents and ``agent.usage()`` (filled in by those features)."""

from __future__ import annotations

from deerflow_nb.client.mixins import PluginHost

__all__ = ["ExtensionsMixin"]


class ExtensionsMixin(PluginHost):
    """MCP, subagent and usage surface of :class:`~deerflow_nb.DeerFlow`."""
