"""Models of usage records and summaries (also the response models of the usage routes)."""

from __future__ import annotations

from pydantic import BaseModel, Field

__all__ = ["ModelUsage", "RunUsageRecord", "TokenCounts", "UsageSummary"]


class TokenCounts(BaseModel):
    """Token totals of one model (``cache_read_tokens`` are part of ``input_tokens``)."""

    input_tokens: int = Field(default=0, ge=0)
    output_tokens: int = Field(default=0, ge=0)
    total_tokens: int = Field(default=0, ge=0)
    cache_read_tokens: int = Field(default=0, ge=0)


class RunUsageRecord(BaseModel):
    """One stored line: what a run consumed, per model (subagents included)."""

    run_id: str
    thread_id: str | None = None
    user_id: str
    status: str
    started_at: float | None = None
    finished_at: float
    models: dict[str, TokenCounts] = Field(default_factory=dict)


class ModelUsage(TokenCounts):
    """A model's totals over the summarised runs, priced when ``models[].pricing`` is set."""

    runs: int = Field(default=0, ge=0)
    cost: float | None = Field(default=None, description="None when the model has no pricing.")


class UsageSummary(TokenCounts):
    """``thread.usage()`` / ``agent.usage()`` and ``GET /usage``."""

    thread_id: str | None = None
    since: float | None = Field(default=None, description="Lower bound (seconds since the epoch), if any.")
    runs: int = Field(default=0, ge=0)
    cost: float | None = Field(default=None, description="Sum over priced models; None when none is priced.")
    unpriced_models: list[str] = Field(default_factory=list)
    by_model: dict[str, ModelUsage] = Field(default_factory=dict)
