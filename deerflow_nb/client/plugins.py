"""Deprecated location of :class:`~deerflow_nb.agent.plugins.AgentPlugin` (the plug-in seam lives in ``agent``)."""

from deerflow_nb.agent.plugins import AgentPlugin

__all__ = ["AgentPlugin"]
