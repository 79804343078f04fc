"""``ThreadStore``: thread ownership, titles and statuses in ``threads_meta``."""

from __future__ import annotations

import functools
import time
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from deerflow_nb.errors import ConflictError, NotFoundError
from deerflow_nb.persistence.engine import Database
from deerflow_nb.persistence.models import ThreadMetaRow

__all__ = ["ThreadRecord", "ThreadStore"]


@dataclass(frozen=True)
class ThreadRecord:
    """One thread's metadata."""

    thread_id: str
    user_id: str
    title: str | None
    created_at: float
    updated_at: float
    status: str = "idle"
    metadata: dict[str, Any] = field(default_factory=dict)
    assistant_id: str = "lead_agent"

    def to_dict(self) -> dict[str, Any]:
        """The ``threads()`` item: ``thread_id``, ``title``, ``status`` and ISO 8601 UTC times (as over HTTP)."""
        return {"thread_id": self.thread_id, "title": self.title, "status": self.status,
                "created_at": _iso(self.created_at), "updated_at": _iso(self.updated_at)}

    @classmethod
    def from_mapping(cls, row: Mapping[str, Any]) -> ThreadRecord:
        """Build from a Core result row's mapping (column names, ``metadata`` included)."""
        return cls(row["thread_id"], row["user_id"], row["title"], row["created_at"], row["updated_at"],
                   row["status"], dict(row["metadata"] or {}), row["assistant_id"])


_T = ThreadMetaRow.metadata.tables["threads_meta"]
# Statements built once: the hot per-run lookups skip ORM sessions and statement construction
# (SQLAlchemy's compiled cache then makes each execution a bind + one driver round trip).
_SELECT_ONE = sa.select(_T).where(_T.c.thread_id == sa.bindparam("tid"))
_INSERT = sa.insert(_T)


def _select_one(thread_id: str, conn: sa.Connection) -> Mapping[str, Any] | None:
    row = conn.execute(_SELECT_ONE, {"tid": thread_id}).first()
    return dict(row._mapping) if row is not None else None

#: Threads whose ownership this process has verified; bounded (an evicted id is just re-checked).
_MAX_KNOWN = 4096
#: New threads kept unsaved at most (more are written out together).
_MAX_UNSAVED = 256


