"""Deprecated location of the runtime's composition root: use :class:`deerflow_nb.runtime.engine.Runtime`."""

from deerflow_nb.runtime.engine import RunOptions, Runtime

#: The old name of :class:`~deerflow_nb.runtime.engine.Runtime`.
EmbeddedEngine = Runtime

__all__ = ["EmbeddedEngine", "RunOptions", "Runtime"]
