"""``ScheduleStore``: scheduled tasks and their occurrences (``scheduled_tasks``, ``scheduled_task_runs``).

Two database guarantees carry the scheduler across processes:

- a tick is claimed by compare-and-set on ``scheduled_tasks.next_run_at``
  (:meth:`ScheduleStore.claim_tick`), so of several servers polling one database exactly
  one dispatches it;
- the partial unique index ``uq_scheduled_task_run_active`` admits one ``queued`` /
  ``running`` occurrence per task, so two concurrent dispatches (a manual trigger racing
  the scheduler, a double click) cannot both start a run: the losing insert raises
  :class:`ActiveScheduledRunConflict` (translated from the ``IntegrityError`` here).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from typing import Any

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from deerflow_nb.errors import ConflictError, register_error
from deerflow_nb.persistence.engine import Database
from deerflow_nb.persistence.models import ACTIVE_SCHEDULED_RUN_STATUSES, ScheduledTaskRow, ScheduledTaskRunRow

__all__ = ["ActiveScheduledRunConflict", "ScheduleStore"]

_T = ScheduledTaskRow.metadata.tables["scheduled_tasks"]
_O = ScheduledTaskRunRow.metadata.tables["scheduled_task_runs"]


@register_error
class ActiveScheduledRunConflict(ConflictError):  # the reference's name
    """The scheduled task already has an active (``queued`` / ``running``) occurrence.

    Raised by :meth:`ScheduleStore.create_run` when ``uq_scheduled_task_run_active`` refuses a
    second active row, and by a manual trigger that finds one (HTTP 409). Wait for the run
    (``agent.schedules.runs(task_id)``) or cancel it, then trigger again.
    """


def _rows(conn: sa.Connection, query: sa.Select[Any]) -> list[dict[str, Any]]:
    return [dict(row._mapping) for row in conn.execute(query)]


class ScheduleStore:
    """Rows of ``scheduled_tasks`` and ``scheduled_task_runs``; reads of tasks are scoped to a user."""

    def __init__(self, db: Database) -> None:
        self._db = db

    # -- tasks ---------------------------------------------------------------------------
    async def create_task(self, row: Mapping[str, Any]) -> None:
        """Insert a task (every column given)."""
        await self._db.write(lambda conn: conn.execute(sa.insert(_T), dict(row)))

    async def get_task(self, task_id: str, user_id: str | None) -> dict[str, Any] | None:
        """The task, if it exists and (with ``user_id``) belongs to that user."""
        query = sa.select(_T).where(_T.c.id == task_id)
        if user_id is not None:
            query = query.where(_T.c.user_id == user_id)
        rows = await self._db.read(lambda conn: _rows(conn, query))
        return rows[0] if rows else None

    async def list_tasks(self, user_id: str) -> list[dict[str, Any]]:
        """The user's tasks, oldest first."""
        query = sa.select(_T).where(_T.c.user_id == user_id).order_by(_T.c.created_at, _T.c.id)
        return await self._db.read(lambda conn: _rows(conn, query))

    async def update_task(self, task_id: str, **values: Any) -> None:
        """Set columns of a task."""
        await self._db.write(lambda conn: conn.execute(sa.update(_T).where(_T.c.id == task_id).values(values)))

    async def delete_task(self, task_id: str) -> None:
        """Delete the task and its occurrences in one transaction (runs and threads stay)."""
        def delete(conn: sa.Connection) -> None:
            conn.execute(sa.delete(_O).where(_O.c.task_id == task_id))
            conn.execute(sa.delete(_T).where(_T.c.id == task_id))

        await self._db.write(delete)

    async def due_tasks(self, now: float, user_id: str | None = None) -> list[dict[str, Any]]:
        """Active tasks due at ``now`` (every user's, or ``user_id``'s), the most overdue first."""
        query = (sa.select(_T).where(_T.c.status == "active", _T.c.next_run_at.is_not(None),
                                     _T.c.next_run_at <= now).order_by(_T.c.next_run_at))
        if user_id is not None:
            query = query.where(_T.c.user_id == user_id)
        return await self._db.read(lambda conn: _rows(conn, query))

    async def claim_tick(self, task_id: str, expected: float, following: float, now: float) -> bool:
        """Move an active task's ``next_run_at`` from ``expected`` to ``following``; whether this caller won.

        The compare-and-set is the claim: another server that read the same tick finds the
        value changed and dispatches nothing.
        """
        stmt = (sa.update(_T).where(_T.c.id == task_id, _T.c.status == "active", _T.c.next_run_at == expected)
                .values(next_run_at=following, updated_at=now))
        return bool(await self._db.write(lambda conn: conn.execute(stmt).rowcount))

    # -- occurrences ---------------------------------------------------------------------
    async def has_active_runs(self, task_id: str) -> bool:
        """Whether the task has a ``queued`` / ``running`` occurrence (a fast path: the index decides)."""
        query = sa.select(_O.c.id).where(_O.c.task_id == task_id, _O.c.status.in_(ACTIVE_SCHEDULED_RUN_STATUSES))
        return bool(await self._db.read(lambda conn: conn.execute(query.limit(1)).first()))

    async def create_run(self, row: Mapping[str, Any]) -> None:
        """Insert an occurrence; a second active one for the task raises :class:`ActiveScheduledRunConflict`."""
        try:
            await self._db.write(lambda conn: conn.execute(sa.insert(_O), dict(row)))
        except (IntegrityError, sqlite3.IntegrityError):
            raise ActiveScheduledRunConflict(f"scheduled task {row['task_id']!r} already has an active run; "
                                             "wait for it or cancel it, then trigger again") from None

    async def record_launch(self, occurrence_id: str, task_id: str, *, run_id: str, thread_id: str,
                            now: float) -> None:
        """The occurrence's run started: it becomes ``running`` and the task's ``last_*`` move, in one transaction."""
        def launch(conn: sa.Connection) -> None:
            conn.execute(sa.update(_O).where(_O.c.id == occurrence_id)
                         .values(status="running", run_id=run_id, thread_id=thread_id, started_at=now))
            conn.execute(sa.update(_T).where(_T.c.id == task_id)
                         .values(last_run_at=now, last_run_id=run_id, last_thread_id=thread_id, last_error=None,
                                 run_count=_T.c.run_count + 1, updated_at=now))

        await self._db.write(launch)

    async def finish_run(self, occurrence_id: str, status: str, *, error: str | None, now: float,
                         task_id: str | None = None) -> bool:
        """End a still-active occurrence with ``status``; whether it was active.

        With ``task_id`` and an ``error``, the task's ``last_error`` is set in the same transaction.
        """
        def finish(conn: sa.Connection) -> bool:
            done = conn.execute(sa.update(_O).where(_O.c.id == occurrence_id,
                                                    _O.c.status.in_(ACTIVE_SCHEDULED_RUN_STATUSES))
                                .values(status=status, error=error, finished_at=now)).rowcount
            if done and task_id is not None and error is not None:
                conn.execute(sa.update(_T).where(_T.c.id == task_id).values(last_error=error, updated_at=now))
            return bool(done)

        return await self._db.write(finish)

    async def delete_run(self, occurrence_id: str) -> None:
        """Forget one occurrence (a manual trigger refused after its row was written)."""
        await self._db.write(lambda conn: conn.execute(sa.delete(_O).where(_O.c.id == occurrence_id)))

    async def list_runs(self, task_id: str, limit: int) -> list[dict[str, Any]]:
        """The task's occurrences, newest first."""
        query = (sa.select(_O).where(_O.c.task_id == task_id)
                 .order_by(_O.c.created_at.desc(), _O.c.id.desc()).limit(limit))
        return await self._db.read(lambda conn: _rows(conn, query))

    async def active_runs(self) -> list[dict[str, Any]]:
        """Every ``queued`` / ``running`` occurrence (all tasks): what reconciliation checks."""
        query = sa.select(_O).where(_O.c.status.in_(ACTIVE_SCHEDULED_RUN_STATUSES))
        return await self._db.read(lambda conn: _rows(conn, query))
