"""``Store``: the app tables and the LangGraph checkpointer, opened together on one event loop.

SQLite (``{home}/deerflow.db``) is the default; PostgreSQL when ``database.url`` says so;
``memory`` keeps everything in memory for throwaway work.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

from langgraph.checkpoint.base import BaseCheckpointSaver

from deerflow_nb.persistence.engine import Database, DatabaseTarget, DbWorker, open_checkpointer, open_database
from deerflow_nb.persistence.events import FeedbackStore, RunEventStore
from deerflow_nb.persistence.runs import RunStore
from deerflow_nb.persistence.schedules import ScheduleStore
from deerflow_nb.persistence.threads import ThreadRecord, ThreadStore

__all__ = ["Store", "open_store"]


class Store:
    """Threads, runs, the run journal, feedback, scheduled tasks and checkpoints. Open with :func:`open_store`."""

    def __init__(self, db: Database, checkpointer: BaseCheckpointSaver,
                 close_checkpointer: Callable[[], Awaitable[None]]) -> None:
        self.db = db
        self.checkpointer = checkpointer
        self.threads = ThreadStore(db)
        self.runs = RunStore(db)
        self.events = RunEventStore(db)
        self.feedback = FeedbackStore(db)
        self.schedules = ScheduleStore(db)
        self._close_checkpointer: Callable[[], Awaitable[None]] | None = close_checkpointer

    @property
    def backend(self) -> str:
        """``sqlite``, ``postgres`` or ``memory``."""
        return self.db.backend

    # -- thread helpers used by the client ------------------------------------------
    async def create_or_get_thread(self, thread_id: str, user_id: str) -> ThreadRecord:
        """Return the thread, creating it for ``user_id``; another user's thread is not found."""
        return await self.threads.get_or_create(thread_id, user_id)

    async def ensure_thread(self, thread_id: str, user_id: str, *, new: bool = False) -> None:
        """Like :meth:`create_or_get_thread` without the record; free for threads verified before.

        ``new=True`` says ``thread_id`` was just generated: no lookup, and the row is written
        with the thread's first run (see :meth:`ThreadStore.ensure`).
        """
        await self.threads.ensure(thread_id, user_id, new=new)

    async def get_thread(self, thread_id: str, user_id: str) -> ThreadRecord:
        """The thread of ``user_id`` or :class:`~deerflow_nb.errors.NotFoundError`."""
        return await self.threads.get(thread_id, user_id)

    async def touch(self, thread_id: str, *, title: str | None = None) -> None:
        """Bump ``updated_at`` (and set the title when given)."""
        await self.threads.update(thread_id, title=title)

    async def list_threads(self, user_id: str, limit: int | None = None) -> list[ThreadRecord]:
        """The threads of ``user_id``, most recently updated first."""
        return await self.threads.search(user_id, limit=limit)

    async def delete_thread(self, thread_id: str, user_id: str) -> None:
        """Delete the thread's metadata, runs, journal and checkpoints (files stay on disk)."""
        await self.threads.get(thread_id, user_id)
        self.threads.forget(thread_id)
        await self.checkpointer.adelete_thread(thread_id)
        await self.events.delete_thread(thread_id)
        await self.runs.delete_thread(thread_id)
        await self.threads.delete(thread_id, user_id)

    async def aclose(self) -> None:
        """Close the checkpointer and the engine."""
        if self._close_checkpointer is not None:
            close, self._close_checkpointer = self._close_checkpointer, None
            try:
                await close()
                await self.db.dispose()
            finally:
                if self.db.worker is not None:
                    self.db.worker.shutdown()


async def open_store(target: DatabaseTarget | Path | None) -> Store:
    """Open the database and checkpointer. ``None``: in memory; a ``Path``: that SQLite file.

    Must run on the loop that will use the store (its connections are loop-affine).
    """
    if target is None:
        target = DatabaseTarget("memory", "sqlite://")
    elif isinstance(target, Path):
        target = DatabaseTarget("sqlite", f"sqlite:///{target}", sqlite_path=target)
    worker = DbWorker() if target.backend != "postgres" else None
    try:
        db = await open_database(target, worker=worker)
        try:
            saver, close = await open_checkpointer(target, worker=worker)
        except BaseException:
            await db.dispose()
            raise
    except BaseException:
        if worker is not None:
            worker.shutdown()
        raise
    return Store(db, saver, close)
