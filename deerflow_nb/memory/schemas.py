"""Request and response models of the ``memory`` gateway routes and their SDK twins.

``DeerFlow.get_memory()`` / ``reload_memory()`` / ``get_memory_config()`` /
``get_memory_status()`` and ``GET /deerflow/api/memory``, ``POST /memory/reload``,
``GET /memory/config``, ``GET /memory/status`` are built from these models, and so are
the ``agent.memory`` edits (``/memory/facts``, ``/memory/summaries``, ``/memory/import``):
the same strict request models validate an embedded call and an HTTP body.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from deerflow_nb.config.schema import MemoryConfig
from deerflow_nb.memory.facts import Fact

__all__ = [
    "ContextSection",
    "FactCreateRequest",
    "FactDeleteRequest",
    "FactDeleteResponse",
    "FactListResponse",
    "FactRecord",
    "FactResponse",
    "FactUpdateRequest",
    "MemoryDataResponse",
    "MemoryExportResponse",
    "MemoryFlushResponse",
    "MemoryImportRequest",
    "MemoryPreviewResponse",
    "MemoryQueueStatus",
    "SummaryUpdateRequest",
    "HistoryContext",
    "MemoryConfigResponse",
    "MemoryResponse",
    "MemoryStatusResponse",
    "UserContext",
    "memory_config_response",
    "memory_response",
]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ContextSection(_Model):
    """One summary section."""

    summary: str = ""
    updatedAt: str = ""


class UserContext(_Model):
    """What the agent knows about the user now."""

    workContext: ContextSection = Field(default_factory=ContextSection)
    personalContext: ContextSection = Field(default_factory=ContextSection)
    topOfMind: ContextSection = Field(default_factory=ContextSection)


class HistoryContext(_Model):
    """What the agent knows about the user's past."""

    recentMonths: ContextSection = Field(default_factory=ContextSection)
    earlierContext: ContextSection = Field(default_factory=ContextSection)
    longTermBackground: ContextSection = Field(default_factory=ContextSection)


class FactResponse(_Model):
    """One fact."""

    id: str
    content: str
    category: str = "context"
    confidence: float = 1.0
    createdAt: str = ""
    source: str = "manual"


class MemoryResponse(_Model):
    """The whole memory of the user (facts of the default agent)."""

    version: str = "2.0"
    lastUpdated: str = ""
    user: UserContext = Field(default_factory=UserContext)
    history: HistoryContext = Field(default_factory=HistoryContext)
    facts: list[FactResponse] = Field(default_factory=list)


class MemoryConfigResponse(_Model):
    """The memory settings in effect."""

    enabled: bool
    mode: str
    storage_path: str
    debounce_seconds: float
    max_facts: int
    fact_confidence_threshold: float
    injection_enabled: bool
    max_injection_tokens: int


class MemoryStatusResponse(_Model):
    """Settings and data together."""

    config: MemoryConfigResponse
    data: MemoryResponse


# -- agent.memory (facts, summaries, import/export, queue) -----------------------------------
_NOT_BLANK = r"\S"
_REVISION_DOC = ("Refuse (409) unless the fact is still at this revision; null: no check; "
                 "absent: the revision the server last read.")


class FactRecord(_Model):
    """One fact with every stored field (``agent.memory.facts`` rows)."""

    id: str
    content: str
    category: str
    confidence: float
    createdAt: str
    updatedAt: str
    source: str
    revision: int


class FactListResponse(_Model):
    """``GET /memory/facts``: every fact, oldest first, or the best matches of ``?query=``."""

    facts: list[FactRecord]


class FactCreateRequest(_Model):
    """``POST /memory/facts`` (``agent.memory.add_fact``); content already known returns the existing fact."""

    content: str = Field(min_length=1, max_length=10_000, pattern=_NOT_BLANK)
    category: str = Field(default="context", min_length=1, max_length=100, pattern=_NOT_BLANK)
    confidence: float = Field(default=1.0, ge=0, le=1)


