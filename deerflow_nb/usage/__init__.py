"""Token usage per run and per model, and its cost from ``models[].pricing``."""

from deerflow_nb.usage.plugin import UsagePlugin, record_of
from deerflow_nb.usage.pricing import compute_cost, pricing_for
from deerflow_nb.usage.schemas import ModelUsage, RunUsageRecord, TokenCounts, UsageSummary
from deerflow_nb.usage.store import Since, UsageStore, parse_since, summarize

__all__ = [
    "ModelUsage",
    "RunUsageRecord",
    "Since",
    "TokenCounts",
    "UsagePlugin",
    "UsageStore",
    "UsageSummary",
    "compute_cost",
    "parse_since",
    "pricing_for",
    "record_of",
    "summarize",
]
