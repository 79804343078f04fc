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
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import WRITES_IDX_MAP, ChannelVersions, Checkpoint, CheckpointMetadata
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

from deerflow_nb.persistence.delta_log import DeltaLog, history_or_read

__all__ = ["DeltaLoggingPostgresSaver"]


class DeltaLoggingPostgresSaver(AsyncPostgresSaver):
    """``AsyncPostgresSaver`` plus the delta log of what it wrote (see the module docstring)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: What this saver wrote, for the delta-channel walks of the next turns.
        self.delta_log = DeltaLog(self.serde)

    async def aput(self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata,
                   new_versions: ChannelVersions) -> RunnableConfig:
        """Store the checkpoint, then record it in the log."""
        saved = await super().aput(config, checkpoint, metadata, new_versions)
        configurable = config["configurable"]
        self.delta_log.put(str(configurable["thread_id"]), str(configurable.get("checkpoint_ns", "")),
                           checkpoint["id"], configurable.get("checkpoint_id"), self.serde.dumps_typed(checkpoint),
                           list(checkpoint["channel_values"]))
        return saved

    async def aput_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str,
                          task_path: str = "") -> None:
        """Store a task's writes, then record them (with the saver's upsert rules) in the log."""
        await super().aput_writes(config, writes, task_id, task_path)
        if writes:
            configurable = config["configurable"]
            self.delta_log.put_writes(
                str(configurable["thread_id"]), str(configurable.get("checkpoint_ns", "")),
                str(configurable["checkpoint_id"]), task_id, task_path,
                [(WRITES_IDX_MAP.get(channel, idx), channel, self.serde.dumps_typed(value))
                 for idx, (channel, value) in enumerate(writes)])

    async def adelete_thread(self, thread_id: str) -> None:
        """Delete the thread and forget what the log knows of it."""
        await super().adelete_thread(thread_id)
        self.delta_log.forget(str(thread_id))

    async def aget_delta_channel_history(self, *, config: RunnableConfig, channels: Sequence[str]
                                         ) -> Mapping[str, Any]:
        """The delta-channel walk from what this saver wrote when it can, else the database's (then kept)."""
        read = super().aget_delta_channel_history
        return await history_or_read(self.delta_log, config, channels, lambda: read(config=config, channels=channels))
