"""Feature surfaces of ``DeerFlow`` and ``Thread``, one mixin per capability.

Each mixin adds methods/properties and may contribute :class:`AgentPlugin`s by
extending ``_make_plugins`` cooperatively (``return [*super()._make_plugins(), ...]``).
"""

from __future__ import annotations

from typing import Any

__all__ = ["PluginHost"]


class PluginHost:
    """End of the cooperative ``_make_plugins`` chain."""

    def _make_plugins(self) -> list[Any]:
        return []
