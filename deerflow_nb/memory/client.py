"""``agent.memory``: the notebook object for reading and editing long-term memory."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from deerflow_nb.memory.facts import Fact
from deerflow_nb.memory.service import MemoryService
from deerflow_nb.memory.storage import CACHED, MemoryStorage

__all__ = ["FactList", "MemoryClient"]

_COLUMNS = ["id", "content", "category", "confidence", "createdAt", "updatedAt", "source", "revision"]


class FactList(list[Fact]):
    """A list of :class:`Fact` with ``to_pandas()`` and a Markdown table in notebooks."""

    def to_records(self) -> list[dict[str, Any]]:
        """One dict per fact."""
        return [f.to_dict() for f in self]

    def to_pandas(self) -> Any:
        """A ``pandas.DataFrame`` with one row per fact (needs pandas)."""
        import pandas as pd

        return pd.DataFrame(self.to_records(), columns=_COLUMNS)

    def _repr_markdown_(self) -> str:
        rows = ["| id | category | confidence | content |", "|---|---|---|---|"]
        rows += [f"| {f.id} | {f.category} | {f.confidence:.2f} | {f.content[:100]} |" for f in self]
        return "\n".join(rows) if self else "_no facts_"


class MemoryClient:
    """One user's long-term memory. Reads are cached; edits are written at once (atomically)."""

    def __init__(self, service: MemoryService, user_id: str, loop: Any) -> None:
        self._service = service
        self._user_id = user_id
        self._loop = loop

    def __repr__(self) -> str:
        return f"<Memory user={self._user_id!r} facts={len(self._storage.facts())}>"

    @property
    def _storage(self) -> MemoryStorage:
        return self._service.storage(self._user_id)

    def _changed(self) -> None:
        self._service.forget_frozen()

    # -- reading -------------------------------------------------------------------
    @property
    def data(self) -> dict[str, Any]:
        """``memory.json``: ``version``, ``revision``, ``lastUpdated``, ``user`` and ``history`` summaries."""
        return self._storage.document()

    @property
    def facts(self) -> FactList:
        """Every fact (default agent bucket), oldest first."""
        return FactList(self._storage.facts())

    def search(self, query: str, limit: int = 10) -> FactList:
        """Facts relevant to ``query`` (full-text ranking)."""
        return FactList(self._storage.search(query, limit))

    def preview(self, message: str = "") -> str | None:
        """The ``<memory>`` block a new thread starting with ``message`` would get (``None``: nothing yet)."""
        return self._service.injection_for(self._user_id, message)

    def reload(self) -> dict[str, Any]:
        """Re-read memory from disk (after editing the files by hand); returns :attr:`data`."""
        self._storage.load(force=True)
        self._changed()
        return self.data

    def export(self) -> dict[str, Any]:
        """Summaries and facts as one JSON-ready dict (``import_`` takes it back)."""
        return self._storage.export()

    def config(self) -> dict[str, Any]:
        """The ``memory`` config section in effect."""
        return self._service.config.model_dump()

    def status(self) -> dict[str, Any]:
        """Queue and store status: pending updates, last error, fact count, revision."""
        queue = self._service.queue
        data = self.data
        return {"enabled": self._service.config.enabled, "mode": self._service.config.mode,
                "pending_updates": queue.pending, "processing": queue.processing, "processed": queue.processed,
                "last_error": queue.last_error, "last_flush_at": queue.last_flush_at,
                "facts": len(self._storage.facts()), "revision": data["revision"],
                "last_updated": data["lastUpdated"], "path": str(self._storage.memory_file)}

    # -- editing -------------------------------------------------------------------
    def add_fact(self, content: str, *, category: str = "context", confidence: float = 1.0) -> Fact:
        """Remember a fact (content already known returns the existing fact)."""
        fact = self._storage.add_fact(content, category=category, confidence=confidence, source="manual")
        self._changed()
        return fact

    def update_fact(self, fact_id: str, *, content: str | None = None, category: str | None = None,
                    confidence: float | None = None, expected_revision: Any = CACHED) -> Fact:
        """Change a fact; :class:`~deerflow_nb.memory.MemoryConflictError` if it changed meanwhile."""
        fact = self._storage.update_fact(fact_id, content=content, category=category, confidence=confidence,
                                         expected_revision=expected_revision)
        self._changed()
        return fact

    def delete_fact(self, fact_id: str, *, expected_revision: Any = CACHED) -> None:
        """Forget a fact."""
        self._storage.delete_fact(fact_id, expected_revision=expected_revision)
        self._changed()

    def set_summary(self, section: str, text: str) -> dict[str, Any]:
        """Replace one summary (``workContext``, ``personalContext``, ``topOfMind``, ``recentMonths``, ...)."""
        document = self._storage.update_summary({section: text})
        self._changed()
        return document

    def clear(self) -> None:
        """Forget everything (summaries and facts)."""
        self._storage.clear()
        self._changed()

    def import_(self, data: Mapping[str, Any]) -> None:
        """Replace memory with ``data`` (the shape :meth:`export` returns)."""
        self._storage.import_(data)
        self._changed()

    # -- updates -------------------------------------------------------------------
    def flush(self) -> int:
        """Process queued conversations now instead of after the debounce delay."""
        return int(self._loop.run(self._service.queue.flush(), method="Memory.flush"))

    async def aflush(self) -> int:
        """Async twin of :meth:`flush`."""
        return int(await self._loop.arun(self._service.queue.flush()))
