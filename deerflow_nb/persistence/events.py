"""``RunEventStore`` (the run journal) and ``FeedbackStore``."""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from deerflow_nb.persistence.engine import Database
from deerflow_nb.persistence.models import FeedbackRow, RunEventRow

__all__ = ["INSERT_EVENT", "FeedbackStore", "JournalEntry", "RunEventStore", "event_rows"]

_E = RunEventRow.metadata.tables["run_events"]
_F = FeedbackRow.metadata.tables["feedback"]
#: The journal's insert (also used by :meth:`RunStore.set_status` for a run's last entries).
INSERT_EVENT = sa.insert(_E)


@dataclass(frozen=True)
class JournalEntry:
    """One journal row: ``event_type`` (≤ 32 chars) within a ``category`` (≤ 16 chars)."""

    run_id: str
    thread_id: str
    user_id: str
    seq: int
    event_type: str
    category: str
    payload: dict[str, Any]
    created_at: float

    def to_dict(self) -> dict[str, Any]:
        """The HTTP/SDK shape of an event."""
        return {"run_id": self.run_id, "thread_id": self.thread_id, "seq": self.seq,
                "event_type": self.event_type, "category": self.category, "payload": self.payload,
                "created_at": self.created_at}


def event_rows(entries: Sequence[JournalEntry]) -> list[dict[str, Any]]:
    """Insert parameters for journal entries."""
    return [{"run_id": e.run_id, "thread_id": e.thread_id, "user_id": e.user_id, "seq": e.seq,
             "event_type": e.event_type, "category": e.category, "payload": e.payload,
             "created_at": e.created_at} for e in entries]


class RunEventStore:
    """Append-only journal rows, read back per run or per thread."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def append(self, entries: Sequence[JournalEntry]) -> None:
        """Insert a batch of entries in one transaction."""
        if not entries:
            return
        rows = event_rows(entries)
        await self._db.write(lambda conn: conn.execute(INSERT_EVENT, rows))  # Core executemany

    async def list(self, user_id: str, *, run_id: str | None = None, thread_id: str | None = None,
                   event_type: str | None = None, after_seq: int | None = None,
                   limit: int | None = None) -> list[JournalEntry]:
        """Entries of a run (or a thread), oldest first."""
        query = sa.select(_E).where(_E.c.user_id == user_id)
        if run_id is not None:
            query = query.where(_E.c.run_id == run_id)
        if thread_id is not None:
            query = query.where(_E.c.thread_id == thread_id)
        if event_type is not None:
            query = query.where(_E.c.event_type == event_type)
        if after_seq is not None:
            query = query.where(_E.c.seq > after_seq)
        query = query.order_by(_E.c.id.asc())
        if limit:
            query = query.limit(limit)

        def read(conn: sa.Connection) -> list[JournalEntry]:
            return [JournalEntry(r.run_id, r.thread_id, r.user_id, r.seq, r.event_type, r.category,
                                 dict(r.payload or {}), r.created_at) for r in conn.execute(query)]

        return await self._db.read(read)

    async def partial_texts(self, run_id: str) -> dict[str, str]:
        """The latest ``ai_partial`` text of each message of a run (what a crashed run had said), in order.

        For the runtime's orphan recovery, which knows the run but not its user: run ids are unique.
        """
        query = (sa.select(_E.c.payload).where(_E.c.run_id == run_id, _E.c.event_type == "ai_partial")
                 .order_by(_E.c.id.asc()))

        def read(conn: sa.Connection) -> dict[str, str]:
            texts: dict[str, str] = {}
            for (payload,) in conn.execute(query):
                if isinstance(payload, dict) and isinstance(payload.get("content"), str):
                    texts.pop(str(payload.get("id") or ""), None)
                    texts[str(payload.get("id") or "")] = payload["content"]
            return texts

        return await self._db.read(read)

    async def delete_thread(self, thread_id: str) -> None:
        """Forget a thread's journal."""
        await self._db.write(lambda conn: conn.execute(sa.delete(_E).where(_E.c.thread_id == thread_id)))

    async def delete_run(self, run_id: str) -> None:
        """Forget a run's journal."""
        await self._db.write(lambda conn: conn.execute(sa.delete(_E).where(_E.c.run_id == run_id)))


class FeedbackStore:
    """Ratings of runs (``+1`` / ``-1``) with an optional comment."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def add(self, run_id: str, thread_id: str, user_id: str, rating: int,
                  comment: str | None = None) -> dict[str, Any]:
        """Store a rating; returns it as a dict."""
        row = {"feedback_id": str(uuid.uuid4()), "run_id": run_id, "thread_id": thread_id, "user_id": user_id,
               "rating": rating, "comment": comment, "created_at": time.time()}
        await self._db.write(lambda conn: conn.execute(sa.insert(_F), row))
        return {key: value for key, value in row.items() if key != "user_id"}

    async def list(self, run_id: str, user_id: str) -> list[dict[str, Any]]:
        """A run's ratings by this user."""
        query = (sa.select(_F.c.feedback_id, _F.c.run_id, _F.c.thread_id, _F.c.rating, _F.c.comment,
                           _F.c.created_at).where(_F.c.run_id == run_id, _F.c.user_id == user_id))
        return await self._db.read(lambda conn: [dict(r._mapping) for r in conn.execute(query)])
