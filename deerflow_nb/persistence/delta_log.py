"""``DeltaLog``: a saver's memory of what it wrote, answering ``get_delta_channel_history`` without a query.

A delta channel (LangGraph's ``DeltaChannel``) is rebuilt on every read from the nearest
ancestor checkpoint that holds its value (a snapshot, or a full-mode list) plus the writes
stored on the checkpoints from there down to the one read. LangGraph's SQLite saver finds
them by walking the ancestors in the database and deserialising each one, so a turn late in a
long thread re-reads hundreds of checkpoints and writes before the graph starts.

The saver that wrote those checkpoints already knows them. :class:`DeltaLog` keeps, per
thread, each checkpoint it put (its parent and which channels it holds) and the writes put
on it, still serialised; a history is the same walk in memory, and the answer is kept on its
checkpoint, so the next turn walks only the few checkpoints written since. Anything it did not
see (another process's checkpoints, a thread from before a restart, an old checkpoint whose
entries were dropped) answers ``None`` and the caller asks the database; that answer is kept
too, so a thread continued after a restart reads its history once.

Values are deserialised from the stored bytes (never the run's live objects), once each.
With the channel's reducer registered (:meth:`DeltaLog.register_fold`), a kept history is
folded into the channel's value, so a late turn replays only the writes since the last read.
The value is then shared by the reads: readers must not change it in place (LangGraph's
channels and reducers do not).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langgraph.channels import DeltaChannel
from langgraph.checkpoint.base import WRITES_IDX_MAP, DeltaChannelHistory, PendingWrite, writes_sort_key

__all__ = ["DeltaLog", "history_or_read"]

_MISSING: Any = object()


@dataclass(eq=False)
class _Write:
    channel: str
    task_id: str
    task_path: str
    idx: int
    typed: tuple[str, bytes]
    value: Any = _MISSING


@dataclass(eq=False)
class _Node:
    """One checkpoint: parent, serialised body, channels it holds, writes put on it, a kept history."""

    parent: str | None = None
    known: bool = False  # put by this saver (parent and body are known)
    typed: tuple[str, bytes] | None = None
    channels: frozenset[str] = frozenset()
    blobs: Mapping[str, tuple[str, bytes]] = field(default_factory=dict)  # channel values stored on their own
    seeds: dict[str, Any] = field(default_factory=dict)
    writes: dict[tuple[str, int], _Write] = field(default_factory=dict)
    histories: dict[str, DeltaChannelHistory] = field(default_factory=dict)


class DeltaLog:
    """Per-thread record of checkpoints and writes put through one saver (see the module docs).

    ``serde`` deserialises stored values. At most ``max_threads`` threads are kept (least
    recently used dropped) and ``max_nodes`` checkpoints per thread (the thread is then
    forgotten and read from the database once more). Thread-safe.
    """

    def __init__(self, serde: Any, *, max_threads: int = 64, max_nodes: int = 5_000) -> None:
        self.serde = serde
        self.max_threads = max_threads
        self.max_nodes = max_nodes
        self._folds: dict[str, Callable[[Any, Sequence[Any]], Any] | None] = {}
        self._threads: OrderedDict[tuple[str, str], dict[str, _Node]] = OrderedDict()
        self._lock = threading.Lock()

    def _nodes(self, thread_id: str, ns: str) -> dict[str, _Node]:
        key = (thread_id, ns)
        nodes = self._threads.get(key)
        if nodes is None:
            nodes = self._threads[key] = {}
            while len(self._threads) > self.max_threads:
                self._threads.popitem(last=False)
        else:
            self._threads.move_to_end(key)
        if len(nodes) > self.max_nodes:
            nodes.clear()
        return nodes

    def register_fold(self, channel: str, reducer: Callable[[Any, Sequence[Any]], Any]) -> None:
        """Declare ``channel``'s ``DeltaChannel`` reducer, so kept histories are folded into one value.

        A kept history then answers ``{"seed": value, "writes": []}`` (the value the reader's
        replay would build), and the next turn replays only its own writes. Two graphs that
        declare different reducers for one channel turn folding off for it.
        """
        with self._lock:
            known = self._folds.get(channel, reducer)
            self._folds[channel] = reducer if known is reducer else None

    def _fold(self, channel: str, found: DeltaChannelHistory) -> DeltaChannelHistory:
        reducer = self._folds.get(channel)
        if reducer is None or not found["writes"]:
            return found
        replay: DeltaChannel[Any] = DeltaChannel(reducer).from_checkpoint(found.get("seed"))
        replay.replay_writes(found["writes"])
        return {"seed": replay.value, "writes": []}

    # -- what the saver put -----------------------------------------------------------------
    def put(self, thread_id: str, ns: str, checkpoint_id: str, parent_id: str | None,
            typed: tuple[str, bytes], channels: Sequence[str],
            blobs: Mapping[str, tuple[str, bytes]] | None = None) -> None:
        """Record a checkpoint (``typed``: its serialised body; ``channels``: keys of its ``channel_values``).

        ``blobs`` holds channel values serialised on their own (the PostgreSQL saver's blob rows,
        reused instead of serialising them again); ``typed``'s ``channel_values`` then need not hold them.
        """
        with self._lock:
            nodes = self._nodes(thread_id, ns)
            node = nodes.get(checkpoint_id)
            if node is None:
                node = nodes[checkpoint_id] = _Node()
            node.parent, node.known, node.typed, node.blobs = parent_id, True, typed, dict(blobs or {})
            node.channels, node.seeds = frozenset(channels), {}
            node.histories.clear()

    def put_writes(self, thread_id: str, ns: str, checkpoint_id: str, task_id: str, task_path: str,
                   writes: Sequence[tuple[int, str, tuple[str, bytes]]]) -> None:
        """Record a task's writes ``(idx, channel, typed value)`` on a checkpoint (the saver's upsert rules)."""
        with self._lock:
            nodes = self._nodes(thread_id, ns)
            node = nodes.get(checkpoint_id)
            if node is None:
                node = nodes[checkpoint_id] = _Node()
            replace = all(channel in WRITES_IDX_MAP for _, channel, _ in writes)
            for idx, channel, typed in writes:
                key = (task_id, idx)
                if replace or key not in node.writes:
                    node.writes[key] = _Write(channel, task_id, task_path, idx, typed)

    def forget(self, thread_id: str) -> None:
        """Drop everything known about ``thread_id`` (all namespaces)."""
        with self._lock:
            for key in [k for k in self._threads if k[0] == thread_id]:
                del self._threads[key]

    # -- histories --------------------------------------------------------------------------
    def history(self, thread_id: str, ns: str, checkpoint_id: str,
                channels: Sequence[str]) -> dict[str, DeltaChannelHistory] | None:
        """The saver contract's answer from memory, or ``None`` when part of the walk is unknown here."""
        with self._lock:
            nodes = self._threads.get((thread_id, ns))
            target = nodes.get(checkpoint_id) if nodes is not None else None
            if nodes is None or target is None:
                return None
            result: dict[str, DeltaChannelHistory] = {}
            for channel in channels:
                kept = target.histories.get(channel)
                if kept is not None:
                    result[channel] = kept
                    continue
                found = self._walk(nodes, target, channel)
                if found is None:
                    return None
                result[channel] = self._fold(channel, found)
            self._keep(nodes, checkpoint_id, result)
            return result

    def remember(self, thread_id: str, ns: str, checkpoint_id: str,
                 histories: Mapping[str, DeltaChannelHistory]) -> None:
        """Keep a history read from the database on its checkpoint, for the walks of its descendants."""
        with self._lock:
            nodes = self._nodes(thread_id, ns)
            if checkpoint_id not in nodes:
                nodes[checkpoint_id] = _Node()
            self._keep(nodes, checkpoint_id, {ch: self._fold(ch, h) for ch, h in histories.items()})

    def _keep(self, nodes: dict[str, _Node], checkpoint_id: str, histories: dict[str, DeltaChannelHistory]) -> None:
        node = nodes[checkpoint_id]
        node.histories.update(histories)
        # Walks from below stop here now: the ancestors are no longer needed (a read of one of
        # them, or a branch from one, goes to the database), so memory stays about one turn.
        parent = node.parent
        while parent is not None and parent in nodes:
            parent = nodes.pop(parent).parent

    def _walk(self, nodes: dict[str, _Node], target: _Node, channel: str) -> DeltaChannelHistory | None:
        chain: list[_Node] = []  # nearest ancestor first
        seed: Any = _MISSING
        base: list[PendingWrite] = []
        node = target
        while True:
            if not node.known:
                return None
            parent_id = node.parent
            if parent_id is None:
                break  # the root: the channel starts empty
            parent = nodes.get(parent_id)
            if parent is None:
                return None
            chain.append(parent)
            if channel in parent.channels and parent.known:  # a snapshot (or full list): where the database stops
                seed = self._seed(parent, channel)
                break
            kept = parent.histories.get(channel)
            if kept is not None:
                seed = kept.get("seed", _MISSING)
                base = list(kept["writes"])
                break
            node = parent
        writes = base
        for ancestor in reversed(chain):
            stored = [w for w in ancestor.writes.values() if w.channel == channel]
            stored.sort(key=lambda w: writes_sort_key(w.task_path, w.task_id, w.idx))
            for w in stored:
                if w.value is _MISSING:
                    w.value = self.serde.loads_typed(w.typed)
                writes.append((w.task_id, channel, w.value))
        found: DeltaChannelHistory = {"writes": writes}
        if seed is not _MISSING:
            found["seed"] = seed
        return found

    def _seed(self, node: _Node, channel: str) -> Any:
        if channel not in node.seeds:
            if channel in node.blobs:
                node.seeds[channel] = self.serde.loads_typed(node.blobs[channel])
            else:
                assert node.typed is not None
                values = self.serde.loads_typed(node.typed).get("channel_values") or {}
                node.seeds.update({k: v for k, v in values.items() if k in node.channels and k not in node.blobs})
        return node.seeds[channel]


async def history_or_read(log: DeltaLog, config: Mapping[str, Any], channels: Sequence[str],
                          read: Callable[[], Awaitable[Mapping[str, Any]]]) -> Mapping[str, Any]:
    """A saver's ``aget_delta_channel_history``: from ``log`` when it knows the whole walk, else ``read()``.

    What ``read()`` (the database) answers for a checkpoint is kept on it, for the walks of its descendants.
    """
    configurable = config["configurable"]
    thread_id, ns = str(configurable["thread_id"]), str(configurable.get("checkpoint_ns", ""))
    checkpoint_id = configurable.get("checkpoint_id")
    if checkpoint_id:
        found = log.history(thread_id, ns, checkpoint_id, channels)
        if found is not None:
            return found
    histories = await read()
    if checkpoint_id:
        log.remember(thread_id, ns, checkpoint_id, histories)
    return histories
