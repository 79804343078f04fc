"""Hot statements on SQLite without SQLAlchemy's per-execution machinery.

A run costs two app-table transactions (admission, outcome). Through SQLAlchemy each
statement pays ~0.3 ms of Python (execution context, bind processing, result setup) on
the database thread, which competes with the agent for the GIL. :class:`SqliteStatement`
compiles a Core statement once for SQLite and runs it on the transaction's own driver
connection, so it commits (or rolls back) with everything else in the transaction.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Mapping
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import sqlite

__all__ = ["SqliteStatement", "driver_connection", "insert_statement"]

_DIALECT = sqlite.dialect(paramstyle="qmark")


def driver_connection(conn: sa.Connection) -> sqlite3.Connection | None:
    """The raw ``sqlite3`` connection behind ``conn`` (``None`` on other databases)."""
    if conn.dialect.name != "sqlite":
        return None
    raw = conn.connection.dbapi_connection
    return raw if isinstance(raw, sqlite3.Connection) else None


class SqliteStatement:
    """A Core statement compiled once for SQLite; ``json_columns`` are serialised like ``sa.JSON``."""

    def __init__(self, statement: sa.Executable, json_columns: Iterable[str] = ()) -> None:
        compiled = statement.compile(dialect=_DIALECT)  # type: ignore[attr-defined]
        self.sql = str(compiled)
        self.order: tuple[str, ...] = tuple(compiled.positiontup or ())
        self.json = frozenset(json_columns)

    def params(self, values: Mapping[str, Any]) -> tuple[Any, ...]:
        """Positional parameters in the compiled order."""
        return tuple(json.dumps(values[name]) if name in self.json else values[name] for name in self.order)

    def execute(self, raw: sqlite3.Connection, values: Mapping[str, Any]) -> sqlite3.Cursor:
        """Run once with ``values``."""
        return raw.execute(self.sql, self.params(values))

    def executemany(self, raw: sqlite3.Connection, rows: Iterable[Mapping[str, Any]]) -> None:
        """Run once per row."""
        raw.executemany(self.sql, [self.params(row) for row in rows])


def insert_statement(table: sa.Table, json_columns: Iterable[str] = ()) -> SqliteStatement:
    """``INSERT`` of every column but an autoincrement primary key."""
    columns = [c.name for c in table.columns if not (c.primary_key and c.autoincrement is True)]
    return SqliteStatement(sa.insert(table).values({name: sa.bindparam(name) for name in columns}), json_columns)
