"""Jupyter server extension ``deerflow``: the HTTP gateway (LangGraph-compatible) and the run manager.

Installed packages enable it through ``etc/jupyter/jupyter_server_config.d/deerflow.json``;
``jupyter server extension enable jupyter_ext`` does the same by hand.
"""

from __future__ import annotations

from typing import Any

__all__ = ["_jupyter_server_extension_points"]


def _jupyter_server_extension_points() -> list[dict[str, Any]]:
    """Entry point Jupyter Server uses to find :class:`~jupyter_ext.app.DeerFlowExtension`."""
    from jupyter_ext.app import DeerFlowExtension

    return [{"module": "jupyter_ext.app", "app": DeerFlowExtension}]
