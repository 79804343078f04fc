"""Persistence: thread metadata and LangGraph checkpoints (SQLite by default)."""

from deerflow_nb.persistence.store import Store, ThreadRecord, open_store

__all__ = ["Store", "ThreadRecord", "open_store"]
