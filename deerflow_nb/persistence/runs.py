"""``RunStore``: durable run rows; admission is atomic thanks to ``uq_runs_thread_active``."""

from __future__ import annotations

import functools
import sqlite3
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from deerflow_nb.errors import ThreadBusyError
from deerflow_nb.persistence.engine import Database
from deerflow_nb.persistence.events import INSERT_EVENT, JournalEntry, event_rows
from deerflow_nb.persistence.fast import SqliteStatement, driver_connection, insert_statement
from deerflow_nb.persistence.models import ACTIVE_RUN_STATUSES, RunEventRow, RunRow, ThreadMetaRow

__all__ = ["QUEUED", "RunInfo", "RunStore", "db_now", "public_status"]

#: A run admitted with ``multitask_strategy="enqueue"`` while its thread was busy: stored, outside the
#: one-active-run index, until its thread is free; shown as ``pending`` (LangGraph's name for it).
QUEUED = "queued"


def public_status(status: str) -> str:
    """The status clients see (``queued`` rows are ``pending`` runs)."""
    return "pending" if status == QUEUED else status

_R = RunRow.metadata.tables["runs"]
_INSERT_RUN = sa.insert(_R)


_RUN_JSON = ("metadata", "kwargs", "error", "usage")
_T = ThreadMetaRow.metadata.tables["threads_meta"]
_FAST_INSERT_RUN = insert_statement(_R, _RUN_JSON)
_FAST_INSERT_THREAD = insert_statement(_T, ("metadata",))
_FAST_INSERT_EVENT = insert_statement(RunEventRow.metadata.tables["run_events"], ("payload",))


def db_now(backend: str) -> sa.ColumnElement[float]:
    """The database's clock as UNIX seconds (leases never compare the hosts' clocks)."""
    if backend == "postgres":
        return sa.literal_column("CAST(EXTRACT(EPOCH FROM clock_timestamp()) AS DOUBLE PRECISION)", sa.Float)
    return sa.literal_column("((julianday('now') - 2440587.5) * 86400.0)", sa.Float)


@functools.cache
def _fast_update_run(columns: tuple[str, ...]) -> SqliteStatement:
    return SqliteStatement(_update_run(columns), _RUN_JSON)


@functools.cache
def _fast_update_thread(columns: tuple[str, ...]) -> SqliteStatement:
    return SqliteStatement(_update_thread(columns))


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
    #: Until when the owner holds the run (UNIX seconds, the database's clock); ``None``: no lease.
    lease_expires_at: float | None = None
    #: ``interrupt`` or ``rollback`` when another process asked the owner to cancel the run.
    cancel_requested: str | None = None

    @classmethod
    def from_mapping(cls, row: Mapping[str, Any]) -> RunInfo:
        """Build from a Core result row's mapping (column names, ``metadata`` included)."""
        return cls(row["run_id"], row["thread_id"], row["user_id"], row["assistant_id"], row["status"],
                   row["multitask_strategy"], dict(row["metadata"] or {}), dict(row["kwargs"] or {}), row["error"],
                   row["stop_reason"], row["usage"], row["created_at"], row["updated_at"], row["owner"],
                   row.get("lease_expires_at"), row.get("cancel_requested"))


