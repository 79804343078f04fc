"""Scheduled runs: ``scheduled_tasks`` and ``scheduled_task_runs`` (with ``uq_scheduled_task_run_active``).

Revision ID: 0004_scheduled_tasks
Revises: 0003_run_cancel_requests

The partial unique index admits at most one ``queued`` / ``running`` occurrence per task: it
is the arbiter between concurrent dispatches (a manual trigger racing the scheduler, two
servers on one database). Both tables are new, so no active duplicates can predate the index.
Idempotent like ``0002``: a table that exists already is left as it is.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004_scheduled_tasks"
down_revision = "0003_run_cancel_requests"
branch_labels = None
depends_on = None

_ACTIVE = sa.text("status IN ('queued', 'running')")


def _tables() -> set[str]:
    return set(sa.inspect(op.get_bind()).get_table_names())


def upgrade() -> None:
    """Create both tables and their indexes."""
    tables = _tables()
    if "scheduled_tasks" not in tables:
        op.create_table(
            "scheduled_tasks",
            sa.Column("id", sa.String(64), primary_key=True),
            sa.Column("user_id", sa.String(128), nullable=False),
            sa.Column("message", sa.Text(), nullable=False),
            sa.Column("schedule_type", sa.String(16), nullable=False),
            sa.Column("cron", sa.String(256), nullable=True),
            sa.Column("interval_seconds", sa.Float(), nullable=True),
            sa.Column("context_mode", sa.String(32), nullable=False),
            sa.Column("thread_id", sa.String(128), nullable=True),
            sa.Column("overlap_policy", sa.String(16), nullable=False),
            sa.Column("status", sa.String(16), nullable=False),
            sa.Column("next_run_at", sa.Float(), nullable=True),
            sa.Column("last_run_at", sa.Float(), nullable=True),
            sa.Column("last_run_id", sa.String(64), nullable=True),
            sa.Column("last_thread_id", sa.String(128), nullable=True),
            sa.Column("last_error", sa.Text(), nullable=True),
            sa.Column("run_count", sa.Integer(), nullable=False),
            sa.Column("created_at", sa.Float(), nullable=False),
            sa.Column("updated_at", sa.Float(), nullable=False),
        )
        op.create_index("ix_scheduled_tasks_user_id", "scheduled_tasks", ["user_id"])
        op.create_index("ix_scheduled_tasks_due", "scheduled_tasks", ["status", "next_run_at"])
    if "scheduled_task_runs" not in tables:
        op.create_table(
            "scheduled_task_runs",
            sa.Column("id", sa.String(64), primary_key=True),
            sa.Column("task_id", sa.String(64), nullable=False),
            sa.Column("user_id", sa.String(128), nullable=False),
            sa.Column("thread_id", sa.String(128), nullable=True),
            sa.Column("run_id", sa.String(64), nullable=True),
            sa.Column("trigger", sa.String(16), nullable=False),
            sa.Column("status", sa.String(16), nullable=False),
            sa.Column("scheduled_for", sa.Float(), nullable=True),
            sa.Column("error", sa.Text(), nullable=True),
            sa.Column("created_at", sa.Float(), nullable=False),
            sa.Column("started_at", sa.Float(), nullable=True),
            sa.Column("finished_at", sa.Float(), nullable=True),
        )
        op.create_index("ix_scheduled_task_runs_task_id", "scheduled_task_runs", ["task_id"])
        op.create_index("ix_scheduled_task_runs_task_created", "scheduled_task_runs", ["task_id", "created_at"])
        op.create_index("uq_scheduled_task_run_active", "scheduled_task_runs", ["task_id"], unique=True,
                        sqlite_where=_ACTIVE, postgresql_where=_ACTIVE)


def downgrade() -> None:
    """Drop both tables (their indexes go with them)."""
    tables = _tables()
    for name in ("scheduled_task_runs", "scheduled_tasks"):
        if name in tables:
            op.drop_table(name)
