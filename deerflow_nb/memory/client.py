"""``FactList``: what ``agent.memory.facts`` and ``search()`` return (both modes).

``agent.memory`` itself is :class:`deerflow_nb.client.features.Memory`: written once over
the client's backend, its answers come from :class:`deerflow_nb.runtime.gateway.Gateway`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from deerflow_nb.memory.facts import Fact

__all__ = ["FactList"]

_COLUMNS = ["id", "content", "category", "confidence", "createdAt", "updatedAt", "source", "revision"]


class FactList(list[Fact]):
    """A list of :class:`Fact` with ``to_pandas()`` and a Markdown table in notebooks."""

    @classmethod
    def from_records(cls, records: Iterable[Mapping[str, Any]]) -> FactList:
        """The facts of ``{"id", "content", ...}`` records (a ``GET /memory/facts`` body's ``facts``)."""
        return cls(Fact(**dict(r)) for r in records)

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
