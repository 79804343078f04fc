"""Fact search: an in-memory SQLite FTS5 index (BM25, Porter stemming), with a substring fallback.

The index is derived data, rebuilt from the fact files whenever the store loads
them and kept up to date on every write, so it never needs migrating. Where the
SQLite build lacks FTS5, or a query cannot be expressed, a plain substring scan
ranks facts by how many query words they contain.

A query is the user's message, so it is mostly common words. Stop words are
dropped, and so are words found in more than 5% of the facts (when a rarer word is
present): they add almost nothing to BM25 scores (tiny IDF) but make SQLite rank
most of the index. That keeps a search at 10,000 facts around a millisecond.
"""

from __future__ import annotations

import re
import sqlite3
import threading
from collections.abc import Iterable

from deerflow_nb.memory.facts import Fact

__all__ = ["FactIndex", "query_terms", "substring_search"]

_WORD_RE = re.compile(r"\w+", re.UNICODE)
_MAX_TERMS = 32
#: Share of the facts above which a word counts as common (and is skipped if a rarer one exists).
COMMON_FRACTION = 0.05
_MIN_COMMON_DOCS = 20
STOPWORDS = frozenset("""
a about after all also am an and any are as at be been but by can could did do does doing for from had has
have he her here hers him his how i if in into is it its just me more most my no not now of on once only or
other our out over please so some such than that the their them then there these they this those through to
too under up very was we were what when where which while who whom why will with would you your yours
""".split())


def query_terms(query: str) -> list[str]:
    """The distinct lower-case words of ``query`` without stop words (at most 32)."""
    words = (w.casefold() for w in _WORD_RE.findall(query))
    return list(dict.fromkeys(w for w in words if w not in STOPWORDS))[:_MAX_TERMS]


def substring_search(facts: Iterable[Fact], query: str, limit: int) -> list[Fact]:
    """Facts containing query words, most words first, then by confidence."""
    terms = query_terms(query)
    if not terms:
        return []
    scored = []
    for fact in facts:
        text = fact.content.casefold()
        score = sum(1 for t in terms if t in text)
        if score:
            scored.append((score, fact.confidence, fact))
    scored.sort(key=lambda item: (-item[0], -item[1]))
    return [fact for _, _, fact in scored[:limit]]


class FactIndex:
    """Full-text index of one fact bucket; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._size = 0
        self._conn = sqlite3.connect(":memory:", check_same_thread=False)
        try:
            self._conn.execute("CREATE VIRTUAL TABLE facts USING fts5(id UNINDEXED, content, category, "
                               "tokenize='porter unicode61 remove_diacritics 2')")
            self.available = True
        except sqlite3.OperationalError:  # SQLite built without FTS5
            self.available = False

    def rebuild(self, facts: Iterable[Fact]) -> None:
        """Replace the index content with ``facts``."""
        if not self.available:
            return
        rows = [(f.id, f.content, f.category) for f in facts]
        with self._lock, self._conn:
            self._conn.execute("DELETE FROM facts")
            self._conn.executemany("INSERT INTO facts(id, content, category) VALUES (?, ?, ?)", rows)
            self._size = len(rows)

    def upsert(self, fact: Fact) -> None:
        """Add or replace one fact."""
        if not self.available:
            return
        with self._lock, self._conn:
            removed = self._conn.execute("DELETE FROM facts WHERE id = ?", (fact.id,)).rowcount
            self._conn.execute("INSERT INTO facts(id, content, category) VALUES (?, ?, ?)",
                               (fact.id, fact.content, fact.category))
            self._size += 1 - max(removed, 0)

    def remove(self, fact_id: str) -> None:
        """Drop one fact."""
        if not self.available:
            return
        with self._lock, self._conn:
            self._size -= max(self._conn.execute("DELETE FROM facts WHERE id = ?", (fact_id,)).rowcount, 0)

    def search(self, query: str, limit: int) -> list[str] | None:
        """Fact ids by BM25 relevance; ``None`` when FTS5 cannot answer (use the fallback)."""
        terms = query_terms(query)
        if not self.available or not terms:
            return None if not self.available else []
        # Quoted terms: user text can never be read as FTS5 syntax.
        quoted = {t: '"' + t.replace('"', '""') + '"' for t in terms}
        try:
            with self._lock:
                counts = {t: self._conn.execute("SELECT count(*) FROM facts WHERE facts MATCH ?",
                                                (quoted[t],)).fetchone()[0] for t in terms}
                present = [t for t in terms if counts[t]]
                if not present:
                    return []
                cutoff = max(COMMON_FRACTION * self._size, _MIN_COMMON_DOCS)
                chosen = [t for t in present if counts[t] <= cutoff] or [min(present, key=counts.__getitem__)]
                rows = self._conn.execute(
                    "SELECT id FROM facts WHERE facts MATCH ? ORDER BY bm25(facts) LIMIT ?",
                    (" OR ".join(quoted[t] for t in chosen), limit),
                ).fetchall()
        except sqlite3.OperationalError:
            return None
        return [row[0] for row in rows]

    def close(self) -> None:
        """Release the SQLite connection."""
        with self._lock:
            self._conn.close()
