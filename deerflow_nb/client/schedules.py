"""``agent.schedules``: scheduled runs, the same in both modes (the ``/scheduled-tasks`` routes).

Written once over the :class:`~deerflow_nb.client.backend.Backend`; every answer comes from
:class:`~deerflow_nb.runtime.schedules.ScheduledTaskService` (in process, or over HTTP) and is
the route's JSON body. Runs are dispatched by the scheduler loop of the Jupyter server
extension; an embedded client stores definitions and :meth:`Schedules.trigger` runs at once,
and runs the loop only when asked (:meth:`Schedules.start_scheduler`).
"""

from __future__ import annotations

import builtins
import datetime as dt
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

from deerflow_nb.errors import UsageError
from deerflow_nb.runtime.schedules import check_task_id

if TYPE_CHECKING:
    from deerflow_nb.client.backend import Backend

__all__ = ["Schedules"]


def _thread_id(thread: Any) -> str | None:
    if thread == "fresh":
        return None
    from deerflow_nb.client.thread import Thread

    thread_id = thread.id if isinstance(thread, Thread) else thread
    if not isinstance(thread_id, str) or not thread_id:
        raise UsageError(f"thread: 'fresh' or a thread id, got {thread!r}")
    return thread_id


def _body(message: str, cron: str | None, every: Any, thread: Any, overlap: str,
          timezone: Any = None) -> dict[str, Any]:
    """The ``POST /scheduled-tasks`` body of :meth:`Schedules.create`'s arguments (validated where it is stored)."""
    thread_id = _thread_id(thread)
    body: dict[str, Any] = {"message": message, "overlap_policy": overlap,
                            "context_mode": "fresh_thread_per_run" if thread_id is None else "reuse_thread"}
    if cron is not None:
        body["cron"] = cron
    if timezone is not None:  # a ZoneInfo goes as its IANA key; anything else is checked where it is stored
        body["timezone"] = timezone.key if isinstance(timezone, ZoneInfo) and timezone.key else timezone
    if every is not None:
        body["every_seconds"] = every.total_seconds() if isinstance(every, dt.timedelta) else every
    if thread_id is not None:
        body["thread_id"] = thread_id
    return body


def _limit(limit: Any) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 1000:
        raise UsageError("limit: must be an integer between 1 and 1000")
    return limit