class ThreadStore:
    """CRUD over ``threads_meta``, always scoped to a user (another user's thread is not found)."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._known: OrderedDict[str, str] = OrderedDict()  # thread_id -> owner, verified here
        self._fresh: OrderedDict[str, None] = OrderedDict()  # created here from a generated id, never run
        # new threads not stored yet: thread_id -> (owner, created_at); see ensure(new=True)
        self._unsaved: dict[str, tuple[str, float]] = {}

    async def _row(self, thread_id: str) -> Mapping[str, Any] | None:
        if thread_id in self._unsaved:
            await self.store_unsaved([thread_id])
        return await self._db.read(functools.partial(_select_one, thread_id))

    def mark_saved(self, thread_id: str) -> None:
        """A new thread's row was written by other means (its first run's admission)."""
        self._unsaved.pop(thread_id, None)

    async def store_unsaved(self, thread_ids: list[str] | None = None) -> None:
        """Write the rows of new threads not stored yet (all of them, or ``thread_ids``)."""
        pending = {tid: self._unsaved[tid] for tid in (thread_ids or list(self._unsaved)) if tid in self._unsaved}
        if not pending:
            return

        def insert(conn: sa.Connection) -> None:
            for thread_id, (user_id, created) in pending.items():
                if _select_one(thread_id, conn) is None:
                    conn.execute(_INSERT, {"thread_id": thread_id, "user_id": user_id, "assistant_id": "lead_agent",
                                           "title": None, "status": "idle", "metadata": {}, "created_at": created,
                                           "updated_at": created})

        await self._db.write(insert)
        for thread_id in pending:
            self._unsaved.pop(thread_id, None)

    def _remember(self, thread_id: str, user_id: str) -> None:
        self._known[thread_id] = user_id
        self._known.move_to_end(thread_id)
        while len(self._known) > _MAX_KNOWN:
            self._known.popitem(last=False)

    def forget(self, thread_id: str) -> None:
        """Drop a thread from the verified-ownership cache (it was deleted)."""
        self._known.pop(thread_id, None)
        self._fresh.pop(thread_id, None)
        self._unsaved.pop(thread_id, None)

    def take_fresh(self, thread_id: str) -> bool:
        """Whether ``thread_id`` was created here from a generated id and has not run since (asks once)."""
        return self._fresh.pop(thread_id, 0) is None

    async def get(self, thread_id: str, user_id: str) -> ThreadRecord:
        """The thread of ``user_id`` or :class:`NotFoundError`."""
        row = await self._row(thread_id)
        if row is None or row["user_id"] != user_id:
            raise NotFoundError(f"thread {thread_id!r} not found")
        self._remember(thread_id, user_id)
        return ThreadRecord.from_mapping(row)

    async def find(self, thread_id: str, user_id: str) -> ThreadRecord | None:
        """Like :meth:`get` but ``None`` when missing."""
        try:
            return await self.get(thread_id, user_id)
        except NotFoundError:
            return None

    async def create(self, thread_id: str, user_id: str, *, metadata: dict[str, Any] | None = None,
                     assistant_id: str = "lead_agent", if_exists: str = "raise") -> ThreadRecord:
        """Create a thread; ``if_exists="do_nothing"`` returns the existing one (same user only)."""
        now = time.time()
        record = ThreadRecord(thread_id, user_id, None, now, now, "idle", dict(metadata or {}), assistant_id)
        values = {"thread_id": thread_id, "user_id": user_id, "assistant_id": assistant_id, "title": None,
                  "status": "idle", "metadata": record.metadata, "created_at": now, "updated_at": now}
        try:
            await self._db.write(lambda conn: conn.execute(_INSERT, values))
        except IntegrityError:
            existing = await self._row(thread_id)
            if existing is None or existing["user_id"] != user_id:
                # never reveal that another user owns this id
                raise NotFoundError(f"thread {thread_id!r} not found") from None
            if if_exists == "do_nothing":
                self._remember(thread_id, user_id)
                return ThreadRecord.from_mapping(existing)
            raise ConflictError(f"thread {thread_id!r} already exists") from None
        self._remember(thread_id, user_id)
        return record

    async def get_or_create(self, thread_id: str, user_id: str) -> ThreadRecord:
        """Return the thread, creating it for ``user_id``."""
        existing = await self._row(thread_id)
        if existing is not None:
            if existing["user_id"] != user_id:
                raise NotFoundError(f"thread {thread_id!r} not found")
            self._remember(thread_id, user_id)
            return ThreadRecord.from_mapping(existing)
        return await self.create(thread_id, user_id, if_exists="do_nothing")

    async def ensure(self, thread_id: str, user_id: str, *, new: bool = False) -> None:
        """Make sure ``user_id`` owns ``thread_id`` (creating it), as cheaply as possible.

        A thread this process already verified costs nothing. ``new=True`` (a freshly
        generated id, which cannot exist yet) writes nothing now: the row is stored with
        the thread's first run (in the run's admission transaction) or as soon as this
        store reads threads. Another user's thread is not found. If another process
        deletes a verified thread, the next run's admission re-creates its row.
        """
        owner = self._known.get(thread_id)
        if owner is not None:
            if owner != user_id:
                raise NotFoundError(f"thread {thread_id!r} not found")
            return
        if new:
            self._unsaved[thread_id] = (user_id, time.time())
            self._remember(thread_id, user_id)
            if len(self._unsaved) >= _MAX_UNSAVED:
                await self.store_unsaved()
            self._fresh[thread_id] = None
            while len(self._fresh) > _MAX_KNOWN:
                self._fresh.popitem(last=False)
        else:
            await self.get_or_create(thread_id, user_id)

    async def search(self, user_id: str, *, metadata: dict[str, Any] | None = None, status: str | None = None,
                     ids: list[str] | None = None, limit: int | None = None, offset: int = 0,
                     sort_by: str = "updated_at", sort_order: str = "desc") -> list[ThreadRecord]:
        """The threads of ``user_id``, filtered; metadata matches by equality of every given key."""
        await self.store_unsaved([tid for tid, (owner, _) in self._unsaved.items() if owner == user_id])
        column = {"updated_at": _T.c.updated_at, "created_at": _T.c.created_at,
                  "thread_id": _T.c.thread_id}.get(sort_by, _T.c.updated_at)
        query = sa.select(_T).where(_T.c.user_id == user_id)
        if status:
            query = query.where(_T.c.status == status)
        if ids:
            query = query.where(_T.c.thread_id.in_(ids))
        query = query.order_by(column.asc() if sort_order == "asc" else column.desc())
        rows = await self._db.read(lambda conn: [dict(row._mapping) for row in conn.execute(query)])
        records = [ThreadRecord.from_mapping(r) for r in rows]
        if metadata:
            records = [r for r in records if all(r.metadata.get(k) == v for k, v in metadata.items())]
        records = records[offset:]
        return records[:limit] if limit else records

    async def update(self, thread_id: str, *, title: str | None = None, status: str | None = None,
                     metadata: dict[str, Any] | None = None) -> None:
        """Bump ``updated_at``; set the title/status when given; merge ``metadata``."""
        if thread_id in self._unsaved:
            await self.store_unsaved([thread_id])

        def update(conn: sa.Connection) -> None:
            changes: dict[str, Any] = {"updated_at": time.time()}
            if title:
                changes["title"] = title
            if status:
                changes["status"] = status
            if metadata:
                row = _select_one(thread_id, conn)
                if row is None:
                    return
                changes["metadata"] = {**(row["metadata"] or {}), **metadata}
            conn.execute(sa.update(_T).where(_T.c.thread_id == thread_id).values(changes))

        await self._db.write(update)

    async def delete(self, thread_id: str, user_id: str) -> None:
        """Delete the thread's row (after checking ownership)."""
        await self.get(thread_id, user_id)
        self.forget(thread_id)
        await self._db.write(lambda conn: conn.execute(sa.delete(_T).where(_T.c.thread_id == thread_id)))


def _iso(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, UTC).isoformat()
