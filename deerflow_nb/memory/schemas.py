"""Response models of the ``memory`` gateway routes and their SDK twins.

``DeerFlow.get_memory()`` / ``reload_memory()`` / ``get_memory_config()`` /
``get_memory_status()`` and ``GET /deerflow/api/memory``, ``POST /memory/reload``,
``GET /memory/config``, ``GET /memory/status`` are built from these models.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from deerflow_nb.config.schema import MemoryConfig
from deerflow_nb.memory.facts import Fact

__all__ = [
    "ContextSection",
    "FactResponse",
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
