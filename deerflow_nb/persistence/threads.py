"""``ThreadStore``: thread ownership, titles and statuses in ``threads_meta``."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from deerflow_nb.errors import NotFoundError, UsageError
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
        """The embedded client's ``threads()`` item."""
        return {"thread_id": self.thread_id, "user_id": self.user_id, "title": self.title,
                "created_at": self.created_at, "updated_at": self.updated_at}

    @classmethod
    def from_row(cls, row: ThreadMetaRow) -> ThreadRecord:
        """Build from an ORM row."""
        return cls(row.thread_id, row.user_id, row.title, row.created_at, row.updated_at, row.status,
                   dict(row.metadata_ or {}), row.assistant_id)


class ThreadStore:
    """CRUD over ``threads_meta``, always scoped to a user (another user's thread is not found)."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def _row(self, thread_id: str) -> ThreadMetaRow | None:
        async with self._db.sessions() as session:
            return await session.get(ThreadMetaRow, thread_id)

    async def get(self, thread_id: str, user_id: str) -> ThreadRecord:
        """The thread of ``user_id`` or :class:`NotFoundError`."""
        row = await self._row(thread_id)
        if row is None or row.user_id != user_id:
            raise NotFoundError(f"thread {thread_id!r} not found")
        return ThreadRecord.from_row(row)

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
        row = ThreadMetaRow(thread_id=thread_id, user_id=user_id, assistant_id=assistant_id, title=None,
                            status="idle", metadata_=dict(metadata or {}), created_at=now, updated_at=now)
        try:
            async with self._db.sessions.begin() as session:
                session.add(row)
            return ThreadRecord.from_row(row)
        except IntegrityError:
            existing = await self._row(thread_id)
            if existing is None or existing.user_id != user_id:
                # never reveal that another user owns this id
                raise NotFoundError(f"thread {thread_id!r} not found") from None
            if if_exists == "do_nothing":
                return ThreadRecord.from_row(existing)
            raise UsageError(f"thread {thread_id!r} already exists") from None

    async def get_or_create(self, thread_id: str, user_id: str) -> ThreadRecord:
        """Return the thread, creating it for ``user_id``."""
        existing = await self._row(thread_id)
        if existing is not None:
            if existing.user_id != user_id:
                raise NotFoundError(f"thread {thread_id!r} not found")
            return ThreadRecord.from_row(existing)
        return await self.create(thread_id, user_id, if_exists="do_nothing")

    async def search(self, user_id: str, *, metadata: dict[str, Any] | None = None, status: str | None = None,
                     ids: list[str] | None = None, limit: int | None = None, offset: int = 0,
                     sort_by: str = "updated_at", sort_order: str = "desc") -> list[ThreadRecord]:
        """The threads of ``user_id``, filtered; metadata matches by equality of every given key."""
        column = {"updated_at": ThreadMetaRow.updated_at, "created_at": ThreadMetaRow.created_at,
                  "thread_id": ThreadMetaRow.thread_id}.get(sort_by, ThreadMetaRow.updated_at)
        query = sa.select(ThreadMetaRow).where(ThreadMetaRow.user_id == user_id)
        if status:
            query = query.where(ThreadMetaRow.status == status)
        if ids:
            query = query.where(ThreadMetaRow.thread_id.in_(ids))
        query = query.order_by(column.asc() if sort_order == "asc" else column.desc())
        async with self._db.sessions() as session:
            rows = (await session.scalars(query)).all()
        records = [ThreadRecord.from_row(r) for r in rows]
        if metadata:
            records = [r for r in records if all(r.metadata.get(k) == v for k, v in metadata.items())]
        records = records[offset:]
        return records[:limit] if limit else records

    async def update(self, thread_id: str, *, title: str | None = None, status: str | None = None,
                     metadata: dict[str, Any] | None = None) -> None:
        """Bump ``updated_at``; set the title/status when given; merge ``metadata``."""
        async with self._db.sessions.begin() as session:
            row = await session.get(ThreadMetaRow, thread_id)
            if row is None:
                return
            row.updated_at = time.time()
            if title:
                row.title = title
            if status:
                row.status = status
            if metadata:
                row.metadata_ = {**(row.metadata_ or {}), **metadata}

    async def delete(self, thread_id: str, user_id: str) -> None:
        """Delete the thread's row (after checking ownership)."""
        await self.get(thread_id, user_id)
        async with self._db.sessions.begin() as session:
            await session.execute(sa.delete(ThreadMetaRow).where(ThreadMetaRow.thread_id == thread_id))
