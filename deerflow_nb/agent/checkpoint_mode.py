"""Checkpoint channel modes (``full`` / ``delta``): the process-frozen mode, its marker and the gate.

In ``delta`` mode the lead agent's ``messages`` channel is LangGraph's ``DeltaChannel``
(see :func:`~deerflow_nb.agent.state.thread_state_schema`): a checkpoint stores the
messages each step wrote, not the whole list, so a long thread's checkpoints stop growing
with its length. The savers (SQLite, PostgreSQL) are unchanged; the difference lives in
the compiled graph's channels.

- The mode is **frozen per process** by the first runtime or graph that asks
  (:func:`freeze_checkpoint_mode`); asking for another one raises
  :class:`~deerflow_nb.errors.CheckpointModeReconfigurationError`. Change it in
  ``config.yaml`` and restart.
- Every checkpoint written in delta mode carries the metadata marker
  ``deerflow_checkpoint_channel_mode: "delta"`` (:data:`MODE_MARKER`). A checkpoint
  without it was written in full mode (LangGraph's own ``counters_since_delta_snapshot``
  metadata also counts as delta).
- Compatibility is one-way: a delta process reads full-mode threads (their last full
  list seeds the delta channel), a full process refuses delta threads with
  :class:`~deerflow_nb.errors.CheckpointModeMismatchError` (:func:`ensure_compatible`),
  because a plain read of a delta checkpoint would see no messages.

Never read ``channel_values`` of a delta checkpoint directly: :func:`materialized_values`
replays the stored writes.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from langgraph.channels import DeltaChannel
from langgraph.checkpoint.base import CheckpointTuple
from langgraph.checkpoint.serde.types import _DeltaSnapshot

from deerflow_nb.agent.reducers import merge_message_writes
from deerflow_nb.agent.state import DEFAULT_DELTA_SNAPSHOT_FREQUENCY
from deerflow_nb.errors import CheckpointModeMismatchError, CheckpointModeReconfigurationError

__all__ = ["CHECKPOINT_MODES", "DELTA_CHANNELS", "MODE_MARKER", "checkpoint_mode_of", "ensure_compatible",
           "ensure_thread_compatible", "freeze_checkpoint_mode", "frozen_checkpoint_mode", "materialized_values",
           "process_mode", "register_delta_folds", "unfreeze_checkpoint_mode"]

CHECKPOINT_MODES = ("full", "delta")
#: Checkpoint metadata key stamped on every checkpoint a delta-mode graph writes.
MODE_MARKER = "deerflow_checkpoint_channel_mode"
#: The lead agent's channels that are ``DeltaChannel`` in delta mode.
DELTA_CHANNELS = ("messages",)

_lock = threading.Lock()
_frozen: tuple[str, int] | None = None


def freeze_checkpoint_mode(mode: str, snapshot_frequency: int = DEFAULT_DELTA_SNAPSHOT_FREQUENCY
                           ) -> tuple[str, int]:
    """Fix this process's ``(mode, snapshot_frequency)``; the same values again are fine.

    Raises :class:`~deerflow_nb.errors.CheckpointModeReconfigurationError` for other values
    (a process cannot mix modes: its graphs and readers must agree), ``ValueError`` for an
    unknown mode.
    """
    global _frozen
    if mode not in CHECKPOINT_MODES:
        raise ValueError(f"checkpoint_channel_mode must be 'full' or 'delta', got {mode!r}")
    wanted = (mode, int(snapshot_frequency))
    with _lock:
        if _frozen is None:
            _frozen = wanted
        elif _frozen != wanted:
            raise CheckpointModeReconfigurationError(
                f"this process runs checkpoint_channel_mode={_frozen[0]!r} (snapshot frequency {_frozen[1]}); "
                f"{mode!r} (snapshot frequency {wanted[1]}) needs a restart")
        return _frozen


def frozen_checkpoint_mode() -> tuple[str, int] | None:
    """The process's frozen ``(mode, snapshot_frequency)``, or ``None`` before the first freeze."""
    return _frozen


def unfreeze_checkpoint_mode() -> None:
    """Forget the frozen mode (tests only: a process must not change modes while it has graphs)."""
    global _frozen
    with _lock:
        _frozen = None


def register_delta_folds(checkpointer: Any) -> None:
    """Tell a saver that keeps delta histories (the SQLite and PostgreSQL ones) the delta channels' reducer."""
    log = getattr(checkpointer, "delta_log", None)
    if log is not None:
        for channel in DELTA_CHANNELS:
            log.register_fold(channel, merge_message_writes)


def checkpoint_mode_of(metadata: Mapping[str, Any] | None) -> str:
    """``delta`` or ``full``: the mode a checkpoint with this metadata was written in."""
    metadata = metadata or {}
    marker = metadata.get(MODE_MARKER)
    if marker in CHECKPOINT_MODES:
        return str(marker)
    counters = metadata.get("counters_since_delta_snapshot")
    if isinstance(counters, Mapping) and any(channel in counters for channel in DELTA_CHANNELS):
        return "delta"
    return "full"


def ensure_compatible(mode: str, item: CheckpointTuple | None, thread_id: str) -> None:
    """Refuse a full-mode process a delta-mode checkpoint (delta processes read both)."""
    if mode == "full" and item is not None and checkpoint_mode_of(item.metadata) == "delta":
        raise CheckpointModeMismatchError(
            f"thread {thread_id!r} was written with checkpoint_channel_mode 'delta'; this process runs 'full'. "
            "Set checkpoint_channel_mode: delta in config.yaml and restart to open it.")


def process_mode() -> str:
    """The process's frozen checkpoint mode (``full`` before anything froze one)."""
    return _frozen[0] if _frozen is not None else "full"


async def ensure_thread_compatible(saver: Any, thread_id: str) -> None:
    """:func:`ensure_compatible` for the thread's newest checkpoint (no read at all in a delta process)."""
    if process_mode() == "full":
        ensure_compatible("full", await saver.aget_tuple({"configurable": {"thread_id": thread_id}}), thread_id)


async def materialized_values(saver: Any, item: CheckpointTuple) -> dict[str, Any]:
    """The state values of checkpoint ``item``, delta channels replayed from their stored writes.

    A full-mode checkpoint holds everything already; a delta one holds the ``messages``
    list only at its snapshots, else the saver's delta history (the nearest snapshot or
    full-mode list above it plus the writes since) is folded with the delta reducer.
    A full-mode process refuses a delta checkpoint (:func:`ensure_compatible`).
    """
    ensure_compatible(process_mode(), item, str(item.config.get("configurable", {}).get("thread_id")))
    values = dict(item.checkpoint.get("channel_values", {}))
    missing = []
    for channel in DELTA_CHANNELS:
        value = values.get(channel)
        if isinstance(value, _DeltaSnapshot):
            values[channel] = value.value
        elif channel not in values and channel in item.checkpoint.get("channel_versions", {}):
            missing.append(channel)
    if missing:
        histories = await saver.aget_delta_channel_history(config=item.config, channels=missing)
        for channel in missing:
            history = histories.get(channel) or {}
            replay: DeltaChannel[Any] = DeltaChannel(merge_message_writes).from_checkpoint(history.get("seed"))
            replay.replay_writes(history.get("writes") or [])
            values[channel] = replay.value
    return values
