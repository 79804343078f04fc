"""Per-message work done once per message object: ``IdentityMemo``, ``PrefixMap``, ``changed_positions``.

A thread's history reaches the model middlewares as the same message objects turn after
turn (the checkpointer hands them back), so a pass over the history that transforms each
message (sanitising user text, cleaning tool calls) only needs to look at the new ones.
"""

from __future__ import annotations

import operator
import threading
from collections.abc import Callable, Iterator, Sequence
from itertools import compress, count, islice
from typing import Any, Generic, TypeVar

__all__ = ["IdentityMemo", "PrefixMap", "changed_positions"]

K = TypeVar("K")
V = TypeVar("V")


class IdentityMemo(Generic[K, V]):
    """``func(item)`` memoised by ``id(item)``; holds the item, so its id is not reused while cached.

    Only for pure functions of items nobody mutates (messages in state). At most
    ``max_size`` entries (then it starts over). Thread-safe.
    """

    def __init__(self, func: Callable[[K], V], max_size: int = 50_000) -> None:
        self.func = func
        self.max_size = max_size
        self._entries: dict[int, tuple[K, V]] = {}
        self._lock = threading.Lock()

    def __call__(self, item: K) -> V:
        """``func(item)``, from the memo when this very object was seen before."""
        hit = self._entries.get(id(item))
        if hit is not None and hit[0] is item:
            return hit[1]
        value = self.func(item)
        with self._lock:
            if len(self._entries) >= self.max_size:
                self._entries.clear()
            self._entries[id(item)] = (item, value)
        return value


def changed_positions(last: Sequence[Any], items: Sequence[Any], max_replaced: int = 8) -> Iterator[int]:
    """The positions of ``items`` that do not hold the very object ``last`` holds there, in order.

    Positions past the end of ``last`` are all yielded. The scan for differing objects runs at C
    speed, so a list that is ``last`` plus a few new items (the next step of a thread) costs what
    the new items cost; a few objects replaced in place cost one position each. After
    ``max_replaced`` differences every later position is yielded (an insertion shifts them all).

    Each stretch is first checked with one list comparison (about a nanosecond an item: it tests
    identity before ``==``), so the common cases, ``last``'s objects and then new ones, or one
    context message put first and then ``last``'s objects, cost no per-item Python call; there an
    object equal to ``last``'s counts as the same, which for the pure functions of messages this
    serves gives the same result.
    """
    shared = min(len(last), len(items))
    pos, replaced = 0, 0
    while pos < shared:
        if last[pos] is items[pos] and last[shared - 1] is items[shared - 1] and _same(last, items, pos, shared):
            break
        # map() stops at the shorter list; islice skips without copying
        pairs = map(operator.is_not, islice(last, pos, None), islice(items, pos, None)) if pos else \
            map(operator.is_not, last, items)
        diff = next(compress(count(pos), pairs), shared)
        if diff == shared:
            break
        replaced += 1
        if replaced > max_replaced:
            yield from range(diff, shared)
            break
        yield diff
        pos = diff + 1
    yield from range(shared, len(items))


def _same(last: Sequence[Any], items: Sequence[Any], start: int, stop: int) -> bool:
    """Whether ``last[start:stop] == items[start:stop]``, without copying a whole list."""
    def part(seq: Sequence[Any]) -> Sequence[Any]:
        return seq if start == 0 and stop == len(seq) else seq[start:stop]
    return bool(part(last) == part(items))


class PrefixMap(Generic[K, V]):
    """``[func(item) for item in items]``, reusing the last call's results where the objects are the same.

    A model request's messages are the previous request's plus a few new ones; only the
    positions :func:`changed_positions` yields cost a call of ``func`` (itself memoised by
    identity): the new items and a few objects replaced in place (an earlier middleware's
    request-only copy of a message, a context message put first on every call).
    """

    def __init__(self, func: Callable[[K], V], max_size: int = 50_000) -> None:
        self.func = IdentityMemo(func, max_size)
        self._last: tuple[list[K], list[V]] = ([], [])
        self._lock = threading.Lock()

    def __call__(self, items: Sequence[K]) -> list[V]:
        """The mapped list (treat it as read-only)."""
        with self._lock:
            last_in, last_out = self._last
        out = last_out[:len(items)]
        for i in changed_positions(last_in, items):
            if i < len(out):
                out[i] = self.func(items[i])
            else:  # past the shared part positions come in order
                out.append(self.func(items[i]))
        with self._lock:
            self._last = (list(items), out)
        return out