class FactUpdateRequest(_Model):
    """``PATCH /memory/facts/{fact_id}`` (``agent.memory.update_fact``): the fields to change."""

    content: str | None = Field(default=None, min_length=1, max_length=10_000, pattern=_NOT_BLANK)
    category: str | None = Field(default=None, min_length=1, max_length=100, pattern=_NOT_BLANK)
    confidence: float | None = Field(default=None, ge=0, le=1)
    expected_revision: int | None = Field(default=None, ge=0, description=_REVISION_DOC)


class FactDeleteRequest(_Model):
    """``DELETE /memory/facts/{fact_id}`` (``agent.memory.delete_fact``); the body is optional."""

    expected_revision: int | None = Field(default=None, ge=0, description=_REVISION_DOC)


class FactDeleteResponse(_Model):
    """``DELETE /memory/facts/{fact_id}``."""

    success: bool
    fact_id: str


class SummaryUpdateRequest(_Model):
    """``PUT /memory/summaries/{section}`` (``agent.memory.set_summary``)."""

    text: str = Field(max_length=20_000)


class ImportFact(_Model):
    """One fact of an import (the shape ``export()`` gives; ``id`` is generated when absent)."""

    id: str | None = Field(default=None, pattern=r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
    content: str = Field(min_length=1, max_length=10_000, pattern=_NOT_BLANK)
    category: str = Field(default="context", min_length=1, max_length=100, pattern=_NOT_BLANK)
    confidence: float = Field(default=1.0, ge=0, le=1)
    createdAt: str = ""
    updatedAt: str = ""
    source: str = "manual"
    revision: int | None = Field(default=None, ge=0, description="Ignored: imported facts start at revision 1.")


class MemoryImportRequest(_Model):
    """``POST /memory/import`` (``agent.memory.import_``): replaces summaries and facts."""

    version: str = "2.0"
    revision: int | None = Field(default=None, description="Ignored (the export's revision).")
    lastUpdated: str = ""
    user: UserContext = Field(default_factory=UserContext)
    history: HistoryContext = Field(default_factory=HistoryContext)
    facts: list[ImportFact] = Field(default_factory=list, max_length=10_000)


class MemoryDataResponse(_Model):
    """``GET /memory/data`` (``agent.memory.data``): ``memory.json`` with its revision."""

    version: str
    revision: int
    lastUpdated: str
    user: UserContext
    history: HistoryContext


class MemoryExportResponse(MemoryDataResponse):
    """``GET /memory/export`` (``agent.memory.export()``): summaries and every fact."""

    facts: list[FactRecord]


class MemoryPreviewResponse(_Model):
    """``GET /memory/preview?message=``: the ``<memory>`` block a new thread would get (``null``: none)."""

    memory: str | None


class MemoryQueueStatus(_Model):
    """``GET /memory/queue`` (``agent.memory.status()``): the update queue and the store."""

    enabled: bool
    mode: str
    pending_updates: int
    processing: bool
    processed: int
    last_error: str | None
    last_flush_at: float | None
    facts: int
    revision: int
    last_updated: str
    path: str


class MemoryFlushResponse(_Model):
    """``POST /memory/flush`` (``agent.memory.flush()``): how many queued updates were processed."""

    processed: int


def memory_response(document: dict[str, Any], facts: Sequence[Fact]) -> MemoryResponse:
    """The response model of a ``memory.json`` document plus facts."""
    return MemoryResponse(
        version=str(document.get("version", "2.0")),
        lastUpdated=str(document.get("lastUpdated", "")),
        user=UserContext.model_validate(document.get("user") or {}),
        history=HistoryContext.model_validate(document.get("history") or {}),
        facts=[FactResponse(id=f.id, content=f.content, category=f.category, confidence=f.confidence,
                            createdAt=f.createdAt, source=f.source) for f in facts],
    )


def memory_config_response(config: MemoryConfig, storage_path: str) -> MemoryConfigResponse:
    """The response model of the ``memory`` config section."""
    return MemoryConfigResponse(
        enabled=config.enabled, mode=config.mode, storage_path=storage_path,
        debounce_seconds=config.debounce_seconds, max_facts=config.max_facts,
        fact_confidence_threshold=config.fact_confidence_threshold, injection_enabled=config.injection_enabled,
        max_injection_tokens=config.max_injection_tokens,
    )
