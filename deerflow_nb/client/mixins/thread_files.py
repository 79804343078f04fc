"""``thread.upload()``, ``uploads()``, ``artifact()``, ``usage()`` (filled in by the files feature)."""

from __future__ import annotations

__all__ = ["ThreadFilesMixin"]


class ThreadFilesMixin:
    """Files and usage surface of :class:`~deerflow_nb.Thread`."""
