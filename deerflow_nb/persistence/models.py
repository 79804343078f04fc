"""SQLAlchemy 2 ORM models of DeerFlow's application tables.

LangGraph's checkpointer tables live in the same database but belong to LangGraph;
alembic never sees them (see ``migrations/env.py``). Timestamps are UNIX seconds
(floats) so ordering works the same on SQLite and PostgreSQL.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

__all__ = ["ACTIVE_RUN_STATUSES", "ACTIVE_SCHEDULED_RUN_STATUSES", "APP_TABLES", "Base", "FeedbackRow",
           "RunEventRow", "RunRow", "ScheduledTaskRow", "ScheduledTaskRunRow", "ThreadMetaRow"]

#: Run statuses that hold the thread (at most one such row per thread).
ACTIVE_RUN_STATUSES = ("pending", "running")
_ACTIVE_SQL = sa.text("status IN ('pending', 'running')")
#: Scheduled-task occurrence statuses that hold the task's single active slot.
ACTIVE_SCHEDULED_RUN_STATUSES = ("queued", "running")
_ACTIVE_SCHEDULED_SQL = sa.text("status IN ('queued', 'running')")

JsonType = sa.JSON().with_variant(JSONB(), "postgresql")


class Base(DeclarativeBase):
    """Declarative base of the app tables (``Base.metadata`` is alembic's target)."""


class ThreadMetaRow(Base):
    """``threads_meta``: who owns a thread, its title and status."""

    __tablename__ = "threads_meta"

    thread_id: Mapped[str] = mapped_column(sa.String(128), primary_key=True)
    user_id: Mapped[str] = mapped_column(sa.String(128), index=True)
    assistant_id: Mapped[str] = mapped_column(sa.String(128), default="lead_agent")
    title: Mapped[str | None] = mapped_column(sa.Text, nullable=True)
    status: Mapped[str] = mapped_column(sa.String(16), default="idle")
    metadata_: Mapped[dict[str, Any]] = mapped_column("metadata", JsonType, default=dict)
    created_at: Mapped[float] = mapped_column(sa.Float)
    updated_at: Mapped[float] = mapped_column(sa.Float)

    __table_args__ = (sa.Index("ix_threads_meta_user_updated", "user_id", "updated_at"),)


class RunRow(Base):
    """``runs``: one row per run; the partial unique index admits one active run per thread."""

    __tablename__ = "runs"

    run_id: Mapped[str] = mapped_column(sa.String(64), primary_key=True)
    thread_id: Mapped[str] = mapped_column(sa.String(128), index=True)
    user_id: Mapped[str] = mapped_column(sa.String(128), index=True)
    assistant_id: Mapped[str] = mapped_column(sa.String(128), default="lead_agent")
    status: Mapped[str] = mapped_column(sa.String(16), default="pending")
    multitask_strategy: Mapped[str] = mapped_column(sa.String(16), default="reject")
    metadata_: Mapped[dict[str, Any]] = mapped_column("metadata", JsonType, default=dict)
    kwargs: Mapped[dict[str, Any]] = mapped_column(JsonType, default=dict)
    error: Mapped[dict[str, Any] | None] = mapped_column(JsonType, nullable=True)
    stop_reason: Mapped[str | None] = mapped_column(sa.String(64), nullable=True)
    usage: Mapped[dict[str, Any] | None] = mapped_column(JsonType, nullable=True)
    owner: Mapped[str | None] = mapped_column(sa.String(128), nullable=True)
    created_at: Mapped[float] = mapped_column(sa.Float)
    updated_at: Mapped[float] = mapped_column(sa.Float)
    #: Until when (UNIX seconds, the database's clock) the owner holds the run; its process
    #: renews it while the run executes, and an expired lease marks an orphan (0002_run_leases).
    lease_expires_at: Mapped[float | None] = mapped_column(sa.Float, nullable=True)
    #: ``interrupt`` or ``rollback``, asked by a process that does not execute the run; the
    #: owner's lease renewal reads it and cancels the run (0003_run_cancel_requests).
    cancel_requested: Mapped[str | None] = mapped_column(sa.String(16), nullable=True)

    __table_args__ = (
        sa.Index("uq_runs_thread_active", "thread_id", unique=True,
                 sqlite_where=_ACTIVE_SQL, postgresql_where=_ACTIVE_SQL),
        sa.Index("ix_runs_thread_created", "thread_id", "created_at"),
    )


class RunEventRow(Base):
    """``run_events``: the run journal (messages, tool calls, custom events, human input, changes)."""

    __tablename__ = "run_events"

    id: Mapped[int] = mapped_column(sa.BigInteger().with_variant(sa.Integer, "sqlite"), primary_key=True,
                                    autoincrement=True)
    run_id: Mapped[str] = mapped_column(sa.String(64), index=True)
    thread_id: Mapped[str] = mapped_column(sa.String(128), index=True)
    user_id: Mapped[str] = mapped_column(sa.String(128))
    seq: Mapped[int] = mapped_column(sa.Integer)
    event_type: Mapped[str] = mapped_column(sa.String(32))
    category: Mapped[str] = mapped_column(sa.String(16))
    payload: Mapped[dict[str, Any]] = mapped_column(JsonType, default=dict)
    created_at: Mapped[float] = mapped_column(sa.Float)

    __table_args__ = (sa.UniqueConstraint("run_id", "seq", name="uq_run_events_run_seq"),)


class FeedbackRow(Base):
    """``feedback``: a user's rating of a run."""

    __tablename__ = "feedback"

    feedback_id: Mapped[str] = mapped_column(sa.String(64), primary_key=True)
    run_id: Mapped[str] = mapped_column(sa.String(64), index=True)
    thread_id: Mapped[str] = mapped_column(sa.String(128))
    user_id: Mapped[str] = mapped_column(sa.String(128))
    rating: Mapped[int] = mapped_column(sa.Integer)
    comment: Mapped[str | None] = mapped_column(sa.Text, nullable=True)
    created_at: Mapped[float] = mapped_column(sa.Float)


class ScheduledTaskRow(Base):
    """``scheduled_tasks``: a user's schedule (cron or interval), its thread choice and bookkeeping."""

    __tablename__ = "scheduled_tasks"

    id: Mapped[str] = mapped_column(sa.String(64), primary_key=True)
    user_id: Mapped[str] = mapped_column(sa.String(128), index=True)
    message: Mapped[str] = mapped_column(sa.Text)
    #: ``cron`` or ``interval``.
    schedule_type: Mapped[str] = mapped_column(sa.String(16))
    cron: Mapped[str | None] = mapped_column(sa.String(256), nullable=True)
    #: The IANA zone ``cron`` is read in (``0005_schedule_timezone``); ``NULL`` is UTC (rows stored
    #: before time zones existed, and interval tasks, which have none).
    timezone: Mapped[str | None] = mapped_column(sa.String(64), nullable=True)
    interval_seconds: Mapped[float | None] = mapped_column(sa.Float, nullable=True)
    #: ``fresh_thread_per_run`` or ``reuse_thread`` (then ``thread_id``).
    context_mode: Mapped[str] = mapped_column(sa.String(32), default="fresh_thread_per_run")
    thread_id: Mapped[str | None] = mapped_column(sa.String(128), nullable=True)
    overlap_policy: Mapped[str] = mapped_column(sa.String(16), default="skip")
    #: ``active`` or ``paused``.
    status: Mapped[str] = mapped_column(sa.String(16), default="active")
    #: The next tick (UNIX seconds); claimed by compare-and-set, so one server dispatches it.
    next_run_at: Mapped[float | None] = mapped_column(sa.Float, nullable=True)
    last_run_at: Mapped[float | None] = mapped_column(sa.Float, nullable=True)
    last_run_id: Mapped[str | None] = mapped_column(sa.String(64), nullable=True)
    last_thread_id: Mapped[str | None] = mapped_column(sa.String(128), nullable=True)
    last_error: Mapped[str | None] = mapped_column(sa.Text, nullable=True)
    run_count: Mapped[int] = mapped_column(sa.Integer, default=0)
    created_at: Mapped[float] = mapped_column(sa.Float)
    updated_at: Mapped[float] = mapped_column(sa.Float)

    __table_args__ = (sa.Index("ix_scheduled_tasks_due", "status", "next_run_at"),)


class ScheduledTaskRunRow(Base):
    """``scheduled_task_runs``: one occurrence of a task; ``uq_scheduled_task_run_active`` admits one active."""

    __tablename__ = "scheduled_task_runs"

    id: Mapped[str] = mapped_column(sa.String(64), primary_key=True)
    task_id: Mapped[str] = mapped_column(sa.String(64), index=True)
    user_id: Mapped[str] = mapped_column(sa.String(128))
    thread_id: Mapped[str | None] = mapped_column(sa.String(128), nullable=True)
    run_id: Mapped[str | None] = mapped_column(sa.String(64), nullable=True)
    #: ``scheduled`` or ``manual``.
    trigger: Mapped[str] = mapped_column(sa.String(16))
    #: ``queued``, ``running``, then a run's terminal status, or ``skipped`` (created terminal).
    status: Mapped[str] = mapped_column(sa.String(16))
    scheduled_for: Mapped[float | None] = mapped_column(sa.Float, nullable=True)
    error: Mapped[str | None] = mapped_column(sa.Text, nullable=True)
    created_at: Mapped[float] = mapped_column(sa.Float)
    started_at: Mapped[float | None] = mapped_column(sa.Float, nullable=True)
    finished_at: Mapped[float | None] = mapped_column(sa.Float, nullable=True)

    __table_args__ = (
        sa.Index("uq_scheduled_task_run_active", "task_id", unique=True,
                 sqlite_where=_ACTIVE_SCHEDULED_SQL, postgresql_where=_ACTIVE_SCHEDULED_SQL),
        sa.Index("ix_scheduled_task_runs_task_created", "task_id", "created_at"),
    )


#: The tables alembic owns.
APP_TABLES = frozenset(Base.metadata.tables)
