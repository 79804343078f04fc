"""``ScheduledTaskService``: scheduled runs, dispatched through the one run path (:meth:`Runtime.start_run`).

The service manages definitions (create, list, get, pause, resume, delete), their history
(occurrences) and dispatch: :meth:`ScheduledTaskService.trigger` (manual, at once) and
:meth:`ScheduledTaskService.tick` (one scheduler pass at a given time). The poll loop that
calls ``tick`` lives in the server extension (``Runtime.start_scheduler``); an embedded
client manages definitions and triggers runs without it unless it starts one explicitly.

Dispatch follows the reference: ``has_active_runs`` is a fast path; the partial unique index
``uq_scheduled_task_run_active`` is the arbiter, and a losing dispatch collapses to the same
outcome as the fast path (manual: :class:`ActiveScheduledRunConflict`, HTTP 409; scheduled: a
terminal ``skipped`` tombstone that never takes the active slot). Scheduled runs are
non-interactive (no ``ask_clarification``). A tick missed while no server ran runs once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from deerflow_nb.errors import NotFoundError, ThreadBusyError, UsageError
from deerflow_nb.persistence.schedules import ActiveScheduledRunConflict, ScheduleStore
from deerflow_nb.runtime.gateway import validated
from deerflow_nb.runtime.run_manager import TERMINAL_STATUSES
from deerflow_nb.runtime.schedule_schemas import (
    DEFAULT_TIMEZONE,
    ScheduledTaskCreateRequest,
    ScheduledTaskDeleteResponse,
    ScheduledTaskListResponse,
    ScheduledTaskResponse,
    ScheduledTaskRunListResponse,
    ScheduledTaskRunResponse,
    next_tick,
    task_timezone,
)

if TYPE_CHECKING:
    from deerflow_nb.runtime.engine import Runtime
    from deerflow_nb.runtime.run_manager import RunRecord

__all__ = ["ActiveScheduledRunConflict", "ScheduledTaskService", "check_task_id"]

logger = logging.getLogger(__name__)

#: How long a ``queued`` occurrence without a run may wait before reconciliation ends it
#: (its dispatcher died between writing the row and starting the run).
QUEUED_GRACE_SECONDS = 120.0
_TASK_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")


def check_task_id(task_id: Any) -> str:
    """``task_id``; :class:`UsageError` unless it is a task id string (``agent.schedules`` checks before sending)."""
    if not isinstance(task_id, str) or not _TASK_ID.match(task_id):
        raise UsageError(f"task_id: invalid scheduled task id {task_id!r}")
    return task_id


def _failure(status: str, error: Any) -> str | None:
    """What a run that ended ``status`` records as the occurrence's (and task's) error: ``None`` on success."""
    if status == "success":
        return None
    message = error.get("message") if isinstance(error, dict) else None
    return str(message) if message else f"the run ended {status}"


class ScheduledTaskService:
    """One runtime's scheduled tasks. ``clock`` (UNIX seconds) is injectable: tests drive time with it."""

    def __init__(self, runtime: Runtime, clock: Callable[[], float] = time.time) -> None:
        self.runtime = runtime
        self.clock = clock
        self._watchers: set[asyncio.Task[None]] = set()
        self._loop_task: asyncio.Task[None] | None = None
        #: Seconds between two scheduler passes while :meth:`start` runs the loop.
        self.poll_seconds = 15.0
        #: Whose tasks this process dispatches: one user's (a JupyterHub single-user server, where
        #: only that user's files are mounted) or everyone's (``None``: one server for all users).
        self.dispatch_user: str | None = None

    async def _store(self) -> ScheduleStore:
        return (await self.runtime.store()).schedules

    async def _task(self, user_id: str, task_id: Any) -> dict[str, Any]:
        task = await (await self._store()).get_task(check_task_id(task_id), user_id)
        if task is None:
            raise NotFoundError(f"scheduled task {task_id!r} not found")
        return task

    # -- definitions ---------------------------------------------------------------------
    async def create(self, user_id: str, data: Any) -> dict[str, Any]:
        """Store a new task (validated first; a reused thread must be the user's); its ``GET`` shape."""
        body = validated(ScheduledTaskCreateRequest, data)
        store = await self.runtime.store()
        if body.thread_id is not None:
            await store.get_thread(body.thread_id, user_id)  # another user's thread is not found
        now = self.clock()
        kind = "cron" if body.cron is not None else "interval"
        # a cron task stores its zone explicitly ("UTC" when none was given); an interval has none
        zone = (body.timezone or DEFAULT_TIMEZONE) if kind == "cron" else None
        row = {"id": str(uuid.uuid4()), "user_id": user_id, "message": body.message, "schedule_type": kind,
               "cron": body.cron, "timezone": zone, "interval_seconds": body.every_seconds,
               "context_mode": body.context_mode, "thread_id": body.thread_id,
               "overlap_policy": body.overlap_policy, "status": "active",
               "next_run_at": next_tick(kind, body.cron, body.every_seconds, now, timezone=zone),
               "last_run_at": None, "last_run_id": None, "last_thread_id": None, "last_error": None,
               "run_count": 0, "created_at": now, "updated_at": now}
        await store.schedules.create_task(row)
        return ScheduledTaskResponse.from_row(row).model_dump()

    async def list_tasks(self, user_id: str) -> dict[str, Any]:
        """``{"tasks": [...]}``, oldest first."""
        rows = await (await self._store()).list_tasks(user_id)
        return ScheduledTaskListResponse(tasks=[ScheduledTaskResponse.from_row(r) for r in rows]).model_dump()

    async def get(self, user_id: str, task_id: str) -> dict[str, Any]:
        """One task; another user's or a missing one is :class:`NotFoundError`."""
        return ScheduledTaskResponse.from_row(await self._task(user_id, task_id)).model_dump()

    async def pause(self, user_id: str, task_id: str) -> dict[str, Any]:
        """Stop dispatching ticks (a run in progress goes on); the task."""
        task = await self._task(user_id, task_id)
        await (await self._store()).update_task(task["id"], status="paused", next_run_at=None,
                                                updated_at=self.clock())
        return await self.get(user_id, task_id)

    async def resume(self, user_id: str, task_id: str) -> dict[str, Any]:
        """Dispatch again from the next tick after now (ticks while paused are not caught up); the task."""
        task = await self._task(user_id, task_id)
        now = self.clock()
        if task["status"] != "active":
            following = next_tick(task["schedule_type"], task["cron"], task["interval_seconds"], now,
                                  timezone=task_timezone(task))
            await (await self._store()).update_task(task["id"], status="active", next_run_at=following,
                                                    updated_at=now)
        return await self.get(user_id, task_id)

    async def delete(self, user_id: str, task_id: str) -> dict[str, Any]:
        """Delete the task and its history (a run in progress finishes as an ordinary run of its thread)."""
        task = await self._task(user_id, task_id)
        await (await self._store()).delete_task(task["id"])
        return ScheduledTaskDeleteResponse(success=True, id=task["id"]).model_dump()

    async def runs(self, user_id: str, task_id: str, limit: int = 20) -> dict[str, Any]:
        """``{"runs": [...]}``: the task's occurrences, newest first (``limit`` 1-1000)."""
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 1000:
            raise UsageError("limit: must be an integer between 1 and 1000")
        task = await self._task(user_id, task_id)
        rows = await (await self._store()).list_runs(task["id"], limit)
        return ScheduledTaskRunListResponse(runs=[ScheduledTaskRunResponse.from_row(r) for r in rows]).model_dump()

    # -- dispatch ------------------------------------------------------------------------
    async def trigger(self, user_id: str, task_id: str) -> dict[str, Any]:
        """Dispatch the task now (manual); its occurrence. A run still active is :class:`ActiveScheduledRunConflict`."""
        return await self.dispatch_task(await self._task(user_id, task_id), "manual")

    async def dispatch_task(self, task: dict[str, Any], trigger: str,
                            scheduled_for: float | None = None) -> dict[str, Any]:
        """Start one occurrence of ``task`` through :meth:`Runtime.start_run`; the occurrence's ``GET`` shape."""
        store = await self._store()
        now = self.clock()
        thread_id = task["thread_id"] if task["context_mode"] == "reuse_thread" else str(uuid.uuid4())
        row = {"id": str(uuid.uuid4()), "task_id": task["id"], "user_id": task["user_id"], "thread_id": thread_id,
               "run_id": None, "trigger": trigger, "status": "queued", "scheduled_for": scheduled_for,
               "error": None, "created_at": now, "started_at": None, "finished_at": None}
        try:
            if await store.has_active_runs(task["id"]):  # fast path; the index below is the arbiter
                raise ActiveScheduledRunConflict(f"scheduled task {task['id']!r} already has an active run; "
                                                 "wait for it or cancel it, then trigger again")
            await store.create_run(row)
        except ActiveScheduledRunConflict:
            if trigger == "manual":
                raise
            return await self._skip(store, row, "the previous run of this task is still active")
        try:
            record = await self._start(task, thread_id, row)
        except ThreadBusyError as exc:
            if trigger == "manual":  # refused outright, as a busy thread is for any run
                await store.delete_run(row["id"])
                raise
            await store.finish_run(row["id"], "skipped", error=str(exc), now=self.clock())
            return {**ScheduledTaskRunResponse.from_row(row).model_dump(), "status": "skipped", "error": str(exc)}
        except Exception as exc:
            message = f"{type(exc).__name__}: {exc}"
            await store.finish_run(row["id"], "error", error=message, now=self.clock(), task_id=task["id"])
            if trigger == "manual":
                raise
            logger.warning("scheduled task %s could not start a run: %s", task["id"], message)
            return {**ScheduledTaskRunResponse.from_row(row).model_dump(), "status": "error", "error": message}
        started = self.clock()
        await store.record_launch(row["id"], task["id"], run_id=record.run_id, thread_id=thread_id, now=started)
        self._watch(row["id"], task["id"], record)
        row.update(status="running", run_id=record.run_id, started_at=started)
        return ScheduledTaskRunResponse.from_row(row).model_dump()

    async def _skip(self, store: ScheduleStore, row: dict[str, Any], reason: str) -> dict[str, Any]:
        """A terminal ``skipped`` tombstone (never ``queued``: the slot belongs to the run still active)."""
        tombstone = {**row, "id": str(uuid.uuid4()), "status": "skipped", "error": reason,
                     "finished_at": self.clock()}
        await store.create_run(tombstone)
        return ScheduledTaskRunResponse.from_row(tombstone).model_dump()

    async def _start(self, task: dict[str, Any], thread_id: str, row: dict[str, Any]) -> RunRecord:
        options = self.runtime.defaults.merged(non_interactive=True)  # nobody is there to answer a question
        metadata = {"scheduled_task_id": task["id"], "scheduled_task_run_id": row["id"], "trigger": row["trigger"]}
        return await self.runtime.start_run(thread_id, task["message"], options, user_id=task["user_id"],
                                            metadata=metadata)

    def _watch(self, occurrence_id: str, task_id: str, record: RunRecord) -> None:
        async def watch() -> None:
            await record.wait()
            error = _failure(record.status, record.error)
            try:
                store = await self._store()
                await store.finish_run(occurrence_id, record.status, error=error, now=self.clock(),
                                       task_id=task_id)  # a failure is the task's last_error too
            except Exception as exc:  # reconciliation finishes it from the run's row
                logger.warning("could not store the outcome of scheduled run %s: %s", record.run_id, exc)

        task = asyncio.get_running_loop().create_task(watch(), name=f"deerflow-scheduled-{occurrence_id}")
        self._watchers.add(task)
        task.add_done_callback(self._watchers.discard)

    # -- the scheduler -------------------------------------------------------------------
    async def tick(self, now: float | None = None) -> list[dict[str, Any]]:
        """One scheduler pass at ``now`` (default: the clock): reconcile, then dispatch every due tick once.

        A task's tick is claimed by compare-and-set (one server of several wins it) and its
        ``next_run_at`` moves to the first tick after ``now``: ticks missed during downtime
        run once. Returns the occurrences dispatched (runs and ``skipped`` tombstones).
        """
        now = self.clock() if now is None else now
        store = await self._store()
        await self.reconcile(now)
        dispatched = []
        for task in await store.due_tasks(now, self.dispatch_user):
            expected = task["next_run_at"]
            try:
                following = next_tick(task["schedule_type"], task["cron"], task["interval_seconds"], now,
                                      anchor=expected, timezone=task_timezone(task))
            except Exception as exc:  # a zone this machine no longer knows: the other tasks still tick
                message = f"no next tick: {type(exc).__name__}: {exc}"
                logger.warning("scheduled task %s: %s", task["id"], message)
                if task["last_error"] != message:  # the owner sees why it does not run
                    await store.update_task(task["id"], last_error=message, updated_at=now)
                continue
            if not await store.claim_tick(task["id"], expected, following, now):
                continue  # another server claimed this tick
            try:
                dispatched.append(await self.dispatch_task(task, "scheduled", scheduled_for=expected))
            except Exception as exc:  # one task's failure must not stop the others
                logger.warning("scheduled task %s failed to dispatch: %s", task["id"], exc)
        return dispatched

    async def reconcile(self, now: float | None = None) -> int:
        """End active occurrences whose run ended without this process watching it; how many.

        A server that died mid-run leaves its occurrence ``running``: its run's row (recovered
        through its lease) gives the outcome. A ``queued`` row whose dispatcher died before
        starting the run ends ``interrupted`` after :data:`QUEUED_GRACE_SECONDS`.
        """
        now = self.clock() if now is None else now
        store = await self.runtime.store()
        ended = 0
        for row in await store.schedules.active_runs():
            status, error = None, None
            if row["run_id"] is None:
                if now - row["created_at"] > QUEUED_GRACE_SECONDS:
                    status, error = "interrupted", "the server dispatching this run stopped before it started"
            else:
                local = self.runtime.runs.local(row["run_id"])
                if local is not None and not local.done:
                    continue
                info = await store.runs.get(row["run_id"], None)
                if info is None:
                    status, error = "error", "the run no longer exists (its thread was deleted)"
                elif info.status in TERMINAL_STATUSES:
                    status, error = info.status, _failure(info.status, info.error)
            if status is not None and await store.schedules.finish_run(row["id"], status, error=error, now=now,
                                                                       task_id=row["task_id"]):
                ended += 1
        return ended

    def start(self, poll_seconds: float | None = None, user_id: str | None = None) -> None:
        """Start the poll loop on the running loop (the runtime's); idempotent.

        With ``user_id`` only that user's tasks are dispatched here (see :attr:`dispatch_user`).
        """
        self.dispatch_user = user_id
        if poll_seconds is not None:
            if not poll_seconds > 0:
                raise UsageError(f"poll_seconds must be positive, got {poll_seconds!r}")
            self.poll_seconds = float(poll_seconds)
        if self._loop_task is None or self._loop_task.done():
            self._loop_task = asyncio.get_running_loop().create_task(self._poll(), name="deerflow-scheduler")

    @property
    def running(self) -> bool:
        """Whether the poll loop runs in this process."""
        return self._loop_task is not None and not self._loop_task.done()

    async def _poll(self) -> None:
        while True:
            try:
                await self.tick()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a database hiccup: try again next pass
                logger.warning("scheduler pass failed: %s: %s", type(exc).__name__, exc)
            await asyncio.sleep(self.poll_seconds)

    async def stop(self) -> None:
        """Stop the poll loop (no new dispatch); runs already started go on."""
        task, self._loop_task = self._loop_task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    async def aclose(self, timeout: float = 5.0) -> None:
        """Stop the loop, then let the run watchers store their outcomes (after the runs ended)."""
        await self.stop()
        watchers = list(self._watchers)
        if watchers:
            _, pending = await asyncio.wait(watchers, timeout=timeout)
            for task in pending:  # reconciliation finishes their occurrences on the next start
                task.cancel()
