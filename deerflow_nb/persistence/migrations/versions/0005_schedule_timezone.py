"""Time zones of scheduled tasks: ``scheduled_tasks.timezone`` (an IANA name; ``NULL`` is UTC).

Revision ID: 0005_schedule_timezone
Revises: 0004_scheduled_tasks

A cron expression is read on the wall clock of its task's zone (daylight saving time included).
Rows stored before this revision keep ``NULL``: they were UTC and stay UTC, and their
``next_run_at`` needs no recomputation. Idempotent like ``0002``: an existing column is left as it is.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005_schedule_timezone"
down_revision = "0004_scheduled_tasks"
branch_labels = None
depends_on = None


def _columns() -> set[str]:
    return {c["name"] for c in sa.inspect(op.get_bind()).get_columns("scheduled_tasks")}


def upgrade() -> None:
    """Add ``scheduled_tasks.timezone`` (nullable: UTC)."""
    if "timezone" not in _columns():
        op.add_column("scheduled_tasks", sa.Column("timezone", sa.String(64), nullable=True))


def downgrade() -> None:
    """Drop ``scheduled_tasks.timezone`` (tasks in another zone are then read in UTC)."""
    if "timezone" in _columns():
        with op.batch_alter_table("scheduled_tasks") as batch:
            batch.drop_column("timezone")
