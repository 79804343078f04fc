"""Per-message work done once per message object: ``IdentityMemo``, ``PrefixMap``, ``changed_positions``.

A thread's history reaches the model middlewares as the same message objects turn after
turn (the checkpointer hands them back), so a pass over the history that transforms each
message (sanitising user text, cleaning tool calls) only needs to look at the new ones.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
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
    """The positions of ``items`` that do not hold what ``last`` holds there, in order.

    Positions past the end of ``last`` are all yielded. After ``max_replaced`` differences
    every later position is yielded (an insertion shifts them all).

    Differences are found by comparing list stretches (:func:`_first_difference`), which runs
    at C speed and tests identity before ``==``: a list that is ``last`` plus a few new items
    (the next step of a thread) costs about a nanosecond an item and what the new items cost,
    and a few objects replaced in place cost a few halvings each. An object equal to the one
    ``last`` holds counts as the same, which for the pure functions of messages this serves
    gives the same result.
    """
    shared = min(len(last), len(items))
    pos, replaced = 0, 0
    while pos < shared:
        diff = _first_difference(last, items, pos, shared)
        if diff == shared:
            break
        replaced += 1
        if replaced > max_replaced:
            yield from range(diff, shared)
            break
        yield diff
        pos = diff + 1
    yield from range(shared, len(items))


def _first_difference(last: Sequence[Any], items: Sequence[Any], start: int, stop: int) -> int:
    """The first position in ``[start, stop)`` where the two differ (neither identical nor equal), else ``stop``."""
    def part(seq: Sequence[Any], lo: int, hi: int) -> Sequence[Any]:
        return seq if lo == 0 and hi == len(seq) else seq[lo:hi]

    def same(lo: int, hi: int) -> bool:
        return bool(part(last, lo, hi) == part(items, lo, hi))

    if not (last[start] is items[start] or last[start] == items[start]):
        return start  # a context message put first, a replaced head: no halving needed
    if last[stop - 1] is items[stop - 1] and same(start, stop):
        return stop
    lo, hi = start, stop  # a difference lies in [lo, hi): halve the stretch around it
    while hi - lo > 16:
        mid = (lo + hi) // 2
        if same(lo, mid):
            lo = mid
        else:
            hi = mid
    for i in range(lo, hi):
        if not (last[i] is items[i] or last[i] == items[i]):
            return i
    return stop  # equal after all (only an object whose == changes its mind gets here)


class PrefixMap(Generic[K, V]):
    """``[func(item) for item in items]``, reusing an earlier call's results where the objects are the same.

    A model request's messages are the previous request's of the same conversation plus a few new
    ones; only the positions :func:`changed_positions` yields cost a call of ``func`` (itself
    memoised by identity): the new items and a few objects replaced in place (an earlier
    middleware's request-only copy of a message, a context message put first on every call).

    The map keeps its last ``slots`` calls, one per conversation, so that threads taking turns (two
    in one notebook, a server's users) each go on from their own: a call goes on from the slot
    whose list the new one extends (its last object is at the same position in the new list),
    else from one with the same second object (or an equal copy: a history read back), else from the
    most recent, whose slot is then kept for its own conversation.

    A position holding an object equal to the earlier call's keeps the earlier call's result, which
    may be (or refer to) that earlier object: a caller that checks whether ``func`` changed
    anything compares results with its input, and should ask a second map for a flag per item
    instead (as the sanitising middlewares do), not compare the lists.
    """

    def __init__(self, func: Callable[[K], V], max_size: int = 50_000, slots: int = 8) -> None:
        self.func = IdentityMemo(func, max_size)
        self.slots = slots
        self._recent: list[tuple[list[K], list[V]]] = []  # most recent last
        self._lock = threading.Lock()

    def _base(self, items: Sequence[K]) -> tuple[bool, list[K], list[V]]:
        """``(whether it is this conversation's, its input, its output)`` of the slot to go on from.

        The caller holds the lock. Not this conversation's: the most recent slot, which
        :func:`changed_positions` gives up on after a few differences (and which is kept).
        """
        recent, n = self._recent, len(items)
        for slot_in, slot_out in reversed(recent):  # extended: the next step of that conversation
            if slot_in and len(slot_in) <= n and items[len(slot_in) - 1] is slot_in[-1]:
                return True, slot_in, slot_out
        for slot_in, slot_out in reversed(recent):  # the same second object (the first may be a note put
            # before each call, or a system prompt every conversation shares), or an equal copy of it
            if n > 1 and len(slot_in) > 1 and _same(slot_in[1], items[1]):
                return True, slot_in, slot_out
        return (False, *recent[-1]) if recent else (False, [], [])

    def __call__(self, items: Sequence[K]) -> list[V]:
        """The mapped list (treat it as read-only)."""
        with self._lock:
            mine, last_in, last_out = self._base(items)
        out = last_out[:len(items)]
        for i in changed_positions(last_in, items):
            if i < len(out):
                out[i] = self.func(items[i])
            else:  # past the shared part positions come in order
                out.append(self.func(items[i]))
        with self._lock:
            # this conversation's slot gives way to this call (looked up again: another call may have run)
            position = next((p for p, (slot_in, _) in enumerate(self._recent) if slot_in is last_in), -1) \
                if mine else -1
            if position >= 0:
                del self._recent[position]
            elif len(self._recent) >= self.slots:
                del self._recent[0]
            self._recent.append((list(items), out))
        return out


def _same(a: Any, b: Any) -> bool:
    return a is b or bool(a == b)
