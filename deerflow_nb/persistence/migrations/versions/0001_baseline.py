"""Baseline: threads_meta, runs (one active run per thread), run_events, feedback.

Revision ID: 0001_baseline
Revises:
"""

from __future__ import annotations

from alembic import op

from deerflow_nb.persistence.bootstrap import BASELINE_TABLES
from deerflow_nb.persistence.models import Base

revision = "0001_baseline"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Create the baseline tables (a fresh database normally takes the create_all + stamp path)."""
    Base.metadata.create_all(op.get_bind(), tables=[Base.metadata.tables[n] for n in BASELINE_TABLES])


def downgrade() -> None:
    """Drop the baseline tables."""
    for name in reversed(BASELINE_TABLES):
        op.drop_table(name)
