"""``agent.skills`` (filled in by the skills feature)."""

from __future__ import annotations

from deerflow_nb.client.mixins import PluginHost

__all__ = ["SkillsMixin"]


class SkillsMixin(PluginHost):
    """Skills surface of :class:`~deerflow_nb.DeerFlow`."""
