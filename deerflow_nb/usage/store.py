"""Per-run usage records, stored as JSON lines per user, and their summaries.

Storage lives behind :class:`UsageStore` so it can move into the database later
without touching callers. Each record is one ``write`` of one line in append mode;
a torn last line (a crash mid-write) is skipped when reading.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from deerflow_nb.config.paths import Paths
from deerflow_nb.config.schema import AppConfig
from deerflow_nb.errors import UsageError
from deerflow_nb.usage.pricing import compute_cost, pricing_for
from deerflow_nb.usage.schemas import ModelUsage, RunUsageRecord, UsageSummary

__all__ = ["Since", "UsageStore", "parse_since", "summarize"]

logger = logging.getLogger(__name__)
#: ``since`` filters: a datetime/date (naive = local time), an ISO string, or epoch seconds.
Since = dt.datetime | dt.date | str | float | int | None
_COUNTERS = ("input_tokens", "output_tokens", "total_tokens", "cache_read_tokens")


def parse_since(since: Since) -> float | None:
    """``since`` as seconds since the epoch (``None`` stays ``None``)."""
    if since is None:
        return None
    if isinstance(since, bool):
        raise UsageError(f"since must be a datetime, date, ISO string or timestamp, got {since!r}")
    if isinstance(since, int | float):
        return float(since)
    if isinstance(since, str):
        try:
            since = dt.datetime.fromisoformat(since)
        except ValueError:
            raise UsageError(f"since={since!r} is not an ISO date or datetime (e.g. '2025-01-31')") from None
    if isinstance(since, dt.datetime):
        return since.timestamp()
    if isinstance(since, dt.date):
        return dt.datetime.combine(since, dt.time()).timestamp()
    raise UsageError(f"since must be a datetime, date, ISO string or timestamp, got {type(since).__name__}")


class UsageStore:
    """``{home}/users/{user_id}/usage.jsonl``: one :class:`RunUsageRecord` per line."""

    def __init__(self, paths: Paths) -> None:
        self.paths = paths
        self._lock = threading.Lock()

    def file(self, user_id: str) -> Path:
        """The usage file of ``user_id``."""
        return self.paths.user_dir(user_id) / "usage.jsonl"

    def append(self, record: RunUsageRecord) -> None:
        """Store one record (blocking)."""
        line = (record.model_dump_json() + "\n").encode()
        target = self.file(record.user_id)
        with self._lock:
            target.parent.mkdir(parents=True, exist_ok=True)
            with open(target, "a+b") as handle:
                if handle.tell() > 0:  # after a torn write, start on a fresh line
                    handle.seek(-1, os.SEEK_END)
                    if handle.read(1) != b"\n":
                        line = b"\n" + line
                handle.write(line)

    def records(self, user_id: str, *, thread_id: str | None = None, since: float | None = None
                ) -> list[RunUsageRecord]:
        """The user's records, oldest first, optionally of one thread and from ``since`` on (blocking)."""
        try:
            lines = self.file(user_id).read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            return []
        out = []
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                record = RunUsageRecord.model_validate_json(line)
            except ValidationError:
                logger.warning("skipping unreadable usage record %s:%d", self.file(user_id), number)
                continue
            if thread_id is not None and record.thread_id != thread_id:
                continue
            if since is not None and record.finished_at < since:
                continue
            out.append(record)
        return out


def summarize(records: Iterable[RunUsageRecord], config: AppConfig | None, *, thread_id: str | None = None,
              since: float | None = None) -> dict[str, Any]:
    """Totals per model and overall, priced from ``config`` (a ``UsageSummary`` dict)."""
    by_model: dict[str, ModelUsage] = {}
    runs = 0
    for record in records:
        runs += 1
        for name, counts in record.models.items():
            bucket = by_model.setdefault(name, ModelUsage())
            bucket.runs += 1
            for key in _COUNTERS:
                setattr(bucket, key, getattr(bucket, key) + getattr(counts, key))
    priced: list[float] = []
    unpriced: list[str] = []
    for name, bucket in by_model.items():
        bucket.cost = compute_cost(bucket.model_dump(include=set(_COUNTERS)), pricing_for(config, name))
        if bucket.cost is None:
            unpriced.append(name)
        else:
            priced.append(bucket.cost)
    totals = {key: sum(getattr(b, key) for b in by_model.values()) for key in _COUNTERS}
    summary = UsageSummary(thread_id=thread_id, since=since, runs=runs, cost=sum(priced) if priced else None,
                           unpriced_models=sorted(unpriced), by_model=by_model, **totals)
    return summary.model_dump()
