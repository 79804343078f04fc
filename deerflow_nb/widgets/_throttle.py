"""Coalesce front-end updates: however fast tokens arrive, at most ``rate`` syncs a second.

Every model token changes the transcript, but sending one comm message per token
floods the browser (and nbconvert output). :class:`Throttle` marks the state
dirty and flushes at most once per interval; a timer flushes what is left, and
:meth:`Throttle.close` flushes the final state so the last text is always exact.
The clock and the timer are injectable so tests count flushes with a fake clock.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Protocol

__all__ = ["DEFAULT_RATE", "CallLater", "Throttle"]

#: At most this many front-end updates a second.
DEFAULT_RATE = 20.0


class _Handle(Protocol):
    def cancel(self) -> Any: ...


CallLater = Callable[[float, Callable[[], None]], _Handle]


class Throttle:
    """Call ``flush`` at most ``rate`` times a second while :meth:`touch` is called.

    Args:
        flush: pushes the current state to the front end.
        rate: maximum flushes per second.
        clock: monotonic seconds (injectable for tests).
        call_later: ``(delay, callback) -> handle with cancel()``, e.g. ``loop.call_later``;
            ``None`` means no timer: pending changes wait for the next touch or close.
    """

    def __init__(self, flush: Callable[[], None], *, rate: float = DEFAULT_RATE,
                 clock: Callable[[], float] = time.monotonic, call_later: CallLater | None = None) -> None:
        if rate <= 0:
            raise ValueError(f"rate must be positive, got {rate!r}")
        self._flush = flush
        self.interval = 1.0 / rate
        self._clock = clock
        self._call_later = call_later
        self._last: float | None = None
        self._timer: _Handle | None = None
        self.dirty = False
        self.flushes = 0

    def touch(self) -> None:
        """Record a change; flush now if the interval has passed, else arm the timer."""
        self.dirty = True
        now = self._clock()
        if self._last is None or now - self._last >= self.interval:
            self._do_flush(now)
        elif self._timer is None and self._call_later is not None:
            self._timer = self._call_later(self.interval - (now - self._last), self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        if self.dirty:
            self._do_flush(self._clock())

    def _do_flush(self, now: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self.dirty = False
        self._last = now
        self.flushes += 1
        self._flush()

    def close(self) -> None:
        """Flush pending changes now (the end of a run), whatever the interval."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self.dirty:
            self._do_flush(self._clock())
