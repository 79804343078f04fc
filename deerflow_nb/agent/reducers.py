"""Reducers of the extra :class:`~deerflow_nb.agent.state.ThreadState` channels.

Each takes the current value and an update and returns the merged value; none
mutates its inputs.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "CLEAR",
    "MAX_DELEGATIONS",
    "MAX_SKILL_CONTEXT",
    "TERMINAL_DELEGATION_STATUSES",
    "merge_artifacts",
    "merge_delegations",
    "merge_goal",
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
