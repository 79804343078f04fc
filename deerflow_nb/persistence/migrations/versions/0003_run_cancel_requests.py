"""Cross-process cancel requests: ``runs.cancel_requested`` (the action another process asked for).

Revision ID: 0003_run_cancel_requests
Revises: 0002_run_leases

A server that does not execute a run records ``interrupt`` or ``rollback`` here; the
owner's lease-renewal loop reads it and cancels the run. Idempotent like ``0002``.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003_run_cancel_requests"
down_revision = "0002_run_leases"
branch_labels = None
depends_on = None


def _columns() -> set[str]:
    return {c["name"] for c in sa.inspect(op.get_bind()).get_columns("runs")}


def upgrade() -> None:
    """Add ``runs.cancel_requested`` (nullable: no request)."""
    if "cancel_requested" not in _columns():
        op.add_column("runs", sa.Column("cancel_requested", sa.String(16), nullable=True))


def downgrade() -> None:
    """Drop ``runs.cancel_requested``."""
    if "cancel_requested" in _columns():
        with op.batch_alter_table("runs") as batch:
            batch.drop_column("cancel_requested")
