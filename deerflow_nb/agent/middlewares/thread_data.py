"""Create the thread's user-data folders and record their host paths in state."""

from __future__ import annotations

import threading

from langchain.agents.middleware import ModelRequest, ModelResponse
from langchain.agents.middleware.types import ModelCallResult

from deerflow_nb.agent.middlewares._base import ModelCallMiddleware, context_of, run_blocking, with_update

__all__ = ["ThreadDataMiddleware"]


class ThreadDataMiddleware(ModelCallMiddleware):
    """Ensures ``{home}/users/{user}/threads/{thread}/user-data/{workspace,uploads,outputs}`` exist.

    Folders are created once per (user, thread) per process, so later turns pay nothing.
    """

    def __init__(self) -> None:
        super().__init__()
        self._done: set[tuple[str, str]] = set()
        self._lock = threading.Lock()

    def _ensure(self, request: ModelRequest) -> dict[str, str] | None:
        ctx = context_of(request)
        if ctx.paths is None or not ctx.thread_id:
            return None
        key = (ctx.user_id, ctx.thread_id)
        base = ctx.paths.user_data_dir(ctx.user_id, ctx.thread_id)
        with self._lock:
            if key not in self._done:
                ctx.paths.ensure_thread_dirs(ctx.user_id, ctx.thread_id)
                self._done.add(key)
        return {
            "workspace_path": str(base / "workspace"),
            "uploads_path": str(base / "uploads"),
            "outputs_path": str(base / "outputs"),
        }

    def finish(self, request: ModelRequest, response: ModelResponse) -> ModelCallResult:
        """Record the paths in ``thread_data`` on the first model call of a thread."""
        if request.state.get("thread_data"):
            return response
        return with_update(response, {"thread_data": self._ensure(request)})

    async def afinish(self, request: ModelRequest, response: ModelResponse) -> ModelCallResult:
        """Async twin of :meth:`finish` (folder creation runs in a thread unless the run already did it)."""
        if request.state.get("thread_data"):
            return response
        if context_of(request).extra.get("thread_dirs_ready"):
            return with_update(response, {"thread_data": self._paths_only(request)})
        return with_update(response, {"thread_data": await run_blocking(self._ensure, request)})

    def _paths_only(self, request: ModelRequest) -> dict[str, str] | None:
        ctx = context_of(request)
        if ctx.paths is None or not ctx.thread_id:
            return None
        base = ctx.paths.user_data_dir(ctx.user_id, ctx.thread_id)
        return {name + "_path": str(base / name) for name in ("workspace", "uploads", "outputs")}
