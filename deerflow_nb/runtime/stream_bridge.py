"""``StreamBridge``: in-memory fan-out of a run's events to any number of subscribers.

Each run has a channel of numbered events (the SSE ``id`` is the number). The
channel retains the last ``queue_maxsize`` events for replay, plus whatever a
*live* subscriber has not read yet, up to that subscriber's ``max_lag`` events
(each reader's bounded buffer: ``reader_queue_maxsize`` for SSE readers, which
pass it; ``max_live_lag`` for in-process ones), so a reconnect can resume from
``Last-Event-ID`` and a stalled reader cannot make the channel grow without bound.
A cursor older than what is retained (a resume from too far back, or a reader that
fell more than ``max_lag`` events behind) yields a :data:`StreamGap` item (an id-less
``gap`` SSE event) and continues with the oldest retained event; the run keeps going.
Iteration ends only after the END marker (:meth:`StreamBridge.publish_end`); idle
subscribers get :data:`HEARTBEAT` items every ``heartbeat_seconds``. Once a finished
run's channel is cleaned up, :meth:`StreamBridge.final_id` still knows its last id, so
a late resume can tell "saw everything" from "missed events".
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections import OrderedDict, deque
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from deerflow_nb.runtime.events import StreamEvent

__all__ = ["HEARTBEAT", "BridgeEvent", "StreamBridge", "StreamGap"]


@dataclass(frozen=True)
class BridgeEvent:
    """A retained event and its id (``str(seq)``, 1-based)."""

    id: str
    event: StreamEvent


@dataclass(frozen=True)
class StreamGap:
    """Events between ``requested`` and ``resumed_at`` are no longer retained."""

    requested: str | None
    resumed_at: str | None

    def to_dict(self) -> dict[str, Any]:
        """The ``gap`` SSE payload."""
        return {"type": "stream_replay_gap", "last_event_id": self.requested, "resumed_at": self.resumed_at}


class _Heartbeat:
    def __repr__(self) -> str:
        return "HEARTBEAT"


#: Yielded to an idle subscriber every ``heartbeat_seconds``.
HEARTBEAT = _Heartbeat()
BridgeItem = BridgeEvent | StreamGap | _Heartbeat


@dataclass
class _Channel:
    events: deque[tuple[int, StreamEvent]] = field(default_factory=deque)
    next_seq: int = 1
    ended: bool = False
    cursors: dict[int, tuple[int, int]] = field(default_factory=dict)  # subscriber -> (next seq it needs, max lag)
    waiters: list[asyncio.Future[None]] = field(default_factory=list)
    cleanup: asyncio.TimerHandle | None = None

    @property
    def first_seq(self) -> int:
        return self.events[0][0] if self.events else self.next_seq

    def wake(self) -> None:
        for waiter in self.waiters:
            if not waiter.done():
                waiter.set_result(None)
        self.waiters.clear()


class StreamBridge:
    """Per-run event channels; lives on one event loop."""

    #: How many cleaned-up runs' last ids :meth:`final_id` remembers.
    FINAL_IDS_KEPT = 10_000

    def __init__(self, queue_maxsize: int = 256, *, heartbeat_seconds: float = 15.0,
                 reader_queue_maxsize: int = 4096, max_live_lag: int = 100_000, cleanup_delay: float = 60.0) -> None:
        if queue_maxsize <= 0 or reader_queue_maxsize <= 0:
            raise ValueError("stream_bridge.queue_maxsize and reader_queue_maxsize must be positive")
        self.queue_maxsize = queue_maxsize
        self.heartbeat_seconds = heartbeat_seconds
        self.reader_queue_maxsize = reader_queue_maxsize
        self.max_live_lag = max(max_live_lag, queue_maxsize)
        self.cleanup_delay = cleanup_delay
        self._channels: dict[str, _Channel] = {}
        self._final_ids: OrderedDict[str, int] = OrderedDict()
        self._ids = itertools.count()

    def open(self, run_id: str) -> None:
        """Create the run's channel (idempotent); subscribers may attach before the first event."""
        self._channels.setdefault(run_id, _Channel())

    def has(self, run_id: str) -> bool:
        """Whether the bridge still holds a channel for the run."""
        return run_id in self._channels

    def ended(self, run_id: str) -> bool:
        """Whether the run's END marker was published (unknown runs count as ended)."""
        channel = self._channels.get(run_id)
        return channel is None or channel.ended

    def publish(self, run_id: str, event: StreamEvent) -> str:
        """Append an event; returns its id."""
        channel = self._channels.get(run_id)
        if channel is None:
            channel = self._channels[run_id] = _Channel()
        seq = channel.next_seq
        channel.next_seq += 1
        channel.events.append((seq, event))
        self._trim(channel)
        channel.wake()
        return str(seq)

    def _trim(self, channel: _Channel) -> None:
        events = channel.events
        if len(events) <= self.queue_maxsize:
            return
        # a reader more than its max lag behind keeps only its last max-lag events (it gets a gap)
        oldest_needed = min((max(cursor, channel.next_seq - lag) for cursor, lag in channel.cursors.values()),
                            default=channel.next_seq)
        while len(events) > self.queue_maxsize and events[0][0] < oldest_needed:
            events.popleft()

    def publish_end(self, run_id: str) -> None:
        """Publish the END marker and schedule the channel's removal after ``cleanup_delay``."""
        channel = self._channels.get(run_id)
        if channel is None:
            channel = self._channels[run_id] = _Channel()
        channel.ended = True
        channel.wake()
        if channel.cleanup is None:
            loop = asyncio.get_running_loop()
            channel.cleanup = loop.call_later(self.cleanup_delay, self.expire, run_id)

    def expire(self, run_id: str) -> None:
        """Drop a finished run's channel now (its cleanup does this ``cleanup_delay`` after END); keep its last id."""
        channel = self._channels.pop(run_id, None)
        if channel is None:
            return
        self._final_ids[run_id] = channel.next_seq - 1
        while len(self._final_ids) > self.FINAL_IDS_KEPT:
            self._final_ids.popitem(last=False)

    def final_id(self, run_id: str) -> str | None:
        """Id of the last event of a finished run whose channel was cleaned up (``None``: not remembered)."""
        seq = self._final_ids.get(run_id)
        return None if seq is None else str(seq)

    def latest_id(self, run_id: str) -> str | None:
        """Id of the newest event published so far."""
        channel = self._channels.get(run_id)
        return str(channel.next_seq - 1) if channel and channel.next_seq > 1 else None

    async def subscribe_batches(self, run_id: str, last_event_id: str | None = None, *, heartbeat: bool = False,
                                max_lag: int | None = None) -> AsyncIterator[list[BridgeItem]]:
        """Yield lists of items as they become available, until END.

        Batching lets a consumer on another loop or socket pay one hop per burst
        instead of one per token. ``max_lag`` bounds how many unread events the channel
        keeps for this subscriber (default ``max_live_lag``); one that falls further behind
        gets a :class:`StreamGap` and continues with the oldest retained event. A
        ``last_event_id`` that is not an id of this run (malformed, or beyond its newest
        event) replays what is retained, after a gap if that is not the whole run. Raises
        ``KeyError`` for a run the bridge does not hold.
        """
        channel = self._channels.get(run_id)
        if channel is None:
            raise KeyError(run_id)
        lag = max(max_lag or self.max_live_lag, 1)
        first: list[BridgeItem] = []
        cursor = channel.first_seq
        if last_event_id is not None:
            try:
                wanted = int(last_event_id) + 1
            except ValueError:
                wanted = 0  # malformed: replay what is retained
            if not 1 <= wanted <= channel.next_seq:
                wanted = 0 if channel.first_seq > 1 else channel.first_seq
            if wanted < channel.first_seq:
                first.append(StreamGap(last_event_id, str(channel.first_seq)))
            else:
                cursor = wanted
        token = next(self._ids)
        channel.cursors[token] = (cursor, lag)
        try:
            while True:
                if cursor < channel.first_seq:  # fell more than ``lag`` events behind
                    first.append(StreamGap(str(cursor - 1), str(channel.first_seq)))
                    cursor = channel.first_seq
                start = cursor - channel.first_seq
                batch: list[BridgeItem] = first
                first = []
                if start < len(channel.events):
                    batch.extend(BridgeEvent(str(s), e) for s, e in itertools.islice(channel.events, start, None))
                    cursor = channel.next_seq
                    channel.cursors[token] = (cursor, lag)
                if batch:
                    yield batch
                    continue
                if channel.ended:
                    return
                waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
                channel.waiters.append(waiter)
                try:
                    await asyncio.wait_for(waiter, self.heartbeat_seconds if heartbeat else None)
                except TimeoutError:
                    first.append(HEARTBEAT)
        finally:
            channel.cursors.pop(token, None)
            self._trim(channel)

    async def subscribe(self, run_id: str, last_event_id: str | None = None, *, heartbeat: bool = False,
                        max_lag: int | None = None) -> AsyncIterator[BridgeItem]:
        """Item-at-a-time form of :meth:`subscribe_batches`."""
        async for batch in self.subscribe_batches(run_id, last_event_id, heartbeat=heartbeat, max_lag=max_lag):
            for item in batch:
                yield item

    def close(self) -> None:
        """End every channel (shutdown) and forget them."""
        for channel in self._channels.values():
            channel.ended = True
            channel.wake()
            if channel.cleanup is not None:
                with contextlib.suppress(Exception):
                    channel.cleanup.cancel()
        self._channels.clear()
