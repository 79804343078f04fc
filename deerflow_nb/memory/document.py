"""The ``memory.json`` document: its sections, an empty document and import validation."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from deerflow_nb.errors import UsageError
from deerflow_nb.memory.errors import MemoryCorruptError
from deerflow_nb.memory.facts import Fact, new_fact_id

__all__ = [
    "HISTORY_SECTIONS",
    "SCHEMA_VERSION",
    "USER_SECTIONS",
    "empty_document",
    "normalize_document",
    "parse_import",
    "section_of",
]

USER_SECTIONS = ("workContext", "personalContext", "topOfMind")
HISTORY_SECTIONS = ("recentMonths", "earlierContext", "longTermBackground")
SCHEMA_VERSION = "2.0"


def empty_document() -> dict[str, Any]:
    """A fresh ``memory.json`` document."""
    blank = {"summary": "", "updatedAt": ""}
    return {"version": SCHEMA_VERSION, "revision": 0, "lastUpdated": "",
            "user": {k: dict(blank) for k in USER_SECTIONS}, "history": {k: dict(blank) for k in HISTORY_SECTIONS}}


def normalize_document(doc: Any, source: Path) -> dict[str, Any]:
    """A parsed ``memory.json`` with every section present; :class:`MemoryCorruptError` if it is not one."""
    if not isinstance(doc, dict) or not isinstance(doc.get("user", {}), dict) \
            or not isinstance(doc.get("history", {}), dict) or not isinstance(doc.get("revision", 0), int):
        raise MemoryCorruptError(f"{source}: not a memory document (expected user, history, revision)")
    base = empty_document()
    for part in ("user", "history"):
        for key, value in doc.get(part, {}).items():
            if isinstance(value, dict):
                base[part][key] = {"summary": str(value.get("summary", "")),
                                   "updatedAt": str(value.get("updatedAt", ""))}
    base["revision"] = doc.get("revision", 0)
    base["lastUpdated"] = str(doc.get("lastUpdated", ""))
    return base


def section_of(key: str) -> str:
    """``"user"`` or ``"history"`` for a summary key; :class:`UsageError` for an unknown one."""
    if key in USER_SECTIONS:
        return "user"
    if key in HISTORY_SECTIONS:
        return "history"
    raise UsageError(f"unknown memory section {key!r}; use one of {[*USER_SECTIONS, *HISTORY_SECTIONS]}")


def parse_import(data: Mapping[str, Any]) -> tuple[dict[str, str], list[Fact]]:
    """Validate an ``export()``-shaped mapping: ``(summaries by key, facts)``; names the bad field."""
    if not isinstance(data, Mapping):
        raise UsageError("memory import data must be a mapping like export() returns")
    sections: dict[str, str] = {}
    for part, keys in (("user", USER_SECTIONS), ("history", HISTORY_SECTIONS)):
        block = data.get(part) or {}
        if not isinstance(block, Mapping):
            raise UsageError(f"memory import: {part!r} must be a mapping")
        for key in keys:
            value = block.get(key, "")
            sections[key] = str(value.get("summary", "") if isinstance(value, Mapping) else value)
    raw_facts = data.get("facts") or []
    if not isinstance(raw_facts, list):
        raise UsageError("memory import: 'facts' must be a list")
    facts = []
    for i, entry in enumerate(raw_facts):
        try:
            fields = {k: entry[k] for k in ("id", "content", "category", "confidence", "createdAt",
                                             "updatedAt", "source") if k in entry}
            fields.setdefault("id", new_fact_id())
            facts.append(Fact(**fields))
        except (TypeError, ValueError) as exc:
            raise UsageError(f"memory import: facts[{i}]: {exc}") from None
    return sections, facts
