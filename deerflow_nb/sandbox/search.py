"""Bounded tree walking, glob matching and grep over host folders.

Used by :class:`~deerflow_nb.sandbox.local.LocalSandbox` (and providers that reuse its
file operations). Virtual paths are built from the virtual folder plus entry names, so
a path seen through a mount's symlink keeps its virtual spelling; symlinks whose
targets leave the sandbox are skipped, never followed.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from deerflow_nb.sandbox.base import GrepMatch

__all__ = [
    "GREP_SKIP_DIRS",
    "MAX_GREP_FILE_BYTES",
    "MAX_LINE_CHARS",
    "MAX_WALK_ENTRIES",
    "TreeEntry",
    "glob_regex",
    "grep_file",
    "is_binary",
    "is_staging_name",
    "walk_tree",
]

#: Folders a directory grep never descends into (version control, caches, environments).
GREP_SKIP_DIRS = frozenset({".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", ".mypy_cache"})
#: Files larger than this are not searched by grep.
MAX_GREP_FILE_BYTES = 10 * 1024 * 1024
#: Matching lines are cut to this many characters.
MAX_LINE_CHARS = 500
#: A walk stops after this many entries, whatever the caller's limit.
MAX_WALK_ENTRIES = 100_000
_STAGING_SUFFIXES = (".part", ".partial", ".tmp", ".upload")


def is_staging_name(name: str) -> bool:
    """Whether a file name is an in-progress upload or atomic-write temp file (hidden)."""
    return name.startswith(".") and name.endswith(_STAGING_SUFFIXES)


def is_binary(sample: bytes) -> bool:
    """Heuristic: a NUL byte in the first block means binary."""
    return b"\0" in sample[:8192]


@lru_cache(maxsize=256)
def glob_regex(pattern: str) -> re.Pattern[str]:
    """Compile a glob over ``/``-separated relative paths.

    ``*`` and ``?`` stay within one path segment, ``**`` spans any number of segments
    (``**/`` may match none) and ``[...]`` is a character class.
    """
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[":
            end = pattern.find("]", i + 2 if pattern[i + 1 : i + 2] in ("!", "]") else i + 1)
            if end == -1:
                out.append(re.escape(c))
                i += 1
                continue
            body = pattern[i + 1 : end]
            if body.startswith("!"):
                body = "^" + body[1:]
            out.append(f"[{body.replace(chr(92), chr(92) * 2)}]")
            i = end + 1
        else:
            out.append(re.escape(c))
            i += 1
    return re.compile("".join(out) + r"\Z", re.DOTALL)


@dataclass(frozen=True)
class TreeEntry:
    """One entry met by :func:`walk_tree`."""

    virtual: str
    host: Path
    rel: str
    is_dir: bool
    depth: int


def walk_tree(
    host_root: Path,
    virtual_root: str,
    *,
    is_allowed: Callable[[str], bool],
    max_depth: int | None = None,
    skip_dirs: frozenset[str] = frozenset(),
) -> Iterator[TreeEntry]:
    """Yield the entries below ``host_root`` in sorted pre-order (a tree listing).

    Args:
        host_root: the real host folder to walk.
        virtual_root: its virtual path; entries get ``virtual_root/rel``.
        is_allowed: says whether a resolved symlink target lies inside the sandbox;
            symlinks for which it is false are skipped.
        max_depth: 1 lists direct children only; ``None`` walks everything.
        skip_dirs: folder names listed but never descended into.
    """
    seen_dirs = {os.path.realpath(host_root)}
    count = 0
    base = virtual_root.rstrip("/")

    def visit(folder: Path, rel_prefix: str, depth: int) -> Iterator[TreeEntry]:
        nonlocal count
        try:
            with os.scandir(folder) as it:
                entries = sorted(it, key=lambda e: e.name)
        except (PermissionError, FileNotFoundError, NotADirectoryError):
            return
        for entry in entries:
            if is_staging_name(entry.name):
                continue
            count += 1
            if count > MAX_WALK_ENTRIES:
                return
            try:
                is_dir = entry.is_dir(follow_symlinks=True)
                if entry.is_symlink():
                    target = os.path.realpath(entry.path)
                    if not os.path.exists(target) or not is_allowed(target):
                        continue
            except OSError:
                continue
            rel = f"{rel_prefix}{entry.name}"
            yield TreeEntry(f"{base}/{rel}", Path(entry.path), rel, is_dir, depth)
            if not is_dir or entry.name in skip_dirs:
                continue
            if max_depth is not None and depth >= max_depth:
                continue
            real = os.path.realpath(entry.path)
            if real in seen_dirs:  # a symlink loop
                continue
            seen_dirs.add(real)
            yield from visit(Path(entry.path), f"{rel}/", depth + 1)

    yield from visit(host_root, "", 1)


def grep_file(
    host: Path, virtual: str, regex: re.Pattern[str], limit: int, *, max_bytes: int = MAX_GREP_FILE_BYTES
) -> list[GrepMatch]:
    """Matching lines of one file (none for binary or oversized files), at most ``limit``."""
    try:
        if host.stat().st_size > max_bytes:
            return []
        data = host.read_bytes()
    except OSError:
        return []
    if is_binary(data):
        return []
    matches: list[GrepMatch] = []
    for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), start=1):
        if regex.search(line):
            text = line if len(line) <= MAX_LINE_CHARS else line[:MAX_LINE_CHARS] + "..."
            matches.append(GrepMatch(path=virtual, line=number, text=text))
            if len(matches) >= limit:
                break
    return matches
