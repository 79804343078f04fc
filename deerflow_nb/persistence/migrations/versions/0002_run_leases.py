"""Run leases: ``runs.lease_expires_at`` (UNIX seconds on the database's clock).

Revision ID: 0002_run_leases
Revises: 0001_baseline

Idempotent: a legacy database is back-filled with today's ``runs`` table (the column included)
before it is stamped ``0001_baseline`` and upgraded, so the column may exist already.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002_run_leases"
down_revision = "0001_baseline"
branch_labels = None
depends_on = None


def _columns() -> set[str]:
    return {c["name"] for c in sa.inspect(op.get_bind()).get_columns("runs")}


def upgrade() -> None:
    """Add ``runs.lease_expires_at`` (nullable: runs admitted before leases have none)."""
    if "lease_expires_at" not in _columns():
        op.add_column("runs", sa.Column("lease_expires_at", sa.Float(), nullable=True))


def downgrade() -> None:
    """Drop ``runs.lease_expires_at``."""
    if "lease_expires_at" in _columns():
        with op.batch_alter_table("runs") as batch:
            batch.drop_column("lease_expires_at")
