"""A fact: one atomic thing remembered about the user, stored as Markdown with YAML front matter.

::

    ---
    id: fact_3f2a9c1b7d4e
    category: preference
    confidence: 0.9
    createdAt: '2025-01-01T10:00:00+00:00'
    updatedAt: '2025-01-01T10:00:00+00:00'
    source: thread:4b1e...
    revision: 1
    ---
    Prefers Polars over pandas for large CSV files.
"""

from __future__ import annotations

import datetime as dt
import re
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import yaml

from deerflow_nb.memory.errors import MemoryCorruptError

__all__ = ["CATEGORIES", "Fact", "fact_from_markdown", "fact_to_markdown", "new_fact_id", "normalize_content",
           "now_iso"]

#: The categories the updater asks for; other strings are accepted as given.
CATEGORIES = ("preference", "knowledge", "context", "behavior", "goal", "correction")
_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when present: 10x faster loads
_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
_FRONT_RE = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.S)


def now_iso() -> str:
    """The current UTC time as ISO 8601."""
    return dt.datetime.now(dt.UTC).isoformat(timespec="microseconds")


def new_fact_id() -> str:
    """A fresh fact id (``fact_`` + 12 hex digits)."""
    return f"fact_{uuid.uuid4().hex[:12]}"


def normalize_content(text: str) -> str:
    """Whitespace- and case-normalised content, used to drop duplicate facts."""
    return " ".join(text.split()).casefold()


@dataclass
class Fact:
    """One remembered fact. ``revision`` increases with every change (optimistic concurrency)."""

    id: str
    content: str
    category: str = "context"
    confidence: float = 1.0
    createdAt: str = ""
    updatedAt: str = ""
    source: str = "manual"
    revision: int = 1

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not _ID_RE.match(self.id):
            raise ValueError(f"invalid fact id {self.id!r}: use letters, digits, '_' or '-'")
        if not isinstance(self.content, str) or not self.content.strip():
            raise ValueError("fact content must be a non-empty string")
        self.content = self.content.strip()
        if not isinstance(self.confidence, int | float) or isinstance(self.confidence, bool) \
                or not 0 <= float(self.confidence) <= 1:
            raise ValueError(f"fact confidence must be a number between 0 and 1, got {self.confidence!r}")
        self.confidence = float(self.confidence)
        if not isinstance(self.category, str) or not self.category.strip():
            raise ValueError("fact category must be a non-empty string")
        self.createdAt = self.createdAt or now_iso()
        self.updatedAt = self.updatedAt or self.createdAt

    def to_dict(self) -> dict[str, Any]:
        """Every field, JSON-ready."""
        return asdict(self)

    def __repr__(self) -> str:
        return f"<Fact {self.id} [{self.category} {self.confidence:.2f}] {self.content!r}>"


def fact_to_markdown(fact: Fact) -> str:
    """Serialise a fact (front matter + body)."""
    meta = {k: v for k, v in fact.to_dict().items() if k != "content"}
    dumped = yaml.dump(meta, Dumper=_DUMPER, sort_keys=False, allow_unicode=True)
    return "---\n" + dumped + "---\n" + fact.content + "\n"


def fact_from_markdown(text: str, source: Path | str) -> Fact:
    """Parse a fact file; :class:`MemoryCorruptError` names ``source`` when it is invalid."""
    match = _FRONT_RE.match(text)
    if match is None:
        raise MemoryCorruptError(f"{source}: not a fact file (missing YAML front matter)")
    try:
        meta = yaml.load(match.group(1), Loader=_LOADER)
        if not isinstance(meta, dict):
            raise ValueError("front matter is not a mapping")
        allowed = {"id", "category", "confidence", "createdAt", "updatedAt", "source", "revision"}
        fields = {k: meta[k] for k in allowed if k in meta}
        for key in ("createdAt", "updatedAt", "source"):
            if key in fields:
                fields[key] = str(fields[key])
        return Fact(content=text[match.end():].strip(), **fields)
    except (yaml.YAMLError, ValueError, TypeError) as exc:
        raise MemoryCorruptError(f"{source}: invalid fact file: {exc}") from None
