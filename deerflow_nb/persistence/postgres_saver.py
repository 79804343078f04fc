"""``DeltaLoggingPostgresSaver``: LangGraph's ``AsyncPostgresSaver`` that answers delta histories from memory.

A thread's next turn asks the saver for the ``messages`` history of its newest checkpoint (the
delta channel's seed and the writes since). LangGraph's PostgreSQL saver reads that from the
database each time: the last snapshot and every write after it, a walk that grows with the
thread. This saver also records what it writes in a :class:`~deerflow_nb.persistence.delta_log.DeltaLog`
(as the SQLite saver does) and answers from it when it knows the whole walk.

Several servers may share the database: a checkpoint's content never changes once written, and
a checkpoint this process did not write (another server continued the thread) is unknown to its
log, so that read goes to the database, as before. One active run per thread (the runs table's
unique index) means no two processes add writes to one checkpoint at once.

What the log records is the bytes the database got: LangGraph's saver serialises each write and
each changed channel value (off the event loop, in ``_dump_writes`` / ``_dump_blobs``), and this
saver collects those rows instead of serialising the values a second time on the loop.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextvars import ContextVar
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import WRITES_IDX_MAP, ChannelVersions, Checkpoint, CheckpointMetadata
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

from deerflow_nb.persistence.delta_log import DeltaLog, history_or_read

__all__ = ["DeltaLoggingPostgresSaver"]

# The rows LangGraph's saver serialised during this ``aput`` / ``aput_writes`` call. ``asyncio.to_thread``
# runs the dump in a copy of the caller's context: the copy holds the same list, so the rows come back.
_DUMPED: ContextVar[list[tuple[Any, ...]] | None] = ContextVar("deerflow_pg_dumped", default=None)


def _collect(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    box = _DUMPED.get()
    if box is not None:
        box.extend(rows)
    return rows


class DeltaLoggingPostgresSaver(AsyncPostgresSaver):
    """``AsyncPostgresSaver`` plus the delta log of what it wrote (see the module docstring)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: What this saver wrote, for the delta-channel walks of the next turns.
        self.delta_log = DeltaLog(self.serde)

    # pass-through signatures: what is collected is checked row by row, and the saver's own arguments may change
    def _dump_blobs(self, *args: Any, **kwargs: Any) -> list[Any]:
        return _collect(super()._dump_blobs(*args, **kwargs))

    def _dump_writes(self, *args: Any, **kwargs: Any) -> list[Any]:
        return _collect(super()._dump_writes(*args, **kwargs))

    async def aput(self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata,
                   new_versions: ChannelVersions) -> RunnableConfig:
        """Store the checkpoint, then record it in the log (its blob rows as the database got them)."""
        rows: list[tuple[Any, ...]] = []
        token = _DUMPED.set(rows)
        try:
            saved = await super().aput(config, checkpoint, metadata, new_versions)
        finally:
            _DUMPED.reset(token)
        values = checkpoint["channel_values"]
        # a blob row: (thread_id, checkpoint_ns, channel, version, type, bytes); "empty" has no value
        blobs = {row[2]: (row[4], row[5]) for row in rows
                 if len(row) == 6 and row[2] in values and row[5] is not None}
        rest = {**checkpoint, "channel_values": {k: v for k, v in values.items() if k not in blobs}}
        configurable = config["configurable"]
        self.delta_log.put(str(configurable["thread_id"]), str(configurable.get("checkpoint_ns", "")),
                           checkpoint["id"], configurable.get("checkpoint_id"), self.serde.dumps_typed(rest),
                           list(values), blobs)
        return saved

    async def aput_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str,
                          task_path: str = "") -> None:
        """Store a task's writes, then record them (with the saver's upsert rules) in the log."""
        rows: list[tuple[Any, ...]] = []
        token = _DUMPED.set(rows)
        try:
            await super().aput_writes(config, writes, task_id, task_path)
        finally:
            _DUMPED.reset(token)
        if not writes:
            return
        # a write row: (thread_id, ns, checkpoint_id, task_id, task_path, idx, channel, type, bytes)
        if len(rows) == len(writes) and all(len(row) == 9 and row[6] == channel
                                            for row, (channel, _) in zip(rows, writes, strict=True)):
            typed = [(row[5], row[6], (row[7], row[8])) for row in rows]
        else:  # a saver version that lays its rows out otherwise: serialise them here
            typed = [(WRITES_IDX_MAP.get(channel, idx), channel, self.serde.dumps_typed(value))
                     for idx, (channel, value) in enumerate(writes)]
        configurable = config["configurable"]
        self.delta_log.put_writes(str(configurable["thread_id"]), str(configurable.get("checkpoint_ns", "")),
                                  str(configurable["checkpoint_id"]), task_id, task_path, typed)

    async def adelete_thread(self, thread_id: str) -> None:
        """Delete the thread and forget what the log knows of it."""
        await super().adelete_thread(thread_id)
        self.delta_log.forget(str(thread_id))

    async def aget_delta_channel_history(self, *, config: RunnableConfig, channels: Sequence[str]
                                         ) -> Mapping[str, Any]:
        """The delta-channel walk from what this saver wrote when it can, else the database's (then kept)."""
        read = super().aget_delta_channel_history
        return await history_or_read(self.delta_log, config, channels, lambda: read(config=config, channels=channels))
