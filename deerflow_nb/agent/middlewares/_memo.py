"""``IdentityMemo``: a per-message function, computed once per message object.

A thread's history reaches the model middlewares as the same message objects turn after
turn (the checkpointer hands them back), so a pass over the history that transforms each
message (sanitising user text, cleaning tool calls) only needs to look at the new ones.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["IdentityMemo"]

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
