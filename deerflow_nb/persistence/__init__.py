"""Persistence: app tables (SQLAlchemy Core + alembic) and the LangGraph checkpointer."""

from deerflow_nb.persistence.engine import (
    Database,
    DatabaseTarget,
    DbWorker,
    open_checkpointer,
    open_database,
    resolve_database,
)
from deerflow_nb.persistence.events import FeedbackStore, JournalEntry, RunEventStore
from deerflow_nb.persistence.runs import RunInfo, RunStore
from deerflow_nb.persistence.store import Store, open_store
from deerflow_nb.persistence.threads import ThreadRecord, ThreadStore

__all__ = [
    "Database",
    "DatabaseTarget",
    "DbWorker",
    "FeedbackStore",
    "JournalEntry",
    "RunEventStore",
    "RunInfo",
    "RunStore",
    "Store",
    "ThreadRecord",
    "ThreadStore",
    "open_checkpointer",
    "open_database",
    "open_store",
    "resolve_database",
]
