"""Deprecated location of :class:`~deerflow_nb.runtime.loop.BackgroundLoop` (the runtime owns its loop)."""

from deerflow_nb.runtime.loop import BackgroundLoop

__all__ = ["BackgroundLoop"]
