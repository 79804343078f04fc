"""The bodies of ``/scheduled-tasks``: what a schedule may be (validated before anything is stored) and its answers.

Used by the gateway (embedded calls) and the HTTP handlers (422 naming the field) alike.
Cron expressions are the standard five fields (minute hour day-of-month month day-of-week,
UTC), checked by ``croniter``; intervals are seconds, from :data:`MIN_INTERVAL_SECONDS` to
:data:`MAX_INTERVAL_SECONDS`.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any, Literal

from croniter import CroniterBadDateError, croniter
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

__all__ = ["MAX_INTERVAL_SECONDS", "MIN_INTERVAL_SECONDS", "ScheduledTaskCreateRequest",
           "ScheduledTaskDeleteResponse", "ScheduledTaskListResponse", "ScheduledTaskResponse",
           "ScheduledTaskRunListResponse", "ScheduledTaskRunResponse", "check_cron", "iso", "next_tick"]

#: The shortest interval a schedule may have (seconds).
MIN_INTERVAL_SECONDS = 1.0
#: The longest interval (a year, in seconds).
MAX_INTERVAL_SECONDS = 366 * 86400.0
_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._@+-]{0,127}$"  # a thread id (deerflow_nb.config.validate_id)

ContextMode = Literal["fresh_thread_per_run", "reuse_thread"]
OccurrenceStatus = Literal["queued", "running", "success", "error", "timeout", "interrupted", "skipped"]


def check_cron(expression: str) -> str:
    """``expression`` normalised (single spaces); ``ValueError`` unless it is a valid five-field cron."""
    fields = expression.split()
    if len(fields) != 5:
        raise ValueError(f"cron must have 5 fields (minute hour day month weekday), got {len(fields)}")
    normal = " ".join(fields)
    if not croniter.is_valid(normal):
        raise ValueError(f"not a valid cron expression: {expression!r}")
    try:  # valid fields can still name no date at all (February 30th)
        croniter(normal, datetime(2000, 1, 1, tzinfo=UTC)).get_next(float)
    except CroniterBadDateError:
        raise ValueError(f"cron expression {expression!r} never matches a date") from None
    return normal


def next_tick(schedule_type: str, cron: str | None, interval: float | None, after: float,
              anchor: float | None = None) -> float:
    """The first tick strictly after ``after`` (UNIX seconds).

    A cron schedule's next matching minute; an interval's next multiple of ``interval`` from
    ``anchor`` (its previous tick; default ``after``, so the first tick is one interval away).
    However many ticks were missed, the answer is the next one: a missed tick runs once.
    """
    if schedule_type == "cron":
        assert cron is not None
        return float(croniter(cron, datetime.fromtimestamp(after, UTC)).get_next(float))
    assert interval is not None
    if anchor is None or anchor > after:
        return after + interval
    return anchor + (math.floor((after - anchor) / interval) + 1) * interval


def iso(timestamp: float | None) -> str | None:
    """UNIX seconds as an ISO 8601 UTC string (``None`` stays ``None``)."""
    return None if timestamp is None else datetime.fromtimestamp(timestamp, UTC).isoformat()


class ScheduledTaskCreateRequest(BaseModel):
    """``POST /scheduled-tasks``: a message run on a cron schedule or every ``every_seconds``."""

    model_config = ConfigDict(extra="forbid", strict=True)

    message: str = Field(min_length=1, max_length=100_000, pattern=r"\S",
                         description="What the agent is asked at every run.")
    cron: str | None = Field(default=None, max_length=256, description="Five-field cron expression (UTC).")
    every_seconds: float | None = Field(default=None, ge=MIN_INTERVAL_SECONDS, le=MAX_INTERVAL_SECONDS,
                                        description="Interval between runs, in seconds.")
    context_mode: ContextMode = Field(default="fresh_thread_per_run",
                                      description="A new thread per run, or one thread reused (thread_id).")
    thread_id: str | None = Field(default=None, pattern=_ID_PATTERN,
                                  description="The thread every run continues (reuse_thread only).")
    overlap_policy: Literal["skip"] = Field(default="skip",
                                            description="A tick while the previous run is active is skipped.")

    @field_validator("cron")
    @classmethod
    def _cron(cls, value: str | None) -> str | None:
        return None if value is None else check_cron(value)

    @field_validator("thread_id")
    @classmethod
    def _thread(cls, value: str | None) -> str | None:
        if value is not None and ".." in value:
            raise ValueError("thread_id must not contain '..'")
        return value

    @field_validator("every_seconds")
    @classmethod
    def _finite(cls, value: float | None) -> float | None:
        if value is not None and not math.isfinite(value):
            raise ValueError("every_seconds must be a finite number")
        return value

    @model_validator(mode="after")
    def _choices(self) -> ScheduledTaskCreateRequest:
        if (self.cron is None) == (self.every_seconds is None):
            raise ValueError("cron / every_seconds: give exactly one of them")
        if self.context_mode == "reuse_thread" and self.thread_id is None:
            raise ValueError("thread_id: required when context_mode is 'reuse_thread'")
        if self.context_mode == "fresh_thread_per_run" and self.thread_id is not None:
            raise ValueError("thread_id: only with context_mode 'reuse_thread' (a fresh thread is made per run)")
        return self


class ScheduledTaskResponse(BaseModel):
    """One scheduled task (timestamps ISO 8601, UTC)."""

    id: str
    message: str
    schedule_type: Literal["cron", "interval"]
    cron: str | None
    every_seconds: float | None
    context_mode: ContextMode
    thread_id: str | None
    overlap_policy: Literal["skip"]
    status: Literal["active", "paused"]
    next_run_at: str | None
    last_run_at: str | None
    last_run_id: str | None
    last_thread_id: str | None
    last_error: str | None
    run_count: int
    created_at: str
    updated_at: str

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> ScheduledTaskResponse:
        """From a ``scheduled_tasks`` row."""
        return cls(id=row["id"], message=row["message"], schedule_type=row["schedule_type"], cron=row["cron"],
                   every_seconds=row["interval_seconds"], context_mode=row["context_mode"],
                   thread_id=row["thread_id"], overlap_policy=row["overlap_policy"], status=row["status"],
                   next_run_at=iso(row["next_run_at"]), last_run_at=iso(row["last_run_at"]),
                   last_run_id=row["last_run_id"], last_thread_id=row["last_thread_id"],
                   last_error=row["last_error"], run_count=row["run_count"],
                   created_at=iso(row["created_at"]) or "", updated_at=iso(row["updated_at"]) or "")


class ScheduledTaskRunResponse(BaseModel):
    """One occurrence of a task: a run it started, or a tick it skipped."""

    id: str
    task_id: str
    trigger: Literal["scheduled", "manual"]
    status: OccurrenceStatus
    thread_id: str | None
    run_id: str | None
    scheduled_for: str | None
    error: str | None
    created_at: str
    started_at: str | None
    finished_at: str | None

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> ScheduledTaskRunResponse:
        """From a ``scheduled_task_runs`` row."""
        return cls(id=row["id"], task_id=row["task_id"], trigger=row["trigger"], status=row["status"],
                   thread_id=row["thread_id"], run_id=row["run_id"], scheduled_for=iso(row["scheduled_for"]),
                   error=row["error"], created_at=iso(row["created_at"]) or "", started_at=iso(row["started_at"]),
                   finished_at=iso(row["finished_at"]))


class ScheduledTaskListResponse(BaseModel):
    """``GET /scheduled-tasks``."""

    tasks: list[ScheduledTaskResponse]


class ScheduledTaskRunListResponse(BaseModel):
    """``GET /scheduled-tasks/{id}/runs``: newest first."""

    runs: list[ScheduledTaskRunResponse]


class ScheduledTaskDeleteResponse(BaseModel):
    """``DELETE /scheduled-tasks/{id}``."""

    success: bool
    id: str
