"""A debounced queue of finished conversations waiting for a memory update.

Runs append to it; after ``debounce_seconds`` without new work (or on
:meth:`MemoryQueue.flush`, or when the client closes) the pending conversations are
processed one by one. A thread queued twice before a flush is processed once, with
its latest conversation. Everything runs on the client's event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

__all__ = ["MemoryQueue", "PendingUpdate"]

logger = logging.getLogger(__name__)


@dataclass
class PendingUpdate:
    """One thread's conversation (``(role, text)`` pairs) waiting for processing."""

    user_id: str
    thread_id: str
    conversation: list[tuple[str, str]]
    model_name: str | None = None
    queued_at: float = field(default_factory=time.time)


class MemoryQueue:
    """Debounces and serialises memory updates."""

    def __init__(self, process: Callable[[PendingUpdate], Awaitable[object]],
                 debounce_seconds: Callable[[], float]) -> None:
        self._process = process
        self._debounce = debounce_seconds
        self._pending: dict[tuple[str, str], PendingUpdate] = {}
        self._timer: asyncio.Task[None] | None = None
        self._deadline = 0.0  # loop time at which the timer flushes (pushed back by each add)
        self._lock: asyncio.Lock | None = None
        self.processing = False
        self.processed = 0
        self.last_error: str | None = None
        self.last_flush_at: float | None = None

    @property
    def pending(self) -> int:
        """How many threads wait for an update."""
        return len(self._pending)

    def add(self, item: PendingUpdate) -> None:
        """Queue ``item`` (replacing the same thread's older entry) and push the flush back.

        One timer task serves a burst of runs: each add only moves its deadline (the
        debounce is read here, while the finishing run's config is current).
        """
        self._pending[(item.user_id, item.thread_id)] = item
        loop = asyncio.get_running_loop()
        self._deadline = loop.time() + max(0.0, self._debounce())
        if self._timer is None or self._timer.done():
            self._timer = loop.create_task(self._after_delay())

    async def _after_delay(self) -> None:
        loop = asyncio.get_running_loop()
        while (delay := self._deadline - loop.time()) > 0:
            await asyncio.sleep(delay)
        self._timer = None  # flush must not cancel the task it runs in
        await self.flush()

    async def flush(self) -> int:
        """Process everything pending now; returns how many updates were processed."""
        if self._timer is not None and not self._timer.done() and self._timer is not asyncio.current_task():
            self._timer.cancel()
            self._timer = None
        if self._lock is None:
            self._lock = asyncio.Lock()
        count = 0
        async with self._lock:
            while self._pending:
                item = self._pending.pop(next(iter(self._pending)))  # oldest first
                self.processing = True
                try:
                    await self._process(item)
                    count += 1
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # one bad update must not block the others
                    self.last_error = f"{type(exc).__name__}: {exc}"
                    logger.warning("memory update for thread %s failed: %s", item.thread_id, exc)
                finally:
                    self.processing = False
            self.processed += count
            self.last_flush_at = time.time()
        return count

    async def aclose(self, timeout: float) -> None:
        """Flush within ``timeout`` seconds (what is left is dropped with a warning)."""
        try:
            await asyncio.wait_for(self.flush(), timeout)
        except TimeoutError:
            logger.warning("memory flush on shutdown timed out; %d update(s) dropped", self.pending)
        if self._timer is not None:
            self._timer.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._timer
            self._timer = None
