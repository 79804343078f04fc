"""Per-message work done once per message object: ``IdentityMemo``, ``PrefixMap``, ``changed_positions``.

A thread's history reaches the model middlewares as the same message objects turn after
turn (the checkpointer hands them back), so a pass over the history that transforms each
message (sanitising user text, cleaning tool calls) only needs to look at the new ones.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Generic, TypeVar

__all__ = ["ConversationSlots", "IdentityMemo", "PrefixMap", "changed_positions", "grow_into"]

K = TypeVar("K")
V = TypeVar("V")
S = TypeVar("S")


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


def grow_into(slot: list[Any], items: Sequence[Any]) -> bool:
    """Make ``slot`` equal ``items`` in place if ``items`` starts with it; whether it did.

    "Starts with" counts identical or equal objects, as :func:`changed_positions` does; a ``slot``
    that ``items`` does not start with is left as it was. ``slot`` must be a list of the caller's own
    that nothing reads without the caller's lock. The usual next call of a conversation is its last
    list plus a few items: appending those and comparing the whole lists is one C-speed pass over two
    arrays of pointers. Copying or slicing the history instead touches every message's reference count
    (a cache miss each, once a long history is spread over a large heap). The first, middle and last
    objects must be the very ones: a history read back as equal copies answers ``False``, so that the
    caller's comparing path keeps the new objects.
    """
    n = len(slot)
    if n > len(items) or not isinstance(items, list):
        return False
    if n and (slot[0] is not items[0] or slot[n // 2] is not items[n // 2] or slot[n - 1] is not items[n - 1]):
        return False
    slot.extend(items[n:])
    try:
        if slot == items:
            return True
    except BaseException:
        del slot[n:]
        raise
    del slot[n:]
    return False


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


class ConversationSlots(Generic[K, S]):
    """A state for each of the last ``size`` conversations, kept with the list it was computed from.

    A conversation's next list extends its last one: its last object is at the same position in
    the new list (one identity check a slot). Threads taking turns (two in one notebook, a server's
    users) each find their own. Not thread-safe: callers hold their own lock.
    """

    def __init__(self, size: int = 8) -> None:
        self.size = size
        self._recent: list[tuple[list[K], S]] = []  # most recent last

    def extended(self, items: Sequence[K]) -> tuple[list[K], S] | None:
        """The slot whose list ``items`` extends (the most recent such), else ``None``."""
        n = len(items)
        return next(((slot_in, state) for slot_in, state in reversed(self._recent)
                     if slot_in and len(slot_in) <= n and items[len(slot_in) - 1] is slot_in[-1]), None)

    def similar(self, items: Sequence[K]) -> tuple[list[K], S] | None:
        """A slot whose list has the same second object as ``items`` (or an equal copy: a history read back).

        Not the first: that may be a note put before each call, or a system prompt every
        conversation shares.
        """
        if len(items) < 2:
            return None
        return next(((slot_in, state) for slot_in, state in reversed(self._recent)
                     if len(slot_in) > 1 and _same(slot_in[1], items[1])), None)

    def latest(self) -> tuple[list[K], S] | None:
        """The most recent slot, if any."""
        return self._recent[-1] if self._recent else None

    def put(self, items: Sequence[K], state: S, replacing: list[K] | None = None) -> None:
        """Keep ``state`` for ``list(items)``.

        The slot holding the list ``replacing`` gives way to it; without one, the oldest slot does
        when all are taken.
        """
        self._keep(list(items), state, replacing)

    def update(self, slot_in: list[K], state: S) -> None:
        """Give the slot whose list is ``slot_in`` (grown in place: :func:`grow_into`) ``state``, as the most recent."""
        self._keep(slot_in, state, slot_in)

    def _keep(self, slot_in: list[K], state: S, replacing: list[K] | None) -> None:
        position = next((p for p, (held, _) in enumerate(self._recent) if held is replacing), -1) \
            if replacing is not None else -1
        if position >= 0:
            del self._recent[position]
        elif len(self._recent) >= self.size:
            del self._recent[0]
        self._recent.append((slot_in, state))


class PrefixMap(Generic[K, V]):
    """``[func(item) for item in items]``, reusing an earlier call's results where the objects are the same.

    A model request's messages are the previous request's of the same conversation plus a few new
    ones; only the positions :func:`changed_positions` yields cost a call of ``func`` (itself
    memoised by identity): the new items and a few objects replaced in place (an earlier
    middleware's request-only copy of a message, a context message put first on every call).

    The map keeps its last ``slots`` calls, one per conversation (:class:`ConversationSlots`): a
    call goes on from the slot its list extends, else from one with the same second object, else
    from the most recent, whose slot is then kept for its own conversation.

    A position holding an object equal to the earlier call's keeps the earlier call's result, which
    may be (or refer to) that earlier object: a caller that checks whether ``func`` changed
    anything compares results with its input, and should ask a second map for a flag per item
    instead (as the sanitising middlewares do), not compare the lists.
    """

    def __init__(self, func: Callable[[K], V], max_size: int = 50_000, slots: int = 8) -> None:
        self.func = IdentityMemo(func, max_size)
        self._slots: ConversationSlots[K, list[V]] = ConversationSlots(slots)
        self._lock = threading.Lock()

    def __call__(self, items: Sequence[K]) -> list[V]:
        """The mapped list (treat it as read-only)."""
        with self._lock:  # slot lists change in place: read and changed under the lock only
            mine = self._slots.extended(items) or self._slots.similar(items)
            if mine is not None:
                grown = self._grow(mine[0], mine[1], items)
                if grown is not None:
                    return grown
            last_in, last_out = mine or self._slots.latest() or ([], [])
            out = last_out[:len(items)]
            for i in changed_positions(last_in, items):
                if i < len(out):
                    out[i] = self.func(items[i])
                else:  # past the shared part positions come in order
                    out.append(self.func(items[i]))
            self._slots.put(items, out, replacing=last_in if mine else None)  # this conversation's slot
            return out

    def _grow(self, last_in: list[K], last_out: list[V], items: Sequence[K]) -> list[V] | None:
        """The usual calls, without copying or slicing the history; ``None`` for the comparing path.

        A conversation's next list is its last one with new items at the end, where a few of the last
        ones may have come back as equal copies (a run's messages read back from the checkpoint) and
        the first may be new (a context message put first on every call). The slot's own list is made
        ``items`` in place (``[0]`` and the tail swapped in) and compared whole at C speed, identity
        before ``==``; only the positions that really changed cost a call of ``func``.
        """
        n, m = len(last_in), len(items)
        if not n or not m or not isinstance(items, list):
            return None
        k = min(n, m)  # the identical stretch ends at k: look back over the last few positions
        floor = max(1, k - _TAIL)
        while k > floor and last_in[k - 1] is not items[k - 1]:
            k -= 1
        if k > 1 and (last_in[k - 1] is not items[k - 1] or last_in[k // 2] is not items[k // 2]):
            return None  # not this list plus a few changes (or a history read back as copies)
        first, tail = last_in[0], last_in[k:]
        last_in[0] = items[0]
        del last_in[k:]
        last_in.extend(items[k:])

        def restore() -> None:
            del last_in[k:]
            last_in.extend(tail)
            last_in[0] = first

        try:
            if last_in != items:
                restore()
                return None
            changed = [] if first is items[0] or first == items[0] else [0]
            changed += [i for i in range(max(k, 1), min(n, m)) if not _same(tail[i - k], items[i])]
            out = last_out[:m]
            for i in changed:
                out[i] = self.func(items[i])
            out.extend(map(self.func, items[n:]))
        except BaseException:
            restore()
            raise
        self._slots.update(last_in, out)
        return out


#: How many positions at the end of a conversation's last list may hold other objects for
#: :meth:`PrefixMap._grow` (a run's messages read back from the checkpoint: a handful).
_TAIL = 16


def _same(a: Any, b: Any) -> bool:
    return a is b or bool(a == b)
