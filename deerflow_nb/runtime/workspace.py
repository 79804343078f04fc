r"""Workspace change review: snapshot a thread's ``workspace`` and ``outputs``, diff two snapshots.

Pure, blocking code (call it through ``asyncio.to_thread``). Uploads are excluded
(the user put them there). Text diffs are size-limited; binary, large and
secret-looking files are described by metadata only. One change record::

    {"path": "/mnt/user-data/outputs/report.md", "area": "outputs", "status": "added",
     "size": 120, "old_size": None, "binary": False, "too_large": False, "sensitive": False,
     "diff": "--- /dev/null\n+++ b/mnt/user-data/outputs/report.md\n@@ ..."}

:func:`workspace_changes` wraps the list as the ``workspace_changes`` journal payload
``{"run_id", "thread_id", "status", "finished_at", "changes", "truncated"}``.
"""

from __future__ import annotations

import difflib
import hashlib
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["AREAS", "FileState", "delivery_receipt", "diff_snapshots", "produced_in", "produced_outputs",
           "snapshot", "workspace_changes"]

AREAS = ("workspace", "outputs")
MAX_TEXT_BYTES = 256 * 1024  # larger files: metadata only (and not hashed: too slow per run)
MAX_FILES = 2000
MAX_DIFF_LINES = 2000
MAX_TOTAL_DIFF_CHARS = 512 * 1024
_SECRET = re.compile(
    r"(^|/)(\.env[^/]*|[^/]*\.(pem|key|p12|pfx|keystore)|id_(rsa|dsa|ecdsa|ed25519)[^/]*|[^/]*secret[^/]*"
    r"|[^/]*credentials?[^/]*|\.netrc|\.pgpass|[^/]*token[^/]*)$", re.I)


@dataclass(frozen=True)
class FileState:
    """One file at snapshot time; ``text`` is kept only for small, non-secret text files."""

    size: int
    digest: str
    text: str | None
    binary: bool


def _read_state(path: Path, virtual: str) -> FileState:
    stat = path.stat()
    if stat.st_size > MAX_TEXT_BYTES:
        return FileState(stat.st_size, f"{stat.st_size}:{stat.st_mtime_ns}", None, False)
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if b"\0" in data[:8192]:
        return FileState(len(data), digest, None, True)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return FileState(len(data), digest, None, True)
    # never keep a secret's content in memory longer than needed, nor diff it
    return FileState(len(data), digest, None if _SECRET.search(virtual) else text, False)


def snapshot(user_data: Path, *, max_files: int = MAX_FILES, areas: tuple[str, ...] = AREAS) -> dict[str, FileState]:
    """Files under ``workspace`` and ``outputs`` (or only ``areas``) of a user-data folder, by virtual path."""
    files: dict[str, FileState] = {}
    for area in areas:
        root = user_data / area
        if not root.is_dir():
            continue
        for folder, dirs, names in os.walk(root):
            dirs.sort()
            for name in sorted(names):
                if len(files) >= max_files:
                    return files
                path = Path(folder) / name
                if path.is_symlink() or not path.is_file():
                    continue
                virtual = f"/mnt/user-data/{path.relative_to(user_data).as_posix()}"
                try:
                    files[virtual] = _read_state(path, virtual)
                except OSError:  # vanished or unreadable between listing and reading
                    continue
    return files


def _unified(path: str, old: FileState | None, new: FileState | None) -> str | None:
    before = old.text if old is not None else ""
    after = new.text if new is not None else ""
    if before is None or after is None:
        return None
    lines = list(difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True),
                                      fromfile=f"a{path}" if old else "/dev/null",
                                      tofile=f"b{path}" if new else "/dev/null"))
    if len(lines) > MAX_DIFF_LINES:
        lines = [*lines[:MAX_DIFF_LINES], f"... diff truncated ({len(lines) - MAX_DIFF_LINES} more lines)\n"]
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)


def diff_snapshots(before: dict[str, FileState], after: dict[str, FileState]) -> list[dict[str, Any]]:
    """Added, modified and deleted files between two snapshots, sorted by path."""
    changes: list[dict[str, Any]] = []
    budget = MAX_TOTAL_DIFF_CHARS
    for path in sorted(set(before) | set(after)):
        old, new = before.get(path), after.get(path)
        if old is not None and new is not None and old.digest == new.digest:
            continue
        current = new or old
        assert current is not None
        sensitive = bool(_SECRET.search(path))
        too_large = current.size > MAX_TEXT_BYTES or (old is not None and old.size > MAX_TEXT_BYTES)
        binary = current.binary or (old is not None and old.binary)
        diff = None if (sensitive or too_large or binary) else _unified(path, old, new)
        if diff is not None:
            if len(diff) > budget:
                diff, too_large = None, True  # the run's total diff budget is spent
            else:
                budget -= len(diff)
        changes.append({
            "path": path, "area": path.split("/")[3],
            "status": "added" if old is None else "deleted" if new is None else "modified",
            "size": new.size if new else None, "old_size": old.size if old else None,
            "binary": binary, "too_large": too_large, "sensitive": sensitive, "diff": diff,
        })
    return changes


def workspace_changes(before: dict[str, FileState], after: dict[str, FileState], *, run_id: str,
                      thread_id: str, status: str, finished_at: float | None = None) -> dict[str, Any]:
    """The ``workspace_changes`` journal payload for one run."""
    return {"run_id": run_id, "thread_id": thread_id, "status": status,
            "finished_at": finished_at if finished_at is not None else time.time(),
            "changes": diff_snapshots(before, after),
            "truncated": len(after) >= MAX_FILES or len(before) >= MAX_FILES}


def produced_outputs(before: dict[str, FileState], after: dict[str, FileState]) -> list[str]:
    """Files under ``outputs`` added or modified between two snapshots (what a run produced), sorted."""
    return sorted(path for path, new in after.items() if path.split("/")[3:4] == ["outputs"]
                  and (before.get(path) is None or before[path].digest != new.digest))


def produced_in(change: dict[str, Any] | None) -> list[str]:
    """:func:`produced_outputs` read from a ``workspace_changes`` payload (``None``: nothing changed)."""
    return [c["path"] for c in (change or {}).get("changes", []) if c["area"] == "outputs" and c["status"] != "deleted"]


def delivery_receipt(produced: list[str], presented: list[str]) -> dict[str, Any]:
    """The ``run.delivery`` receipt: what a run produced under outputs, what it presented, and whether that is enough.

    ``satisfied``: the run produced no output file, or presented at least one it produced (presenting an
    unrelated older file does not count), as in the reference's delivery receipts.
    """
    shown = list(dict.fromkeys(presented))
    matched = [path for path in produced if path in shown]
    return {"produced_paths": list(produced), "presented_paths": shown, "matched_paths": matched,
            "satisfied": not produced or bool(matched)}
