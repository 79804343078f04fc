"""``agent.ui()``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from deerflow_nb.client.mixins import PluginHost

if TYPE_CHECKING:
    from deerflow_nb.widgets import ChatWidget

__all__ = ["UiMixin"]


class UiMixin(PluginHost):
    """Widget surface of :class:`~deerflow_nb.DeerFlow`."""

    def ui(self, message: str | None = None, *, thread_id: str | None = None,
           options: Mapping[str, Any] | None = None, **run_options: Any) -> ChatWidget:
        """A chat widget on a new thread (or the existing ``thread_id``); see :meth:`Thread.ui`."""
        thread = self.thread(thread_id)  # type: ignore[attr-defined]  # provided by DeerFlow
        return thread.ui(message, options=options, **run_options)  # type: ignore[no-any-return]
