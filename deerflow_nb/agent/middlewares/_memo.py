"""``IdentityMemo``: a per-message function, computed once per message object.

A thread's history reaches the model middlewares as the same message objects turn after
turn (the checkpointer hands them back), so a pass over the history that transforms each
message (sanitising user text, cleaning tool calls) only needs to look at the new ones.
"""

from __future__ import annotations

import operator
import threading
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

__all__ = ["IdentityMemo", "PrefixMap"]

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


class PrefixMap(Generic[K, V]):
    """``[func(item) for item in items]``, reusing the last call's results for a prefix of the same objects.

    A model request's messages are the previous request's plus a few new ones; checking that
    the prefix is the very same objects runs at C speed, so only the new items cost a call
    of ``func`` (itself memoised by identity, for requests that do not share a prefix).
    """

    def __init__(self, func: Callable[[K], V], max_size: int = 50_000) -> None:
        self.func = IdentityMemo(func, max_size)
        self._last: tuple[list[K], list[V]] = ([], [])
        self._lock = threading.Lock()

    def __call__(self, items: Sequence[K]) -> list[V]:
        """The mapped list (treat it as read-only)."""
        with self._lock:
            last_in, last_out = self._last
        n = len(last_in)
        if 0 < n <= len(items) and all(map(operator.is_, last_in, items[:n])):
            out = [*last_out, *map(self.func, items[n:])]
        else:
            out = list(map(self.func, items))
        with self._lock:
            self._last = (list(items), out)
        return out
