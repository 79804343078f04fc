"""The SQLite checkpointer: LangGraph's ``SqliteSaver`` driven from the store's database thread.

LangGraph's ``AsyncSqliteSaver`` goes through aiosqlite, which hops to its own thread
for every driver call (execute, fetch, cursor close, commit): about sixty hops per
agent turn. :class:`ThreadedSqliteSaver` runs each whole saver operation (serialise,
write, commit) as one call on the :class:`~deerflow_nb.persistence.engine.DbWorker`
that also writes the app tables. The tables and the stored bytes are LangGraph's own,
so a database written by either saver is read by the other.
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import ChannelVersions, Checkpoint, CheckpointMetadata, CheckpointTuple
from langgraph.checkpoint.sqlite import SqliteSaver

from deerflow_nb.persistence.engine import DbWorker

__all__ = ["ThreadedSqliteSaver", "open_sqlite_saver"]


class ThreadedSqliteSaver(SqliteSaver):
    """A ``SqliteSaver`` whose async methods each run as one call on ``worker``.

    The sync methods still work (from any thread: the connection is shared under the
    saver's lock), so ``graph.invoke`` and ``graph.get_state`` work too.
    """

    def __init__(self, conn: sqlite3.Connection, worker: DbWorker) -> None:
        super().__init__(conn)
        self.worker = worker

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint ``config`` names (its newest one without a ``checkpoint_id``)."""
        return await self.worker.call(self.get_tuple, config)

    async def alist(self, config: RunnableConfig | None, *, filter: dict[str, Any] | None = None,
                    before: RunnableConfig | None = None, limit: int | None = None
                    ) -> AsyncIterator[CheckpointTuple]:
        """Checkpoints newest first (read in one call, then yielded)."""
        def collect() -> list[CheckpointTuple]:
            return list(self.list(config, filter=filter, before=before, limit=limit))

        for item in await self.worker.call(collect):
            yield item

    async def aput(self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata,
                   new_versions: ChannelVersions) -> RunnableConfig:
        """Store a checkpoint."""
        return await self.worker.call(self.put, config, checkpoint, metadata, new_versions)

    async def aput_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str,
                          task_path: str = "") -> None:
        """Store a task's pending writes."""
        await self.worker.call(self.put_writes, config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        """Delete every checkpoint and write of a thread."""
        await self.worker.call(self.delete_thread, thread_id)

    async def aget_delta_channel_history(self, *, config: RunnableConfig, channels: Sequence[str]
                                         ) -> Mapping[str, Any]:
        """The saver's delta-channel walk, in one call."""
        return await self.worker.call(self.get_delta_channel_history, config=config, channels=channels)


def _connect(path: Path, worker: DbWorker) -> ThreadedSqliteSaver:
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(str(path), timeout=30, check_same_thread=False)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA busy_timeout=10000")
        saver = ThreadedSqliteSaver(conn, worker)
        saver.setup()
    except BaseException:
        conn.close()
        raise
    return saver


async def open_sqlite_saver(path: Path, worker: DbWorker
                            ) -> tuple[ThreadedSqliteSaver, Callable[[], Awaitable[None]]]:
    """Open (and set up) the checkpointer at ``path``; returns it and its async ``close``."""
    saver = await worker.call(_connect, path, worker)

    async def close() -> None:
        await worker.call(saver.conn.close)

    return saver, close