class RunStore:
    """Rows of ``runs``; every read is scoped to a user."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def create(self, info: RunInfo, *, status: str | None = None, thread_status: str | None = None,
                     lease_seconds: float | None = None) -> None:
        """Insert the run; a second active run on the thread raises :class:`ThreadBusyError`.

        ``status`` overrides ``info.status``. With ``thread_status``, the thread's status is
        set in the same transaction (a run that starts at once is inserted ``running`` and
        marks its thread in one commit). With ``lease_seconds``, the owner's lease is taken
        in that transaction too (expiring that long from now on the database's clock).
        """
        values = {"run_id": info.run_id, "thread_id": info.thread_id, "user_id": info.user_id,
                  "assistant_id": info.assistant_id, "status": status or info.status,
                  "multitask_strategy": info.multitask_strategy, "metadata": info.metadata, "kwargs": info.kwargs,
                  "error": None, "stop_reason": None, "usage": None, "owner": info.owner,
                  "lease_expires_at": None, "cancel_requested": None, "created_at": info.created_at,
                  "updated_at": info.updated_at}

        def insert(conn: sa.Connection) -> None:
            raw = driver_connection(conn)
            if raw is not None:
                _FAST_INSERT_RUN.execute(raw, values)
            else:
                conn.execute(_INSERT_RUN, values)
            if thread_status is not None:
                _set_thread(conn, info.thread_id, thread_status, info.updated_at, None, info.user_id)
            if lease_seconds is not None:
                conn.execute(sa.update(_R).where(_R.c.run_id == info.run_id)
                             .values(lease_expires_at=self._now() + lease_seconds))

        try:
            await self._db.write(insert)
        except (IntegrityError, sqlite3.IntegrityError):
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
        rows = event_rows(events) if events else None

        def update(conn: sa.Connection) -> None:
            raw = driver_connection(conn)
            if raw is not None:
                _fast_update_run(tuple(values)).execute(raw, {"rid": run_id, **values})
            else:
                conn.execute(_update_run(tuple(values)), {"rid": run_id, **values})
            if thread is not None:
                _set_thread(conn, thread[0], thread[1], now, title, user_id)
            if rows:
                if raw is not None:
                    _FAST_INSERT_EVENT.executemany(raw, rows)
                else:
                    conn.execute(INSERT_EVENT, rows)

        await self._db.write(update)

    async def promote(self, thread_id: str, owner: str, lease_seconds: float) -> RunInfo | None:
        """Admit the thread's oldest queued run (``queued`` -> ``pending``, held by ``owner``); ``None`` if none.

        The unique index decides: while the thread has an active run, nothing is promoted, and of
        two processes promoting at once one wins.
        """
        def promote(conn: sa.Connection) -> dict[str, Any] | None:
            row = _first(conn, sa.select(_R).where(_R.c.thread_id == thread_id, _R.c.status == QUEUED)
                         .order_by(_R.c.created_at, _R.c.run_id).limit(1))
            if row is None:
                return None
            now = time.time()
            changed = conn.execute(sa.update(_R).where(_R.c.run_id == row["run_id"], _R.c.status == QUEUED).values(
                status="pending", owner=owner, lease_expires_at=self._now() + lease_seconds, updated_at=now)).rowcount
            if not changed:
                return None
            _set_thread(conn, thread_id, "running", now, None, row["user_id"])
            return {**row, "status": "pending", "owner": owner, "updated_at": now}

        try:
            row = await self._db.write(promote)
        except (IntegrityError, sqlite3.IntegrityError):  # the thread has an active run
            return None
        return RunInfo.from_mapping(row) if row is not None else None

    async def queued_threads(self) -> list[str]:
        """Threads with queued runs (all users), oldest queue first."""
        query = (sa.select(_R.c.thread_id, sa.func.min(_R.c.created_at).label("first"))
                 .where(_R.c.status == QUEUED).group_by(_R.c.thread_id).order_by("first"))
        return await self._db.read(lambda conn: [r.thread_id for r in conn.execute(query)])

    async def cancel_queued(self, run_id: str) -> bool:
        """Cancel a run still waiting in its thread's queue (``interrupted``); whether it was queued."""
        stmt = (sa.update(_R).where(_R.c.run_id == run_id, _R.c.status == QUEUED)
                .values(status="interrupted", stop_reason="cancelled", updated_at=time.time(),
                        error={"message": "run cancelled while queued", "type": "Cancelled",
                               "stop_reason": "cancelled", "status": "interrupted", "run_id": run_id}))
        return bool(await self._db.write(lambda conn: conn.execute(stmt).rowcount))

    async def try_start(self, run_id: str) -> bool:
        """Move an admitted run from ``pending`` to ``running``; ``False`` if it is no longer pending (cancelled)."""
        stmt = (sa.update(_R).where(_R.c.run_id == run_id, _R.c.status == "pending")
                .values(status="running", updated_at=time.time()))
        return bool(await self._db.write(lambda conn: conn.execute(stmt).rowcount))

    async def get(self, run_id: str, user_id: str | None) -> RunInfo | None:
        """The run, if it exists and (when ``user_id`` is given) belongs to that user."""
        row = await self._db.read(lambda conn: _first(conn, sa.select(_R).where(_R.c.run_id == run_id)))
        if row is None or (user_id is not None and row["user_id"] != user_id):
            return None
        return RunInfo.from_mapping(row)

    async def list_by_thread(self, thread_id: str, user_id: str, *, limit: int = 10, offset: int = 0,
                             status: str | None = None) -> list[RunInfo]:
        """The thread's runs, newest first."""
        query = (sa.select(_R).where(_R.c.thread_id == thread_id, _R.c.user_id == user_id)
                 .order_by(_R.c.created_at.desc()).limit(limit).offset(offset))
        if status == "pending":  # queued runs are pending ones to clients
            query = query.where(_R.c.status.in_(("pending", QUEUED)))
        elif status:
            query = query.where(_R.c.status == status)
        return [RunInfo.from_mapping(r) for r in await self._db.read(lambda conn: _all(conn, query))]

    async def active_on_thread(self, thread_id: str, user_id: str) -> list[RunInfo]:
        """The thread's ``pending`` or ``running`` runs (at most one by the index; queued runs are not active)."""
        query = sa.select(_R).where(_R.c.thread_id == thread_id, _R.c.user_id == user_id,
                                    _R.c.status.in_(ACTIVE_RUN_STATUSES))
        return [RunInfo.from_mapping(r) for r in await self._db.read(lambda conn: _all(conn, query))]

    async def active(self) -> list[RunInfo]:
        """Every run still marked ``pending`` or ``running`` (all users)."""
        query = sa.select(_R).where(_R.c.status.in_(ACTIVE_RUN_STATUSES))
        return [RunInfo.from_mapping(r) for r in await self._db.read(lambda conn: _all(conn, query))]

    def _now(self) -> sa.ColumnElement[float]:
        return db_now(self._db.backend)

    def _expired(self) -> sa.ColumnElement[bool]:
        # a row without a lease was admitted before leases (0001): nobody renews it
        return sa.or_(_R.c.lease_expires_at.is_(None), _R.c.lease_expires_at < self._now())

    async def renew(self, run_ids: Sequence[str], owner: str, lease_seconds: float) -> set[str]:
        """Extend ``owner``'s leases on ``run_ids`` (one transaction); returns the runs renewed.

        A run missing from the answer is no longer ``owner``'s active run: it finished, or
        another process recovered it after its lease expired.
        """
        def renew(conn: sa.Connection) -> set[str]:
            renewed: set[str] = set()
            for run_id in run_ids:
                stmt = (sa.update(_R).where(_R.c.run_id == run_id, _R.c.owner == owner,
                                            _R.c.status.in_(ACTIVE_RUN_STATUSES))
                        .values(lease_expires_at=self._now() + lease_seconds))
                if conn.execute(stmt).rowcount:
                    renewed.add(run_id)
            return renewed

        if not run_ids:
            return set()
        return await self._db.write(renew)

    async def request_cancel(self, run_id: str, action: str) -> bool:
        """Ask the process executing an active run to cancel it (``interrupt`` or ``rollback``).

        Returns whether the run was still active (the request is recorded on its row).
        """
        stmt = (sa.update(_R).where(_R.c.run_id == run_id, _R.c.status.in_(ACTIVE_RUN_STATUSES))
                .values(cancel_requested=action))
        return bool(await self._db.write(lambda conn: conn.execute(stmt).rowcount))

    async def cancel_requests(self, run_ids: Sequence[str]) -> dict[str, str]:
        """Run id -> requested action, for those of ``run_ids`` another process asked to cancel."""
        if not run_ids:
            return {}
        query = sa.select(_R.c.run_id, _R.c.cancel_requested).where(
            _R.c.run_id.in_(list(run_ids)), _R.c.cancel_requested.is_not(None))
        return await self._db.read(lambda conn: {r.run_id: r.cancel_requested for r in conn.execute(query)})

    async def expired(self) -> list[RunInfo]:
        """Every active run (all users) whose lease expired, or that never had one."""
        query = sa.select(_R).where(_R.c.status.in_(ACTIVE_RUN_STATUSES), self._expired())
        return [RunInfo.from_mapping(r) for r in await self._db.read(lambda conn: _all(conn, query))]

    async def claim_orphan(self, run_id: str, *, error: dict[str, Any], dead_owner: str | None = None) -> bool:
        """Atomically move a still-active run whose lease expired to ``error`` (``stop_reason=orphan_recovered``).

        The status and the lease are re-checked in the update itself: a renewal between the
        scan and the claim keeps the run active. With ``dead_owner`` (a holder known to have
        died), the run is claimed while that holder still holds it, whatever its lease says.
        """
        held = _R.c.owner == dead_owner if dead_owner is not None else self._expired()
        stmt = (sa.update(_R).where(_R.c.run_id == run_id, _R.c.status.in_(ACTIVE_RUN_STATUSES), held)
                .values(status="error", stop_reason="orphan_recovered", error=error, updated_at=time.time(),
                        lease_expires_at=None))
        return bool(await self._db.write(lambda conn: conn.execute(stmt).rowcount))

    async def delete(self, run_id: str) -> None:
        """Forget one run."""
        await self._db.write(lambda conn: conn.execute(sa.delete(_R).where(_R.c.run_id == run_id)))

    async def delete_thread(self, thread_id: str) -> None:
        """Forget every run of a thread."""
        await self._db.write(lambda conn: conn.execute(sa.delete(_R).where(_R.c.thread_id == thread_id)))


def _first(conn: sa.Connection, query: sa.Select[Any]) -> dict[str, Any] | None:
    row = conn.execute(query).first()
    return dict(row._mapping) if row is not None else None


def _all(conn: sa.Connection, query: sa.Select[Any]) -> list[dict[str, Any]]:
    return [dict(row._mapping) for row in conn.execute(query)]


def _set_thread(conn: sa.Connection, thread_id: str, status: str, now: float, title: str | None,
                user_id: str | None) -> None:
    """Set a thread's status (and title); with ``user_id``, re-create a row deleted by another process."""
    changes: dict[str, Any] = {"status": status, "updated_at": now}
    if title:
        changes["title"] = title
    raw = driver_connection(conn)
    if raw is not None:
        updated = _fast_update_thread(tuple(changes)).execute(raw, {"tid": thread_id, **changes}).rowcount
    else:
        updated = conn.execute(_update_thread(tuple(changes)), {"tid": thread_id, **changes}).rowcount
    if user_id is not None and not updated:
        row: dict[str, Any] = {"thread_id": thread_id, "user_id": user_id, "assistant_id": "lead_agent",
                               "title": title or None, "status": status, "metadata": {}, "created_at": now,
                               "updated_at": now}
        if raw is not None:
            _FAST_INSERT_THREAD.execute(raw, row)
        else:
            conn.execute(sa.insert(_T), row)
