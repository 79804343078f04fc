"""``RunStore``: durable run rows; admission is atomic thanks to ``uq_runs_thread_active``."""

from __future__ import annotations

import functools
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from deerflow_nb.errors import ThreadBusyError
from deerflow_nb.persistence.engine import Database
from deerflow_nb.persistence.events import INSERT_EVENT, JournalEntry, event_rows
from deerflow_nb.persistence.models import ACTIVE_RUN_STATUSES, RunRow, ThreadMetaRow

__all__ = ["RunInfo", "RunStore"]

_R = RunRow.metadata.tables["runs"]
_INSERT_RUN = sa.insert(_R)


@functools.cache
def _update_run(columns: tuple[str, ...]) -> sa.Update:
    # one prebuilt statement per set of updated columns (a handful): building statements
    # per transition cost more than executing them
    return sa.update(_R).where(_R.c.run_id == sa.bindparam("rid")).values(
        {name: sa.bindparam(name) for name in columns})


@functools.cache
def _update_thread(columns: tuple[str, ...]) -> sa.Update:
    table = ThreadMetaRow.metadata.tables["threads_meta"]
    return sa.update(table).where(table.c.thread_id == sa.bindparam("tid")).values(
        {name: sa.bindparam(name) for name in columns})


@dataclass
class RunInfo:
    """A run as stored (also the shape the run manager hands out for finished runs)."""

    run_id: str
    thread_id: str
    user_id: str
    assistant_id: str = "lead_agent"
    status: str = "pending"
    multitask_strategy: str = "reject"
    metadata: dict[str, Any] = field(default_factory=dict)
    kwargs: dict[str, Any] = field(default_factory=dict)
    error: dict[str, Any] | None = None
    stop_reason: str | None = None
    usage: dict[str, Any] | None = None
    created_at: float = field(default_factory=time.time)
    updated_at: float = field(default_factory=time.time)
    owner: str | None = None

    @classmethod
    def from_row(cls, row: RunRow) -> RunInfo:
        """Build from an ORM row."""
        return cls(row.run_id, row.thread_id, row.user_id, row.assistant_id, row.status, row.multitask_strategy,
                   dict(row.metadata_ or {}), dict(row.kwargs or {}), row.error, row.stop_reason, row.usage,
                   row.created_at, row.updated_at, row.owner)


class RunStore:
    """Rows of ``runs``; every read is scoped to a user."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def create(self, info: RunInfo) -> None:
        """Insert a ``pending`` run; a second active run on the thread raises :class:`ThreadBusyError`."""
        try:
            async with self._db.engine.begin() as conn:
                await conn.execute(_INSERT_RUN, {
                    "run_id": info.run_id, "thread_id": info.thread_id, "user_id": info.user_id,
                    "assistant_id": info.assistant_id, "status": info.status,
                    "multitask_strategy": info.multitask_strategy, "metadata": info.metadata,
                    "kwargs": info.kwargs, "error": None, "stop_reason": None, "usage": None, "owner": info.owner,
                    "created_at": info.created_at, "updated_at": info.updated_at})
        except IntegrityError:
            raise ThreadBusyError(f"thread {info.thread_id!r} already has an active run; "
                                  "wait for it, cancel it, or use multitask_strategy='interrupt'") from None

    async def set_status(self, run_id: str, status: str, *, error: dict[str, Any] | None = None,
                         stop_reason: str | None = None, usage: dict[str, Any] | None = None,
                         thread: tuple[str, str] | None = None, title: str | None = None,
                         user_id: str | None = None, events: Sequence[JournalEntry] = ()) -> None:
        """Record a status transition (and the outcome fields, when given).

        ``thread=(thread_id, thread_status)`` updates the thread's status (and ``title``)
        in the same transaction: one commit per transition keeps runs cheap on SQLite.
        With ``user_id``, a thread row deleted meanwhile (by another process) is re-created.
        ``events`` (the run's last journal entries) are inserted in the same transaction.
        """
        now = time.time()
        values: dict[str, Any] = {"status": status, "updated_at": now}
        if error is not None:
            values["error"] = error
        if stop_reason is not None:
            values["stop_reason"] = stop_reason
        if usage is not None:
            values["usage"] = usage
        async with self._db.engine.begin() as conn:
            await conn.execute(_update_run(tuple(values)), {"rid": run_id, **values})
            if thread is not None:
                changes: dict[str, Any] = {"status": thread[1], "updated_at": now}
                if title:
                    changes["title"] = title
                result = await conn.execute(_update_thread(tuple(changes)), {"tid": thread[0], **changes})
                if user_id is not None and not result.rowcount:
                    await conn.execute(sa.insert(ThreadMetaRow.metadata.tables["threads_meta"]), {
                        "thread_id": thread[0], "user_id": user_id, "assistant_id": "lead_agent",
                        "title": title or None, "status": thread[1], "metadata": {}, "created_at": now,
                        "updated_at": now})
            if events:
                await conn.execute(INSERT_EVENT, event_rows(events))

    async def get(self, run_id: str, user_id: str | None) -> RunInfo | None:
        """The run, if it exists and (when ``user_id`` is given) belongs to that user."""
        async with self._db.sessions() as session:
            row = await session.get(RunRow, run_id)
        if row is None or (user_id is not None and row.user_id != user_id):
            return None
        return RunInfo.from_row(row)

    async def list_by_thread(self, thread_id: str, user_id: str, *, limit: int = 10, offset: int = 0,
                             status: str | None = None) -> list[RunInfo]:
        """The thread's runs, newest first."""
        query = (sa.select(RunRow).where(RunRow.thread_id == thread_id, RunRow.user_id == user_id)
                 .order_by(RunRow.created_at.desc()).limit(limit).offset(offset))
        if status:
            query = query.where(RunRow.status == status)
        async with self._db.sessions() as session:
            return [RunInfo.from_row(r) for r in (await session.scalars(query)).all()]

    async def active(self) -> list[RunInfo]:
        """Every run still marked ``pending`` or ``running`` (all users)."""
        query = sa.select(RunRow).where(RunRow.status.in_(ACTIVE_RUN_STATUSES))
        async with self._db.sessions() as session:
            return [RunInfo.from_row(r) for r in (await session.scalars(query)).all()]

    async def claim_orphan(self, run_id: str, *, error: dict[str, Any]) -> bool:
        """Atomically move a still-active run to ``error`` (``stop_reason=orphan_recovered``)."""
        stmt = (sa.update(RunRow).where(RunRow.run_id == run_id, RunRow.status.in_(ACTIVE_RUN_STATUSES))
                .values(status="error", stop_reason="orphan_recovered", error=error, updated_at=time.time()))
        async with self._db.sessions.begin() as session:
            result = await session.execute(stmt)
        return bool(getattr(result, "rowcount", 0))

    async def delete_thread(self, thread_id: str) -> None:
        """Forget every run of a thread."""
        async with self._db.sessions.begin() as session:
            await session.execute(sa.delete(RunRow).where(RunRow.thread_id == thread_id))
