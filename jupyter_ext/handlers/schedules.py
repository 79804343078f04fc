"""Scheduled runs: ``/scheduled-tasks`` (the same bodies as ``agent.schedules``).

The scheduler loop that dispatches ticks runs in this server process (see ``DeerFlowExtension``);
these routes manage definitions, list their occurrences and trigger a run at once.
"""

from __future__ import annotations

from jupyter_server.auth.decorator import authorized
from tornado import web

from jupyter_ext.handlers.base import API, DeerFlowHandler, api_method
from jupyter_ext.schemas import ScheduledTaskCreateRequest

__all__ = ["default_handlers"]


class ScheduledTasksHandler(DeerFlowHandler):
    """``GET`` / ``POST /scheduled-tasks``: the user's tasks; a new one."""

    @web.authenticated
    @authorized
    @api_method
    async def get(self) -> None:
        """The user's scheduled tasks, oldest first."""
        self.write_json(await self.service.call(self.service.gateway.list_scheduled_tasks(self.user_id)))

    @web.authenticated
    @authorized
    @api_method
    async def post(self) -> None:
        """Create a scheduled task (cron or every_seconds); 422 naming the field of an invalid schedule."""
        body = self.parse(ScheduledTaskCreateRequest)
        self.write_json(await self.service.call(self.service.gateway.create_scheduled_task(self.user_id, body)))


class ScheduledTaskHandler(DeerFlowHandler):
    """``GET`` / ``DELETE /scheduled-tasks/{id}``."""

    @web.authenticated
    @authorized
    @api_method
    async def get(self, task_id: str) -> None:
        """One scheduled task (404 for another user's)."""
        self.write_json(await self.service.call(self.service.gateway.get_scheduled_task(self.user_id, task_id)))

    @web.authenticated
    @authorized
    @api_method
    async def delete(self, task_id: str) -> None:
        """Delete the task and its history (its threads and runs stay)."""
        self.write_json(await self.service.call(self.service.gateway.delete_scheduled_task(self.user_id, task_id)))


class ScheduledTaskPauseHandler(DeerFlowHandler):
    """``POST /scheduled-tasks/{id}/pause``."""

    @web.authenticated
    @authorized
    @api_method
    async def post(self, task_id: str) -> None:
        """Stop dispatching the task's ticks; the task."""
        self.write_json(await self.service.call(self.service.gateway.pause_scheduled_task(self.user_id, task_id)))


class ScheduledTaskResumeHandler(DeerFlowHandler):
    """``POST /scheduled-tasks/{id}/resume``."""

    @web.authenticated
    @authorized
    @api_method
    async def post(self, task_id: str) -> None:
        """Dispatch the task again from its next tick after now; the task."""
        self.write_json(await self.service.call(self.service.gateway.resume_scheduled_task(self.user_id, task_id)))


class ScheduledTaskTriggerHandler(DeerFlowHandler):
    """``POST /scheduled-tasks/{id}/trigger``."""

    @web.authenticated
    @authorized
    @api_method
    async def post(self, task_id: str) -> None:
        """Run the task now; its occurrence (409 while its previous run is active)."""
        self.write_json(await self.service.call(self.service.gateway.trigger_scheduled_task(self.user_id, task_id)))


class ScheduledTaskRunsHandler(DeerFlowHandler):
    """``GET /scheduled-tasks/{id}/runs?limit=``."""

    @web.authenticated
    @authorized
    @api_method
    async def get(self, task_id: str) -> None:
        """The task's occurrences, newest first (runs and skipped ticks)."""
        limit = self.query_int("limit", 20, ge=1, le=1000)
        gateway = self.service.gateway
        self.write_json(await self.service.call(gateway.list_scheduled_task_runs(self.user_id, task_id, limit)))


_TASK = rf"/{API}/scheduled-tasks/(?P<task_id>[^/]+)"
default_handlers = [
    (rf"/{API}/scheduled-tasks", ScheduledTasksHandler),
    (rf"{_TASK}/pause", ScheduledTaskPauseHandler),
    (rf"{_TASK}/resume", ScheduledTaskResumeHandler),
    (rf"{_TASK}/trigger", ScheduledTaskTriggerHandler),
    (rf"{_TASK}/runs", ScheduledTaskRunsHandler),
    (_TASK, ScheduledTaskHandler),
]
