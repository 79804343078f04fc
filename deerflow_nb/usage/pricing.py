"""Cost of token usage from ``models[].pricing`` (prices per million tokens)."""

from __future__ import annotations

from collections.abc import Mapping

from deerflow_nb.config.schema import AppConfig, ModelPricing

__all__ = ["compute_cost", "pricing_for"]


def pricing_for(config: AppConfig | None, model: str) -> ModelPricing | None:
    """The pricing of the configured model called ``model`` (``None``: unknown or unpriced)."""
    if config is None:
        return None
    entry = config.get_model_config(model)
    return entry.pricing if entry is not None else None


def compute_cost(usage: Mapping[str, int], pricing: ModelPricing | None) -> float | None:
    """What ``usage`` cost at ``pricing``; ``None`` without pricing.

    Cache hits (``cache_read_tokens``, part of ``input_tokens``) are billed at
    ``input_cache_hit_per_million``, or at the normal input price when that is unset.
    """
    if pricing is None:
        return None
    input_tokens = int(usage.get("input_tokens", 0))
    cached = min(int(usage.get("cache_read_tokens", 0)), input_tokens)
    hit_price = pricing.input_cache_hit_per_million
    if hit_price is None:
        hit_price = pricing.input_per_million
    return ((input_tokens - cached) * pricing.input_per_million
            + cached * hit_price
            + int(usage.get("output_tokens", 0)) * pricing.output_per_million) / 1_000_000
