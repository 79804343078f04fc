"""The bodies of ``/scheduled-tasks``: what a schedule may be (validated before anything is stored) and its answers.

Used by the gateway (embedded calls) and the HTTP handlers (422 naming the field) alike.
Cron expressions are the standard five fields (minute hour day-of-month month day-of-week),
checked by ``croniter`` and read in the task's IANA ``timezone`` (default ``UTC``, daylight saving
time included: see :func:`next_tick`); intervals are seconds, from :data:`MIN_INTERVAL_SECONDS` to
:data:`MAX_INTERVAL_SECONDS`, and take no time zone.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, tzinfo
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import CroniterBadDateError, croniter
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

__all__ = ["DEFAULT_TIMEZONE", "MAX_INTERVAL_SECONDS", "MAX_TIMEZONE_LENGTH", "MIN_INTERVAL_SECONDS",
           "ScheduledTaskCreateRequest", "ScheduledTaskDeleteResponse", "ScheduledTaskListResponse",
           "ScheduledTaskResponse", "ScheduledTaskRunListResponse", "ScheduledTaskRunResponse", "check_cron",
           "check_timezone", "iso", "next_tick", "task_timezone"]

#: The shortest interval a schedule may have (seconds).
MIN_INTERVAL_SECONDS = 1.0
#: The longest interval (a year, in seconds).
MAX_INTERVAL_SECONDS = 366 * 86400.0
#: The zone of a cron task created without one (and of rows stored before time zones existed).
DEFAULT_TIMEZONE = "UTC"
#: The longest ``timezone`` accepted (the column is ``String(64)``; IANA names are at most 32 characters).
MAX_TIMEZONE_LENGTH = 64
#: Names a ``ZoneInfo`` may load that are no IANA zone: they mean whatever the server's machine is set to.
_NOT_ZONES = frozenset({"localtime", "posixrules"})
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


def _zone(name: str | None) -> tzinfo:
    """The ``tzinfo`` of a zone name; ``UTC`` (or ``None``) needs no time zone database."""
    if name is None or name == DEFAULT_TIMEZONE:
        return UTC
    return ZoneInfo(name)


def check_timezone(name: str) -> str:
    """``name``; ``ValueError`` unless it is an IANA time zone this machine knows (``Europe/Paris``, ``UTC``)."""
    if len(name) > MAX_TIMEZONE_LENGTH:
        raise ValueError(f"at most {MAX_TIMEZONE_LENGTH} characters")
    unknown = ValueError(f"unknown IANA time zone {name!r} (e.g. 'Europe/Paris', 'UTC')")
    if name in _NOT_ZONES:
        raise unknown
    try:
        _zone(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):  # unknown, not a normalised key, a folder
        raise unknown from None
    return name


def task_timezone(row: dict[str, Any]) -> str | None:
    """The zone a task's cron expression is read in (``UTC`` for a row stored without one); ``None`` for an interval."""
    if row["schedule_type"] != "cron":
        return None
    return row.get("timezone") or DEFAULT_TIMEZONE


def next_tick(schedule_type: str, cron: str | None, interval: float | None, after: float,
              anchor: float | None = None, timezone: str | None = None) -> float:
    """The first tick strictly after ``after`` (UNIX seconds).

    A cron schedule's next matching minute, read on the wall clock of ``timezone`` (an IANA
    name; ``None``: UTC); an interval's next multiple of ``interval`` from ``anchor`` (its
    previous tick; default ``after``, so the first tick is one interval away) whatever the zone.
    However many ticks were missed, the answer is the next one: a missed tick runs once.

    Daylight saving time is ``croniter``'s (pinned by the tests): a time the clocks skip (02:30
    on a spring-forward night in Europe) ticks once, at the first minute after the gap (03:00);
    a time they repeat (02:30 on a fall-back night) ticks twice, once per occurrence.
    """
    if schedule_type == "cron":
        assert cron is not None
        times = croniter(cron, datetime.fromtimestamp(after, _zone(timezone)))
        for _ in range(3):  # never a tick at or before ``after``: it would be due again at once
            following = float(times.get_next(float))
            if following > after:
                return following
        raise ValueError(f"cron {cron!r} in {timezone or DEFAULT_TIMEZONE}: no tick after {iso(after)}")
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
    cron: str | None = Field(default=None, max_length=256,
                             description="Five-field cron expression, read in `timezone` (default UTC).")
    every_seconds: float | None = Field(default=None, ge=MIN_INTERVAL_SECONDS, le=MAX_INTERVAL_SECONDS,
                                        description="Interval between runs, in seconds.")
    timezone: str | None = Field(default=None, min_length=1, max_length=MAX_TIMEZONE_LENGTH,
                                 description="IANA time zone the cron expression is read in, daylight saving "
                                             "time included (e.g. 'Europe/Paris'); default 'UTC'. Cron only: "
                                             "refused with every_seconds (an interval does not depend on a zone).")
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

    @field_validator("timezone")
    @classmethod
    def _timezone(cls, value: str | None) -> str | None:
        return None if value is None else check_timezone(value)

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
        if self.every_seconds is not None and self.timezone is not None:
            raise ValueError("timezone: only for a cron schedule (an interval does not depend on a time zone)")
        if self.context_mode == "reuse_thread" and self.thread_id is None:
            raise ValueError("thread_id: required when context_mode is 'reuse_thread'")
        if self.context_mode == "fresh_thread_per_run" and self.thread_id is not None:
            raise ValueError("thread_id: only with context_mode 'reuse_thread' (a fresh thread is made per run)")
        return self


class ScheduledTaskResponse(BaseModel):
    """One scheduled task (timestamps ISO 8601, UTC; ``timezone`` is the zone ``cron`` is read in)."""

    id: str
    message: str
    schedule_type: Literal["cron", "interval"]
    cron: str | None
    timezone: str | None = Field(description="The IANA zone of a cron task ('UTC' unless one was given); "
                                             "null for an interval task.")
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
                   timezone=task_timezone(row), every_seconds=row["interval_seconds"], context_mode=row["context_mode"],
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