class Schedules:
    """The user's scheduled tasks: ``create``, ``list``, ``get``, ``pause``, ``resume``, ``delete``, ``trigger``.

    And their history (:meth:`runs`). Every answer is the matching route's JSON body. Each method has an
    async twin (``acreate``, ``alist``, ``aget``, ``apause``, ``aresume``, ``adelete``, ``atrigger``, ``aruns``).
    """

    def __init__(self, backend: Backend) -> None:
        self._backend = backend
        self._loop = backend.loop

    def __repr__(self) -> str:
        return "<Schedules>"

    def _call(self, name: str, *args: Any) -> Any:
        return self._loop.run(self._backend.gateway(name, *args), method=f"Schedules.{name}")

    async def _acall(self, name: str, *args: Any) -> Any:
        return await self._loop.arun(self._backend.gateway(name, *args))

    def create(self, message: str, *, cron: str | None = None, every: float | dt.timedelta | None = None,
               timezone: str | ZoneInfo | None = None, thread: Any = "fresh", overlap: str = "skip") -> dict[str, Any]:
        """Schedule ``message``: on a five-field ``cron`` expression or ``every`` seconds (or a timedelta).

        ``cron`` is read in ``timezone``, an IANA name such as ``"Europe/Paris"`` (or a ``ZoneInfo``),
        daylight saving time included; default UTC. It is for cron schedules only (refused with
        ``every``); the task's ``timezone`` names it, and its ``next_run_at`` is UTC.

        ``thread="fresh"`` runs each time on a new thread; a thread id (or a ``Thread``)
        continues that thread. ``overlap="skip"``: a tick while the previous run is still
        active is recorded as ``skipped``. Runs are non-interactive. Returns the task
        (``id``, ``timezone``, ``next_run_at``, ...); an invalid schedule (an unknown zone too)
        is :class:`~deerflow_nb.errors.UsageError`.
        """
        return self._call("create_scheduled_task",  # type: ignore[no-any-return]
                          _body(message, cron, every, thread, overlap, timezone))

    def list(self) -> list[dict[str, Any]]:
        """The user's tasks, oldest first (``GET /scheduled-tasks``'s ``tasks``)."""
        return list(self._call("list_scheduled_tasks")["tasks"])

    def get(self, task_id: str) -> dict[str, Any]:
        """One task; :class:`~deerflow_nb.errors.NotFoundError` when unknown."""
        return self._call("get_scheduled_task", check_task_id(task_id))  # type: ignore[no-any-return]

    def pause(self, task_id: str) -> dict[str, Any]:
        """Stop dispatching its ticks (a run in progress goes on); the task."""
        return self._call("pause_scheduled_task", check_task_id(task_id))  # type: ignore[no-any-return]

    def resume(self, task_id: str) -> dict[str, Any]:
        """Dispatch again from the next tick after now; the task."""
        return self._call("resume_scheduled_task", check_task_id(task_id))  # type: ignore[no-any-return]

    def delete(self, task_id: str) -> None:
        """Delete the task and its history (threads and runs it made stay)."""
        self._call("delete_scheduled_task", check_task_id(task_id))

    def trigger(self, task_id: str) -> dict[str, Any]:
        """Run the task now; its occurrence (``run_id``, ``thread_id``, ``status``).

        :class:`~deerflow_nb.persistence.schedules.ActiveScheduledRunConflict` (a
        :class:`~deerflow_nb.errors.ConflictError`, HTTP 409) while its previous run is active.
        """
        return self._call("trigger_scheduled_task", check_task_id(task_id))  # type: ignore[no-any-return]

    def runs(self, task_id: str, limit: int = 20) -> builtins.list[dict[str, Any]]:
        """The task's occurrences, newest first: runs it started and ticks it ``skipped``."""
        return list(self._call("list_scheduled_task_runs", check_task_id(task_id), _limit(limit))["runs"])

    # -- async twins ---------------------------------------------------------------------
    async def acreate(self, message: str, *, cron: str | None = None, every: float | dt.timedelta | None = None,
                      timezone: str | ZoneInfo | None = None, thread: Any = "fresh",
                      overlap: str = "skip") -> dict[str, Any]:
        """Async twin of :meth:`create`."""
        return await self._acall("create_scheduled_task",  # type: ignore[no-any-return]
                                 _body(message, cron, every, thread, overlap, timezone))

    async def alist(self) -> builtins.list[dict[str, Any]]:
        """Async twin of :meth:`list`."""
        return list((await self._acall("list_scheduled_tasks"))["tasks"])

    async def aget(self, task_id: str) -> dict[str, Any]:
        """Async twin of :meth:`get`."""
        return await self._acall("get_scheduled_task", check_task_id(task_id))  # type: ignore[no-any-return]

    async def apause(self, task_id: str) -> dict[str, Any]:
        """Async twin of :meth:`pause`."""
        return await self._acall("pause_scheduled_task", check_task_id(task_id))  # type: ignore[no-any-return]

    async def aresume(self, task_id: str) -> dict[str, Any]:
        """Async twin of :meth:`resume`."""
        return await self._acall("resume_scheduled_task", check_task_id(task_id))  # type: ignore[no-any-return]

    async def adelete(self, task_id: str) -> None:
        """Async twin of :meth:`delete`."""
        await self._acall("delete_scheduled_task", check_task_id(task_id))

    async def atrigger(self, task_id: str) -> dict[str, Any]:
        """Async twin of :meth:`trigger`."""
        return await self._acall("trigger_scheduled_task", check_task_id(task_id))  # type: ignore[no-any-return]

    async def aruns(self, task_id: str, limit: int = 20) -> builtins.list[dict[str, Any]]:
        """Async twin of :meth:`runs`."""
        return list((await self._acall("list_scheduled_task_runs", check_task_id(task_id), _limit(limit)))["runs"])

    def start_scheduler(self, poll_seconds: float = 15.0) -> None:
        """Run the scheduler loop in this process (embedded only; the server extension runs its own).

        Over HTTP: :class:`~deerflow_nb.errors.UsageError` (the server schedules).
        """
        self._backend.local("runtime").start_scheduler(poll_seconds)
