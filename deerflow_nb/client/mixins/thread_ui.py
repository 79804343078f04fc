"""``thread.ui()``, ``thread.workspace_changes()`` and ``thread.workspace_diff()``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from deerflow_nb.errors import NotFoundError

if TYPE_CHECKING:
    from deerflow_nb.widgets import ChatWidget, WorkspaceDiff

__all__ = ["ThreadUiMixin"]


class ThreadUiMixin:
    """Widget surface of :class:`~deerflow_nb.Thread`."""

    id: str
    _engine: Any
    _loop: Any

    def ui(self, message: str | None = None, *, run: Any = None, options: Mapping[str, Any] | None = None,
           **run_options: Any) -> ChatWidget:
        """The chat widget for this thread, with its history.

        ``message`` is sent at once and streams in the background (the cell returns
        immediately); ``run`` attaches to a run already started. Run options
        (``plan_mode=True``, ``model_name=...``) apply to every message sent from the widget.
        """
        from deerflow_nb.widgets import ChatWidget

        return ChatWidget(self, message=message, run=run, options={**(options or {}), **run_options})

    async def _aworkspace_changes(self, run_id: str | None) -> dict[str, Any]:
        store = await self._engine.store()
        user_id = self._engine.user_id
        await store.get_thread(self.id, user_id)
        if run_id is None:
            latest = await store.runs.list_by_thread(self.id, user_id, limit=1)
            if not latest:
                return {"run_id": None, "thread_id": self.id, "status": None, "finished_at": None,
                        "changes": [], "truncated": False}
            info = latest[0]
        else:
            info = await store.runs.get(run_id, user_id)
            if info is None or info.thread_id != self.id:
                raise NotFoundError(f"run {run_id!r} not found on thread {self.id!r}")
        entries = await store.events.list(user_id, run_id=info.run_id, event_type="workspace_changes")
        if entries:
            return dict(entries[-1].payload)
        # the runtime records a review only when files changed
        return {"run_id": info.run_id, "thread_id": self.id, "status": info.status, "finished_at": None,
                "changes": [], "truncated": False}

    def workspace_changes(self, run_id: str | None = None) -> dict[str, Any]:
        """What a run (default: the latest) added, modified or deleted in ``workspace`` and ``outputs``.

        Returns ``{"run_id", "thread_id", "status", "finished_at", "changes", "truncated"}``;
        each change has ``path``, ``area``, ``status`` (added / modified / deleted), ``size``,
        ``old_size``, ``binary``, ``too_large``, ``sensitive`` and ``diff`` (unified text,
        ``None`` for metadata-only files). A thread without runs has no changes.
        """
        return self._loop.run(self._aworkspace_changes(run_id), method="Thread.workspace_changes")  # type: ignore[no-any-return]

    async def aworkspace_changes(self, run_id: str | None = None) -> dict[str, Any]:
        """Async twin of :meth:`workspace_changes`."""
        return await self._loop.arun(self._aworkspace_changes(run_id))  # type: ignore[no-any-return]

    def workspace_diff(self, run_id: str | None = None, *, mode: str = "unified") -> WorkspaceDiff:
        """The :class:`~deerflow_nb.widgets.WorkspaceDiff` widget for a run (default: the latest)."""
        from deerflow_nb.widgets import WorkspaceDiff

        return WorkspaceDiff(self, run_id=run_id, mode=mode)
