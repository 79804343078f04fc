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

__all__ = ["ACTIVE_RUN_STATUSES", "APP_TABLES", "Base", "FeedbackRow", "RunEventRow", "RunRow", "ThreadMetaRow"]

#: Run statuses that hold the thread (at most one such row per thread).
ACTIVE_RUN_STATUSES = ("pending", "running")
_ACTIVE_SQL = sa.text("status IN ('pending', 'running')")

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


#: The tables alembic owns.
APP_TABLES = frozenset(Base.metadata.tables)
