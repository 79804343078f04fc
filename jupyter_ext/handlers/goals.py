"""Goal mode routes: ``GET`` / ``PUT`` / ``DELETE /threads/{id}/goal`` (same bodies as ``thread.get_goal()`` & co.)."""

from __future__ import annotations

from jupyter_server.auth.decorator import authorized
from tornado import web

from jupyter_ext.handlers.base import API, DeerFlowHandler, api_method
from jupyter_ext.schemas import GoalSetRequest

__all__ = ["default_handlers"]


class GoalHandler(DeerFlowHandler):
    """``GET`` / ``PUT`` / ``DELETE /threads/{id}/goal``: ``{"goal": {...}}`` or ``{"goal": null}``."""

    @web.authenticated
    @authorized
    @api_method
    async def get(self, thread_id: str) -> None:
        """The thread's active goal (null when none)."""
        self.write_json(await self.service.call(self.service.engine.goals.get(thread_id, self.user_id)))

    @web.authenticated
    @authorized
    @api_method
    async def put(self, thread_id: str) -> None:
        """Set (replace) the thread's goal; 409 while a run is going, 422 for more than 8 continuations."""
        body = self.parse(GoalSetRequest)
        goals = self.service.engine.goals
        self.write_json(await self.service.call(goals.set(thread_id, self.user_id, body.objective,
                                                          body.max_continuations)))

    @web.authenticated
    @authorized
    @api_method
    async def delete(self, thread_id: str) -> None:
        """Clear the thread's goal; 409 while a run is going."""
        self.write_json(await self.service.call(self.service.engine.goals.clear(thread_id, self.user_id)))


default_handlers = [
    (rf"/{API}/threads/(?P<thread_id>[^/]+)/goal", GoalHandler),
]
