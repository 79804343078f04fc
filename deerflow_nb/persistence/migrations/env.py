"""Alembic environment: runs on the connection handed over by ``bootstrap_schema``."""

from __future__ import annotations

from typing import Any

from alembic import context

from deerflow_nb.persistence.models import APP_TABLES, Base


def include_object(obj: Any, name: str | None, type_: str, reflected: bool, compare_to: Any) -> bool:
    """Hide LangGraph's checkpointer tables (and anything else not ours) from alembic."""
    if type_ == "table":
        return name in APP_TABLES
    table = getattr(obj, "table", None)
    return table is None or table.name in APP_TABLES


def _run() -> None:
    connection = context.config.attributes.get("connection")
    if connection is None:
        raise RuntimeError("deerflow migrations run through deerflow_nb.persistence.bootstrap only")
    context.configure(connection=connection, target_metadata=Base.metadata, include_object=include_object,
                      render_as_batch=connection.dialect.name == "sqlite")
    with context.begin_transaction():
        context.run_migrations()


_run()
