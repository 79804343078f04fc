"""One user's memory on disk: ``memory.json`` summaries plus Markdown facts per agent bucket.

Layout::

    {user_dir}/memory.json                              # version, revision, lastUpdated, user, history
    {user_dir}/agents/{agent}/facts/{sha[:2]}/{id}.md   # one fact per file (default agent: __default__)

Every write is atomic (temporary file + rename) and holds a per-user lock (a thread
lock plus an ``flock`` on ``{user_dir}/.memory.lock``, so two processes serialise
too). Writes are optimistic: ``memory.json`` carries a ``revision`` bumped by every
write and each fact its own ``revision``; a write based on an older revision than
the one on disk raises :class:`MemoryConflictError`. A file that cannot be parsed
raises :class:`MemoryCorruptError` and is never overwritten.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import json
import os
import re
import shutil
import threading
from collections.abc import Collection, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from deerflow_nb.errors import NotFoundError, UsageError
from deerflow_nb.memory.document import (
    HISTORY_SECTIONS,
    USER_SECTIONS,
    empty_document,
    normalize_document,
    parse_import,
    section_of,
)
from deerflow_nb.memory.errors import MemoryConflictError, MemoryCorruptError
from deerflow_nb.memory.facts import Fact, fact_from_markdown, fact_to_markdown, new_fact_id, normalize_content, now_iso
from deerflow_nb.memory.index import FactIndex, substring_search
from deerflow_nb.memory.locking import user_lock
from deerflow_nb.utils.files import atomic_write_text

__all__ = ["CACHED", "DEFAULT_AGENT", "HISTORY_SECTIONS", "USER_SECTIONS", "MemoryStorage", "empty_document"]

DEFAULT_AGENT = "__default__"
_AGENT_RE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
#: Sentinel: "expect the revision I last read" (the default of every write).
CACHED: Any = object()


class MemoryStorage:
    """Memory of one user and one agent bucket, cached in memory and indexed for search."""

    def __init__(self, user_dir: Path, agent: str = DEFAULT_AGENT) -> None:
        if agent != DEFAULT_AGENT and not _AGENT_RE.match(agent):
            raise UsageError(f"invalid agent name {agent!r}: use lower-case letters, digits, '_' or '-'")
        self.user_dir = Path(user_dir)
        self.agent = agent
        self.memory_file = self.user_dir / "memory.json"
        self.facts_dir = self.user_dir / "agents" / agent / "facts"
        self.lock_file = self.user_dir / ".memory.lock"
        self.index = FactIndex()
        self._lock = threading.RLock()
        self._doc: dict[str, Any] | None = None
        self._facts: dict[str, Fact] = {}
        self._token: tuple[int, int] | None = None
        self._by_rank: list[Fact] | None = None  # facts by confidence, newest first on ties

    # -- reading -------------------------------------------------------------------
    def _stat(self) -> tuple[int, int] | None:
        try:
            st = os.stat(self.memory_file)
        except FileNotFoundError:
            return None
        return (st.st_mtime_ns, st.st_size)

    def _read_doc(self) -> dict[str, Any]:
        try:
            raw = self.memory_file.read_text(encoding="utf-8")
        except FileNotFoundError:
            return empty_document()
        try:
            doc = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise MemoryCorruptError(f"{self.memory_file}: invalid JSON ({exc}); fix or move the file, "
                                     "then reload memory") from None
        return normalize_document(doc, self.memory_file)

    def _fact_path(self, fact_id: str) -> Path:
        return self.facts_dir / hashlib.sha256(fact_id.encode()).hexdigest()[:2] / f"{fact_id}.md"

    def _read_fact(self, path: Path) -> Fact:
        try:
            fact = fact_from_markdown(path.read_text(encoding="utf-8"), path)
        except UnicodeDecodeError as exc:
            raise MemoryCorruptError(f"{path}: not UTF-8 text: {exc}") from None
        if fact.id != path.stem:
            raise MemoryCorruptError(f"{path}: front matter id {fact.id!r} does not match the file name")
        return fact

    def load(self, *, force: bool = False) -> None:
        """Read memory from disk (again, if ``force`` or the files changed since the last read)."""
        with self._lock:
            token = self._stat()
            if not force and self._doc is not None and token == self._token:
                return
            doc = self._read_doc()
            facts = {}
            if self.facts_dir.is_dir():
                for path in sorted(self.facts_dir.glob("*/*.md")):
                    fact = self._read_fact(path)
                    facts[fact.id] = fact
            self._doc, self._facts, self._token = doc, facts, token
            self._by_rank = None
            self.index.rebuild(facts.values())

    def document(self) -> dict[str, Any]:
        """A copy of ``memory.json``: version, revision, lastUpdated, user, history."""
        self.load()
        assert self._doc is not None
        return copy.deepcopy(self._doc)

    @property
    def revision(self) -> int:
        """The revision of ``memory.json`` as last read."""
        self.load()
        assert self._doc is not None
        return int(self._doc["revision"])

    def facts(self) -> list[Fact]:
        """Every fact of the bucket, oldest first."""
        self.load()
        return sorted((replace(f) for f in self._facts.values()), key=lambda f: (f.createdAt, f.id))

    def get_fact(self, fact_id: str) -> Fact:
        """One fact; :class:`NotFoundError` when unknown."""
        self.load()
        fact = self._facts.get(fact_id)
        if fact is None:
            raise NotFoundError(f"memory fact {fact_id!r} not found")
        return replace(fact)

    def top_facts(self, limit: int, exclude: Collection[str] = ()) -> list[Fact]:
        """The ``limit`` most confident facts (newest first on ties), skipping ids in ``exclude``."""
        self.load()
        with self._lock:
            if self._by_rank is None:
                self._by_rank = sorted(self._facts.values(), key=lambda f: (f.confidence, f.createdAt), reverse=True)
            ranked = self._by_rank
        out: list[Fact] = []
        for fact in ranked:
            if len(out) >= limit:
                break
            if fact.id not in exclude:
                out.append(replace(fact))
        return out

    def search(self, query: str, limit: int = 10) -> list[Fact]:
        """Facts relevant to ``query``: FTS5/BM25 ranking, else a substring scan."""
        self.load()
        ids = self.index.search(query, limit)
        if ids is None:
            return [replace(f) for f in substring_search(self._facts.values(), query, limit)]
        return [replace(self._facts[i]) for i in ids if i in self._facts]

    # -- writing -------------------------------------------------------------------
    def _locked(self) -> contextlib.AbstractContextManager[None]:
        return user_lock(self.user_dir, self.lock_file, self._lock)

    def _expected(self, expected: Any) -> int | None:
        if expected is CACHED:
            return int(self._doc["revision"]) if self._doc is not None else None
        return expected

    def _check(self, disk: dict[str, Any], expected: int | None) -> None:
        if expected is not None and disk["revision"] != expected:
            raise MemoryConflictError(f"{self.memory_file} changed (revision {disk['revision']}, you read "
                                      f"{expected}); reload memory and retry")

    def _commit(self, disk: dict[str, Any]) -> None:
        """Write ``disk`` with a new revision; forget the cache if someone else wrote since we read."""
        stale = self._stat() != self._token
        disk["revision"] = int(disk["revision"]) + 1
        disk["lastUpdated"] = now_iso()
        atomic_write_text(self.memory_file, json.dumps(disk, indent=2, ensure_ascii=False) + "\n")
        if stale or self._doc is None:
            self._doc = None  # re-read everything on the next access
        else:
            self._doc, self._token = disk, self._stat()

    def _write_fact(self, fact: Fact) -> None:
        atomic_write_text(self._fact_path(fact.id), fact_to_markdown(fact))
        self._by_rank = None
        if self._doc is not None:
            self._facts[fact.id] = fact
            self.index.upsert(fact)

    def _drop_fact(self, fact_id: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self._fact_path(fact_id).unlink()
        self._by_rank = None
        if self._facts.pop(fact_id, None) is not None:
            self.index.remove(fact_id)

    def update_summary(self, sections: Mapping[str, str], *, expected_revision: Any = CACHED) -> dict[str, Any]:
        """Replace summary sections (``workContext``, ``recentMonths``, ...); returns the document."""
        return self.apply_changes(sections=sections, expected_revision=expected_revision)["document"]

    def add_fact(self, content: str, *, category: str = "context", confidence: float = 1.0,
                 source: str = "manual") -> Fact:
        """Add a fact (a duplicate of an existing fact's content returns that fact)."""
        result = self.apply_changes(new_facts=[{"content": content, "category": category,
                                                "confidence": confidence, "source": source}],
                                    expected_revision=None)
        return result["added"][0] if result["added"] else result["duplicates"][0]

    def _expected_fact(self, fact_id: str, expected: Any) -> int | None:
        if expected is not CACHED:
            return expected  # type: ignore[no-any-return]
        cached = self._facts.get(fact_id) if self._doc is not None else None
        return cached.revision if cached is not None else None

    def _disk_fact(self, fact_id: str, expected: int | None) -> Fact:
        path = self._fact_path(fact_id)
        if not path.is_file():
            raise NotFoundError(f"memory fact {fact_id!r} not found")
        fact = self._read_fact(path)
        if expected is not None and fact.revision != expected:
            raise MemoryConflictError(f"memory fact {fact_id!r} changed (revision {fact.revision}, you read "
                                      f"{expected}); reload memory and retry")
        return fact

    def update_fact(self, fact_id: str, *, content: str | None = None, category: str | None = None,
                    confidence: float | None = None, expected_revision: Any = CACHED) -> Fact:
        """Change a fact; :class:`MemoryConflictError` if it changed since it was read."""
        with self._locked():
            expected = self._expected_fact(fact_id, expected_revision)  # before a refresh hides a change
            self.load()
            fact = self._disk_fact(fact_id, expected)
            try:
                updated = replace(fact, content=fact.content if content is None else content,
                                  category=fact.category if category is None else category,
                                  confidence=fact.confidence if confidence is None else confidence,
                                  revision=fact.revision + 1, updatedAt=now_iso())
            except ValueError as exc:
                raise UsageError(f"invalid fact update: {exc}") from None
            disk = self._read_doc()
            self._write_fact(updated)
            self._commit(disk)
            return replace(updated)

    def delete_fact(self, fact_id: str, *, expected_revision: Any = CACHED) -> None:
        """Delete a fact; :class:`MemoryConflictError` if it changed since it was read."""
        with self._locked():
            expected = self._expected_fact(fact_id, expected_revision)
            self.load()
            self._disk_fact(fact_id, expected)
            disk = self._read_doc()
            self._drop_fact(fact_id)
            self._commit(disk)

    def apply_changes(self, *, sections: Mapping[str, str] | None = None,
                      new_facts: Sequence[Mapping[str, Any]] = (), remove_ids: Sequence[str] = (),
                      max_facts: int | None = None, expected_revision: Any = CACHED) -> dict[str, Any]:
        """Apply one batch (summaries, new facts, removals, trimming) as a single revision.

        Returns ``{"document", "added", "duplicates", "removed"}``. With
        ``expected_revision=None`` the batch applies on top of whatever is on disk.
        """
        for key in sections or {}:
            section_of(key)
        candidates = []
        for i, entry in enumerate(new_facts):
            try:
                candidates.append(Fact(id=new_fact_id(), content=str(entry.get("content", "")),
                                       category=str(entry.get("category") or "context"),
                                       confidence=entry.get("confidence", 1.0),
                                       source=str(entry.get("source") or "manual")))
            except ValueError as exc:
                raise UsageError(f"new_facts[{i}]: {exc}") from None
        with self._locked():
            expected = self._expected(expected_revision)
            disk = self._read_doc()
            self._check(disk, expected)
            self.load()
            stamp = now_iso()
            for key, text in (sections or {}).items():
                disk[section_of(key)][key] = {"summary": str(text).strip(), "updatedAt": stamp}
            removed = [fid for fid in dict.fromkeys(remove_ids) if fid in self._facts]
            for fid in removed:
                self._drop_fact(fid)
            known = {normalize_content(f.content): f for f in self._facts.values()}
            added, duplicates = [], []
            for fact in candidates:
                twin = known.get(normalize_content(fact.content))
                if twin is not None:
                    duplicates.append(replace(twin))
                    continue
                self._write_fact(fact)
                known[normalize_content(fact.content)] = fact
                added.append(replace(fact))
            if max_facts is not None and len(self._facts) > max_facts:
                # Keep the most confident, then the newest.
                ranked = sorted(self._facts.values(), key=lambda f: (f.confidence, f.createdAt), reverse=True)
                for fact in ranked[max_facts:]:
                    self._drop_fact(fact.id)
                    removed.append(fact.id)
            self._commit(disk)
            return {"document": copy.deepcopy(disk), "added": added, "duplicates": duplicates, "removed": removed}

    def clear(self, *, expected_revision: Any = CACHED) -> None:
        """Forget every summary and every fact of this bucket."""
        with self._locked():
            disk = self._read_doc()
            self._check(disk, self._expected(expected_revision))
            fresh = empty_document()
            fresh["revision"] = disk["revision"]
            shutil.rmtree(self.facts_dir, ignore_errors=True)
            self._facts.clear()
            self._by_rank = None
            self.index.rebuild([])
            self._commit(fresh)

    def export(self) -> dict[str, Any]:
        """The whole memory as one JSON-ready dict (``facts`` included)."""
        doc = self.document()
        doc["facts"] = [f.to_dict() for f in self.facts()]
        return doc

    def import_(self, data: Mapping[str, Any], *, expected_revision: Any = CACHED) -> None:
        """Replace this memory with ``data`` (the shape of :meth:`export`); validated before writing."""
        sections, facts = parse_import(data)
        with self._locked():
            disk = self._read_doc()
            self._check(disk, self._expected(expected_revision))
            self.load()
            for fid in [fid for fid in self._facts if fid not in {f.id for f in facts}]:
                self._drop_fact(fid)
            for fact in facts:
                self._write_fact(fact)
            stamp = now_iso()
            for key, text in sections.items():
                disk[section_of(key)][key] = {"summary": text.strip(), "updatedAt": stamp if text else ""}
            self._commit(disk)
