"""The SQLite checkpointer: LangGraph's ``SqliteSaver`` tables, written behind the run.

LangGraph's ``AsyncSqliteSaver`` goes through aiosqlite, which hops to its own thread
for every driver call (execute, fetch, cursor close, commit): about sixty hops per
agent turn, each waking the event loop. :class:`ThreadedSqliteSaver` works on the
store's :class:`~deerflow_nb.persistence.dbthread.DbWorker` instead:

- writes (``aput``, ``aput_writes``) serialise on the caller's loop (the values are
  the run's live objects) and are *queued*: the insert and commit run on the database
  thread while the graph goes on, with no hop back. LangGraph's ``durability="async"``
  never waits for them anyway; this removes the wake-ups too.
- reads and deletes wait for their result; the database thread runs jobs in order, so
  they see every write queued before them (a run's final status, written through the
  same thread, lands after its checkpoints).
- a failed write is logged and raised by the next operation, and by :meth:`aflush`,
  which the runtime awaits when a run's graph has finished.
- delta channels' histories (``DeltaChannel``, delta checkpoint mode) are answered from
  what this saver wrote (:class:`~deerflow_nb.persistence.delta_log.DeltaLog`), so a turn
  late in a long thread does not re-read its ancestors; unknown ones come from the database.

The tables and stored bytes are LangGraph's own: either saver reads what the other wrote.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    get_checkpoint_metadata,
)
from langgraph.checkpoint.sqlite import SqliteSaver

from deerflow_nb.persistence.dbthread import DbWorker, sqlite_wal
from deerflow_nb.persistence.delta_log import DeltaLog, history_or_read

__all__ = ["ThreadedSqliteSaver", "open_sqlite_saver"]

logger = logging.getLogger(__name__)

_INSERT_CHECKPOINT = (
    "INSERT OR REPLACE INTO checkpoints (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, "
    "type, checkpoint, metadata) VALUES (?, ?, ?, ?, ?, ?, ?)"
)
_WRITE_COLUMNS = "(thread_id, checkpoint_ns, checkpoint_id, task_id, task_path, idx, channel, type, value)"
_REPLACE_WRITES = f"INSERT OR REPLACE INTO writes {_WRITE_COLUMNS} VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
_IGNORE_WRITES = f"INSERT OR IGNORE INTO writes {_WRITE_COLUMNS} VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"


class ThreadedSqliteSaver(SqliteSaver):
    """A ``SqliteSaver`` whose async writes are queued on ``worker`` (see the module docs).

    The sync methods work from any thread; reads made from outside the database thread
    wait for the queued writes first.
    """

    def __init__(self, conn: sqlite3.Connection, worker: DbWorker) -> None:
        super().__init__(conn)
        self.worker = worker
        self._failure: BaseException | None = None
        self._failure_lock = threading.Lock()
        self._pending = False  # queued writes executed but not committed yet (group commit)
        self._buffer: list[tuple[str, list[tuple[Any, ...]]]] = []  # (statement, rows) not yet drained
        self._buffer_lock = threading.Lock()
        self._drain_queued = False
        # threads known to have no checkpoint yet (ids generated in this process, never written):
        # reading their latest checkpoint needs no trip to the database
        self._empty: set[str] = set()
        self.delta_log = DeltaLog(self.serde)
        worker.add_settle_hook(self._commit_pending)

    def mark_new_thread(self, thread_id: str) -> None:
        """Declare that ``thread_id`` has no checkpoint (it was just generated, never run)."""
        if len(self._empty) >= 4096:
            self._empty.clear()
        self._empty.add(thread_id)

    def _commit_pending(self) -> None:
        """Commit the queued writes executed so far (the worker calls this when it settles)."""
        if not self._pending:
            return
        self._pending = False
        try:
            with self.lock:
                self.conn.commit()
        except BaseException as exc:
            self._record_failure(exc)

    # -- failures of queued writes ------------------------------------------------------
    def _record_failure(self, exc: BaseException) -> None:
        logger.error("could not write a checkpoint: %s", exc)
        with self._failure_lock:
            if self._failure is None:
                self._failure = exc

    def _raise_failure(self) -> None:
        with self._failure_lock:
            failure, self._failure = self._failure, None
        if failure is not None:
            raise RuntimeError(f"an earlier checkpoint write failed: {failure}") from failure

    def _queue(self, query: str, rows: list[tuple[Any, ...]]) -> None:
        """Buffer rows for the database thread; one drain job writes everything buffered by then."""
        with self._buffer_lock:
            self._buffer.append((query, rows))
            if self._drain_queued:
                return
            self._drain_queued = True
        self.worker.submit(self._drain, deferred=True)  # committed with the burst it belongs to

    def _drain(self) -> None:
        with self._buffer_lock:
            batch, self._buffer = self._buffer, []
            self._drain_queued = False
        try:
            with self.lock:
                self.setup()
                self._execute_batch(self.conn, batch)
            self._pending = True
        except BaseException as exc:  # reported by the next operation and by aflush()
            self._record_failure(exc)

    @staticmethod
    def _execute_batch(conn: sqlite3.Connection, batch: list[tuple[str, list[tuple[Any, ...]]]]) -> None:
        """Run the buffered inserts in order, one ``executemany`` per run of the same statement."""
        index = 0
        while index < len(batch):
            query, rows = batch[index][0], list(batch[index][1])
            index += 1
            while index < len(batch) and batch[index][0] == query:
                rows += batch[index][1]
                index += 1
            conn.executemany(query, rows)

    async def aflush(self) -> None:
        """Wait until every queued write is committed; raise if one failed."""
        await self.worker.call(lambda: None)
        self._raise_failure()

    # -- writes -------------------------------------------------------------------------

    def _checkpoint_row(self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata
                        ) -> tuple[RunnableConfig, tuple[Any, ...]]:
        configurable = config["configurable"]
        type_, blob = self.serde.dumps_typed(checkpoint)
        meta = json.dumps(get_checkpoint_metadata(config, metadata), ensure_ascii=False).encode("utf-8", "ignore")
        row = (str(configurable["thread_id"]), configurable["checkpoint_ns"], checkpoint["id"],
               configurable.get("checkpoint_id"), type_, blob, meta)
        saved: RunnableConfig = {"configurable": {"thread_id": configurable["thread_id"],
                                                  "checkpoint_ns": configurable["checkpoint_ns"],
                                                  "checkpoint_id": checkpoint["id"]}}
        self.delta_log.put(row[0], row[1], row[2], row[3], (type_, blob), list(checkpoint["channel_values"]))
        return saved, row

    def _writes_rows(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str,
                     task_path: str) -> tuple[str, list[tuple[Any, ...]]]:
        configurable = config["configurable"]
        query = _REPLACE_WRITES if all(channel in WRITES_IDX_MAP for channel, _ in writes) else _IGNORE_WRITES
        rows = [(str(configurable["thread_id"]), str(configurable["checkpoint_ns"]),
                 str(configurable["checkpoint_id"]), task_id, task_path, WRITES_IDX_MAP.get(channel, idx), channel,
                 *self.serde.dumps_typed(value))
                for idx, (channel, value) in enumerate(writes)]
        if rows:
            self.delta_log.put_writes(rows[0][0], rows[0][1], rows[0][2], task_id, task_path,
                                      [(row[5], row[6], (row[7], row[8])) for row in rows])
        return query, rows

    def put(self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata,
            new_versions: ChannelVersions) -> RunnableConfig:
        """Store a checkpoint now (sync graphs)."""
        saved, row = self._checkpoint_row(config, checkpoint, metadata)
        with self.cursor() as cur:
            cur.execute(_INSERT_CHECKPOINT, row)
        return saved

    def put_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str,
                   task_path: str = "") -> None:
        """Store a task's pending writes now (sync graphs)."""
        query, rows = self._writes_rows(config, writes, task_id, task_path)
        with self.cursor() as cur:
            cur.executemany(query, rows)

    async def aput(self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata,
                   new_versions: ChannelVersions) -> RunnableConfig:
        """Serialise the checkpoint here and queue its insert."""
        self._raise_failure()
        saved, row = self._checkpoint_row(config, checkpoint, metadata)
        self._empty.discard(row[0])
        self._queue(_INSERT_CHECKPOINT, [row])
        return saved

    async def aput_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str,
                          task_path: str = "") -> None:
        """Serialise a task's pending writes here and queue their insert."""
        self._raise_failure()
        query, rows = self._writes_rows(config, writes, task_id, task_path)
        self._empty.discard(str(config["configurable"]["thread_id"]))
        self._queue(query, rows)

    # -- reads (after the queued writes) --------------------------------------------------
    def _on_worker(self, func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        if self.worker.on_thread():
            return func(*args, **kwargs)
        return self.worker.submit(func, *args, **kwargs).result()

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint ``config`` names (its newest one without a ``checkpoint_id``)."""
        return self._on_worker(super().get_tuple, config)  # type: ignore[no-any-return]

    def list(self, config: RunnableConfig | None, *, filter: dict[str, Any] | None = None,
             before: RunnableConfig | None = None, limit: int | None = None) -> Iterator[CheckpointTuple]:
        """Checkpoints newest first."""
        parent = super().list
        return iter(self._on_worker(lambda: [*parent(config, filter=filter, before=before, limit=limit)]))

    def delete_thread(self, thread_id: str) -> None:
        """Delete every checkpoint and write of a thread."""
        self.delta_log.forget(str(thread_id))
        self._on_worker(super().delete_thread, thread_id)

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """Async twin of :meth:`get_tuple`."""
        self._raise_failure()
        configurable = config.get("configurable", {})
        if (str(configurable.get("thread_id")) in self._empty and not configurable.get("checkpoint_id")
                and not configurable.get("checkpoint_ns")):
            return None
        return await self.worker.call(self.get_tuple, config)

    async def alist(self, config: RunnableConfig | None, *, filter: dict[str, Any] | None = None,
                    before: RunnableConfig | None = None, limit: int | None = None
                    ) -> AsyncIterator[CheckpointTuple]:
        """Checkpoints newest first (read in one call, then yielded)."""
        self._raise_failure()
        items = await self.worker.call(lambda: [*self.list(config, filter=filter, before=before, limit=limit)])
        for item in items:
            yield item

    async def adelete_thread(self, thread_id: str) -> None:
        """Async twin of :meth:`delete_thread`."""
        await self.worker.call(self.delete_thread, thread_id)

    async def aget_delta_channel_history(self, *, config: RunnableConfig, channels: Sequence[str]
                                         ) -> Mapping[str, Any]:
        """The delta-channel walk: from what this saver wrote when it can, else the database's, in one call."""
        self._raise_failure()
        return await history_or_read(self.delta_log, config, channels, lambda: self.worker.call(
            self.get_delta_channel_history, config=config, channels=channels))


def _connect(path: Path, worker: DbWorker) -> ThreadedSqliteSaver:
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(str(path), timeout=30, check_same_thread=False)
    try:
        sqlite_wal(conn)
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
        try:
            await saver.aflush()
        finally:
            await worker.call(saver.conn.close)

    return saver, close

