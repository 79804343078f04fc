"""A pool of released sandboxes kept alive for quick reuse, with idle reaping.

A released container costs memory but saves a cold start when the same thread comes
back. :class:`WarmPool` keeps released items per key, hands one back to the same key,
destroys items idle longer than ``idle_timeout`` (checked every ``check_interval``
seconds on a daemon thread) and evicts the oldest when the provider needs room.
Defaults follow the reference DeerFlow: idle 600 s, checked every 60 s, 3 replicas.

The pool never holds its lock while destroying: destroy callbacks do I/O (Docker API
calls) and must not block :meth:`take` / :meth:`put` on other threads.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = [
    "DEFAULT_IDLE_CHECK_INTERVAL",
    "DEFAULT_IDLE_TIMEOUT",
    "DEFAULT_REPLICAS",
    "WarmPool",
]

DEFAULT_IDLE_TIMEOUT = 600
DEFAULT_IDLE_CHECK_INTERVAL = 60
DEFAULT_REPLICAS = 3

T = TypeVar("T")
_log = logging.getLogger(__name__)


class WarmPool(Generic[T]):
    """Released items by key, oldest first.

    Args:
        destroy: frees one item (called outside the pool's lock; exceptions are logged).
        idle_timeout: seconds an item may sit unused; ``0`` keeps items until evicted.
        check_interval: seconds between idle checks of the reaper thread.
        clock: monotonic time source (tests pass a fake one).
    """

    def __init__(
        self,
        destroy: Callable[[T], None],
        *,
        idle_timeout: float = DEFAULT_IDLE_TIMEOUT,
        check_interval: float = DEFAULT_IDLE_CHECK_INTERVAL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if idle_timeout < 0 or check_interval <= 0:
            raise ValueError("idle_timeout must be >= 0 and check_interval > 0")
        self._destroy = destroy
        self.idle_timeout = idle_timeout
        self.check_interval = check_interval
        self._clock = clock
        self._items: OrderedDict[str, tuple[T, float]] = OrderedDict()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._reaper: threading.Thread | None = None

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return key in self._items

    def put(self, key: str, item: T) -> None:
        """Keep ``item`` warm under ``key`` (replacing, and destroying, an older one)."""
        with self._lock:
            old = self._items.pop(key, None)
            self._items[key] = (item, self._clock())
        if old is not None and old[0] is not item:
            self._safe_destroy(old[0])
        self._ensure_reaper()

    def take(self, key: str) -> T | None:
        """Remove and return the warm item of ``key``, if any."""
        with self._lock:
            entry = self._items.pop(key, None)
        return entry[0] if entry is not None else None

    def evict_oldest(self) -> bool:
        """Destroy the least recently released item; ``False`` when the pool is empty."""
        with self._lock:
            if not self._items:
                return False
            _key, (item, _since) = self._items.popitem(last=False)
        self._safe_destroy(item)
        return True

    def reap_idle(self) -> list[str]:
        """Destroy items idle longer than ``idle_timeout``; returns their keys."""
        if self.idle_timeout <= 0:
            return []
        now = self._clock()
        with self._lock:
            expired = [k for k, (_item, since) in self._items.items() if now - since >= self.idle_timeout]
            victims = [self._items.pop(k)[0] for k in expired]
        for item in victims:
            self._safe_destroy(item)
        return expired

    def drain(self) -> list[T]:
        """Remove and return every item (the caller destroys them), stopping the reaper."""
        self.stop()
        with self._lock:
            items = [item for item, _since in self._items.values()]
            self._items.clear()
        return items

    def stop(self) -> None:
        """Stop the reaper thread (items stay in the pool)."""
        self._stop.set()
        reaper = self._reaper
        if reaper is not None and reaper is not threading.current_thread():
            reaper.join(timeout=5)
        self._reaper = None

    def _ensure_reaper(self) -> None:
        if self.idle_timeout <= 0 or (self._reaper is not None and self._reaper.is_alive()):
            return
        self._stop.clear()
        self._reaper = threading.Thread(target=self._reap_loop, name="sandbox-warm-pool-reaper", daemon=True)
        self._reaper.start()

    def _reap_loop(self) -> None:
        while not self._stop.wait(self.check_interval):
            try:
                reaped = self.reap_idle()
            except Exception:  # never let the reaper die silently on one bad item
                _log.exception("warm pool: idle check failed")
                continue
            if reaped:
                _log.info("warm pool: destroyed %d idle sandbox(es): %s", len(reaped), ", ".join(reaped))

    def _safe_destroy(self, item: T) -> None:
        try:
            self._destroy(item)
        except Exception:
            _log.exception("warm pool: failed to destroy %r", item)
