"""Thread metadata and the LangGraph checkpointer, opened together on one event loop.

SQLite (``{home}/deerflow.db``) is the default; ``database.backend: memory`` keeps
everything in memory for throwaway work.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiosqlite
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from deerflow_nb.errors import NotFoundError

__all__ = ["Store", "ThreadRecord", "open_store"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS deerflow_threads (
    thread_id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL,
    title TEXT,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS deerflow_threads_user ON deerflow_threads (user_id, updated_at);
"""


@dataclass(frozen=True)
class ThreadRecord:
    """One thread's metadata."""

    thread_id: str
    user_id: str
    title: str | None
    created_at: float
    updated_at: float

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"thread_id": self.thread_id, "user_id": self.user_id, "title": self.title,
                "created_at": self.created_at, "updated_at": self.updated_at}


class Store:
    """Thread metadata plus the checkpointer. Create with :func:`open_store`; close with :meth:`aclose`."""

    def __init__(self, checkpointer: BaseCheckpointSaver, conn: aiosqlite.Connection | None) -> None:
        self.checkpointer = checkpointer
        self._conn = conn
        self._memory: dict[str, ThreadRecord] = {}
        self._lock = asyncio.Lock()

    async def create_or_get_thread(self, thread_id: str, user_id: str) -> ThreadRecord:
        """Return the thread, creating it for ``user_id``; another user's thread is not found."""
        async with self._lock:
            record = await self._get(thread_id)
            if record is not None:
                if record.user_id != user_id:
                    raise NotFoundError(f"thread {thread_id!r} not found")
                return record
            now = time.time()
            record = ThreadRecord(thread_id, user_id, None, now, now)
            if self._conn is None:
                self._memory[thread_id] = record
            else:
                await self._conn.execute(
                    "INSERT INTO deerflow_threads (thread_id, user_id, title, created_at, updated_at) "
                    "VALUES (?, ?, ?, ?, ?)", (thread_id, user_id, None, now, now))
                await self._conn.commit()
            return record

    async def _get(self, thread_id: str) -> ThreadRecord | None:
        if self._conn is None:
            return self._memory.get(thread_id)
        async with self._conn.execute(
            "SELECT thread_id, user_id, title, created_at, updated_at FROM deerflow_threads WHERE thread_id = ?",
            (thread_id,),
        ) as cursor:
            row = await cursor.fetchone()
        return ThreadRecord(*row) if row else None

    async def get_thread(self, thread_id: str, user_id: str) -> ThreadRecord:
        """The thread of ``user_id`` or :class:`NotFoundError`."""
        record = await self._get(thread_id)
        if record is None or record.user_id != user_id:
            raise NotFoundError(f"thread {thread_id!r} not found")
        return record

    async def touch(self, thread_id: str, *, title: str | None = None) -> None:
        """Bump ``updated_at`` (and set the title when given)."""
        now = time.time()
        if self._conn is None:
            old = self._memory.get(thread_id)
            if old:
                self._memory[thread_id] = ThreadRecord(old.thread_id, old.user_id, title or old.title,
                                                       old.created_at, now)
            return
        await self._conn.execute(
            "UPDATE deerflow_threads SET updated_at = ?, title = COALESCE(?, title) WHERE thread_id = ?",
            (now, title, thread_id))
        await self._conn.commit()

    async def list_threads(self, user_id: str, limit: int | None = None) -> list[ThreadRecord]:
        """The threads of this user,, most recently updated first."""
        if self._conn is None:
            rows = sorted((r for r in self._memory.values() if r.user_id == user_id),
                          key=lambda r: r.updated_at, reverse=True)
            return rows[:limit] if limit else rows
        sql = ("SELECT thread_id, user_id, title, created_at, updated_at FROM deerflow_threads "
               "WHERE user_id = ? ORDER BY updated_at DESC")
        params: tuple[Any, ...] = (user_id,)
        if limit:
            sql += " LIMIT ?"
            params += (limit,)
        async with self._conn.execute(sql, params) as cursor:
            return [ThreadRecord(*row) async for row in cursor]

    async def delete_thread(self, thread_id: str, user_id: str) -> None:
        """Delete the thread's metadata and checkpoints."""
        await self.get_thread(thread_id, user_id)
        await self.checkpointer.adelete_thread(thread_id)
        if self._conn is None:
            self._memory.pop(thread_id, None)
            return
        await self._conn.execute("DELETE FROM deerflow_threads WHERE thread_id = ?", (thread_id,))
        await self._conn.commit()

    async def aclose(self) -> None:
        """Close the database connection."""
        if self._conn is not None:
            await self._conn.close()
            self._conn = None


async def open_store(db_path: Path | None) -> Store:
    """Open SQLite at ``db_path`` (``None``: in memory). Must run on the loop that will use it."""
    if db_path is None:
        return Store(InMemorySaver(), None)
    db_path.parent.mkdir(parents=True, exist_ok=True)
    conn = await aiosqlite.connect(str(db_path))
    await conn.execute("PRAGMA journal_mode=WAL")
    await conn.execute("PRAGMA synchronous=NORMAL")
    await conn.executescript(_SCHEMA)
    await conn.commit()
    saver = AsyncSqliteSaver(conn)
    await saver.setup()
    return Store(saver, conn)
