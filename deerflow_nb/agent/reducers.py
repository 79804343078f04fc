"""Reducers of the extra :class:`~deerflow_nb.agent.state.ThreadState` channels.

Each takes the current value and an update and returns the merged value; none
mutates its inputs.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Sequence
from typing import Any, cast

from langchain_core.messages import AnyMessage, RemoveMessage
from langgraph.graph.message import REMOVE_ALL_MESSAGES, _coerce_to_messages, add_messages

__all__ = [
    "CLEAR",
    "MAX_DELEGATIONS",
    "MAX_SKILL_CONTEXT",
    "TERMINAL_DELEGATION_STATUSES",
    "merge_artifacts",
    "merge_delegations",
    "merge_goal",
    "merge_message_writes",
    "merge_promoted",
    "merge_skill_context",
    "merge_viewed_images",
]

#: Sentinel update that empties ``viewed_images``.
CLEAR = "__clear__"
MAX_DELEGATIONS = 100
MAX_SKILL_CONTEXT = 20
TERMINAL_DELEGATION_STATUSES = frozenset({"completed", "failed", "timed_out", "cancelled"})


def merge_artifacts(current: list[str] | None, update: list[str] | None) -> list[str]:
    """Append new artifact paths, keeping first-seen order and dropping duplicates."""
    merged = list(current or [])
    seen = set(merged)
    for path in update or []:
        if path not in seen:
            merged.append(path)
            seen.add(path)
    return merged


def merge_viewed_images(
    current: dict[str, Any] | None, update: dict[str, Any] | str | None
) -> dict[str, Any]:
    """Merge image entries by path; the update :data:`CLEAR` (or ``{}``) empties the channel."""
    if update == CLEAR or update == {}:
        return {}
    merged = dict(current or {})
    if isinstance(update, dict):
        merged.update(update)
    return merged


def merge_delegations(
    current: list[dict[str, Any]] | None, update: list[dict[str, Any]] | None
) -> list[dict[str, Any]]:
    """Upsert delegation entries by ``id``: the latest wins, but a terminal status is never downgraded.

    Keeps at most :data:`MAX_DELEGATIONS`, the most recent.
    """
    merged = [dict(d) for d in current or []]
    index = {d.get("id"): i for i, d in enumerate(merged)}
    for entry in update or []:
        key = entry.get("id")
        if key in index:
            old = merged[index[key]]
            new = {**old, **entry}
            if old.get("status") in TERMINAL_DELEGATION_STATUSES and entry.get("status") not in (
                TERMINAL_DELEGATION_STATUSES
            ):
                new["status"] = old["status"]
                for field in ("result", "error", "stop_reason"):
                    if field in old:
                        new[field] = old[field]
            merged[index[key]] = new
        else:
            index[key] = len(merged)
            merged.append(dict(entry))
    return merged[-MAX_DELEGATIONS:]


def merge_goal(current: dict[str, Any] | None, update: dict[str, Any] | str | None) -> dict[str, Any] | None:
    """Keep the active goal across ordinary state updates: only a goal record replaces it, :data:`CLEAR` clears it.

    A ``None`` update (a state write that merely carries the channel) leaves the goal as it is.
    """
    if update is None:
        return current
    if update == CLEAR:
        return None
    return dict(update) if isinstance(update, dict) else current


def merge_promoted(current: dict[str, Any] | None, update: dict[str, Any] | None) -> dict[str, Any] | None:
    """Deferred tools made callable, ``{"catalog_hash", "names"}``, scoped by the tool catalog.

    Names add up while the catalog hash stays the same, the most recently promoted last (a name
    promoted again moves to the end); an update under another hash (the MCP tools changed)
    replaces the record, so a remembered name cannot expose a different tool.
    """
    if not update:
        return current
    names = list(dict.fromkeys(str(n) for n in update.get("names") or []))
    if current is None or current.get("catalog_hash") != update.get("catalog_hash"):
        return {"catalog_hash": update.get("catalog_hash"), "names": names}
    fresh = set(names)
    return {"catalog_hash": current["catalog_hash"],
            "names": [*(n for n in current.get("names") or [] if n not in fresh), *names]}


def merge_skill_context(
    current: list[dict[str, Any]] | None, update: list[dict[str, Any]] | None
) -> list[dict[str, Any]]:
    """Keep skill *references* (name, path, description), deduplicated by path, most recent last.

    Any ``body``/``content`` key is dropped: bodies are never stored in state.
    """
    merged: dict[str, dict[str, Any]] = {}
    for entry in [*(current or []), *(update or [])]:
        path = entry.get("path")
        if not path:
            continue
        ref = {k: v for k, v in entry.items() if k in {"name", "path", "description"}}
        merged.pop(path, None)  # re-insert so the most recently read entry comes last
        merged[path] = ref
    return list(merged.values())[-MAX_SKILL_CONTEXT:]


def merge_message_writes(state: Sequence[Any] | Any | None, writes: Sequence[Any]) -> list[AnyMessage]:
    """Fold a batch of ``messages`` writes into ``state`` in one pass (the delta-mode reducer).

    The result equals applying LangGraph's ``add_messages`` to each write in turn (same
    ids replace in place, ``RemoveMessage`` deletes and fails for an unknown id,
    ``REMOVE_ALL_MESSAGES`` resets, missing ids are assigned, a ``None`` write fails), but
    the id index is built once, not once per write, so replaying many writes stays linear.
    Folding two batches one after the other equals folding their concatenation, as
    ``DeltaChannel`` requires.
    """
    known = _known_index(state)
    if known is not None:  # this reducer's own earlier result: messages typed, ids set, index known
        merged: list[Any] = list(state)  # type: ignore[arg-type]
        index = known
    else:
        merged = _coerce_to_messages(list(state) if isinstance(state, list) else [] if state is None else [state])
        for message in merged:
            if message.id is None:
                message.id = str(uuid.uuid4())
        index = {m.id: i for i, m in enumerate(merged)}
    holes = 0  # removed positions (None) not compacted yet
    for number, write in enumerate(writes):
        if len(index) != len(merged) - holes:  # duplicate ids: add_messages' own rules, write by write
            result = [m for m in merged if m is not None]
            for rest in writes[number:]:
                result = cast(list[Any], add_messages(result, rest))
            return result
        if write is None:
            raise ValueError("a messages write must not be None")
        batch = _coerce_to_messages(write if isinstance(write, list) else [write])
        for message in batch:
            if message.id is None:
                message.id = str(uuid.uuid4())
        reset = next((i for i in range(len(batch) - 1, -1, -1)
                      if isinstance(batch[i], RemoveMessage) and batch[i].id == REMOVE_ALL_MESSAGES), None)
        if reset is not None:
            merged = list(batch[reset + 1:])
            index = {m.id: i for i, m in enumerate(merged)}
            holes = 0
            continue
        removed: set[str] = set()
        for message in batch:
            key: str = message.id
            position = index.get(key)
            if position is not None:
                if isinstance(message, RemoveMessage):
                    removed.add(key)
                else:
                    removed.discard(key)
                    merged[position] = message
            elif isinstance(message, RemoveMessage):
                raise ValueError(f"Attempting to delete a message with an ID that doesn't exist ('{key}')")
            else:
                index[key] = len(merged)
                merged.append(message)
        for message_id in removed:  # tombstones: positions stay valid until compacted below
            merged[index.pop(message_id)] = None
            holes += 1
        if holes and holes > len(merged) // 2:
            merged = [m for m in merged if m is not None]
            index = {m.id: i for i, m in enumerate(merged)}
            holes = 0
    if holes:
        return [m for m in merged if m is not None]
    if len(index) == len(merged):
        _remember_index(merged, index)
    return merged


# The id -> position index of the reducer's latest results, by their last message: the next
# step's state is usually the previous step's result or a shallow copy of it (channels copy their
# value at each step), so a long history is not re-indexed (nor its types re-checked) on every
# update. A hit holds the same message objects (a list comparison, identity before ``==``, so an
# equal copy with the same id counts too); anything else is indexed afresh.
#
# Each entry holds a copy of a history and its index (a few hundred KiB at 4,000 messages), so one
# history (the entries that start with its first message) keeps only its newest ``_PER_HISTORY``;
# older versions of a long thread would otherwise fill every slot. A step folds onto the previous
# step's result (twice:
# LangGraph's routing reads fold too), and the delta log's load of the next turn onto the value of
# its last load, a whole turn's folds back (8 for a turn with one tool call): a turn of more steps
# than the window re-indexes once (a few ms at 4,000 messages), which is all a miss costs.
_INDEXES: dict[int, tuple[list[Any], dict[str, int]]] = {}
_INDEXES_LOCK = threading.Lock()
_MAX_INDEXES = 64
_PER_HISTORY = 16


def _known_index(state: Any) -> dict[str, int] | None:
    if not isinstance(state, list) or not state:
        return None
    with _INDEXES_LOCK:
        hit = _INDEXES.get(id(state[-1]))
    if hit is None or hit[0][-1] is not state[-1] or hit[0] != state:  # identity first: ~1 ns a message
        return None
    return dict(hit[1])


def _remember_index(merged: list[Any], index: dict[str, int]) -> None:
    if not merged:
        return
    first, key = merged[0], id(merged[-1])
    with _INDEXES_LOCK:
        _INDEXES.pop(key, None)  # a newer result ending with the same message: it goes last
        mine = [k for k, (messages, _) in _INDEXES.items() if messages[0] is first]  # oldest first
        for old in mine[:max(0, len(mine) - _PER_HISTORY + 1)]:
            del _INDEXES[old]
        while len(_INDEXES) >= _MAX_INDEXES:
            del _INDEXES[next(iter(_INDEXES))]
        _INDEXES[key] = (list(merged), index)
