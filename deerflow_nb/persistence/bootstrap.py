"""Hybrid schema bootstrap: alembic owns the app tables, ``create_all`` builds a fresh database.

| database state                               | action                                          |
|----------------------------------------------|-------------------------------------------------|
| empty (no DeerFlow tables)                   | ``create_all`` + ``alembic stamp head``         |
| legacy (DeerFlow tables, no alembic_version) | baseline ``create_all`` + stamp ``0001_baseline`` + ``upgrade head`` |
| versioned (``alembic_version`` exists)       | ``alembic upgrade head``                        |

Concurrent starts are serialised: PostgreSQL by an advisory lock, SQLite by a
process-wide lock plus SQLite's own write lock.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from deerflow_nb.persistence.models import APP_TABLES, Base

if TYPE_CHECKING:
    from deerflow_nb.persistence.engine import Database

__all__ = ["BASELINE_REVISION", "BASELINE_TABLES", "HEAD_REVISION", "alembic_config", "bootstrap_schema"]

logger = logging.getLogger(__name__)

BASELINE_REVISION = "0001_baseline"
#: The newest revision (``alembic stamp head`` of a fresh database).
HEAD_REVISION = "0005_schedule_timezone"
#: Tables created by ``0001_baseline``; the legacy path back-fills only these.
BASELINE_TABLES = ("threads_meta", "runs", "run_events", "feedback")
_ADVISORY_KEY = 0x6465657266  # "deerf"
# PostgreSQL: one lock per event loop (an asyncio.Lock is bound to the loop that first waits on
# it); SQLite: one lock for the process, taken on the database threads (clients have their own loops)
_LOCKS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = weakref.WeakKeyDictionary()
_SQLITE_LOCK = threading.Lock()
MIGRATIONS_DIR = Path(__file__).with_name("migrations")


def alembic_config(connection: sa.Connection) -> Any:
    """An in-memory alembic ``Config`` bound to ``connection`` (no alembic.ini needed)."""
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.attributes["connection"] = connection
    return config


def _bootstrap_sync(connection: sa.Connection) -> str:
    from alembic import command

    tables = set(sa.inspect(connection).get_table_names())
    config = alembic_config(connection)
    if "alembic_version" in tables:
        command.upgrade(config, "head")
        return "upgraded"
    if tables & APP_TABLES:
        baseline = [Base.metadata.tables[name] for name in BASELINE_TABLES]
        Base.metadata.create_all(connection, tables=baseline)
        command.stamp(config, BASELINE_REVISION)
        command.upgrade(config, "head")
        return "legacy"
    Base.metadata.create_all(connection)
    command.stamp(config, "head")
    return "created"


def _bootstrap_sqlite(connection: sa.Connection) -> str:
    with _SQLITE_LOCK:
        outcome = _bootstrap_sync(connection)
        # commit inside the lock: a concurrent start must read the schema this one wrote, not the
        # empty database it saw before (it would stamp alembic_version a second time)
        connection.commit()
        return outcome


def _bootstrap_postgres(connection: sa.Connection) -> str:
    connection.execute(sa.text("SELECT pg_advisory_xact_lock(:key)"), {"key": _ADVISORY_KEY})
    return _bootstrap_sync(connection)


async def bootstrap_schema(db: Database) -> str:
    """Bring the app tables to the head revision; returns ``created``, ``legacy`` or ``upgraded``."""
    if db.backend == "postgres":
        lock = _LOCKS.setdefault(asyncio.get_running_loop(), asyncio.Lock())
        async with lock:
            outcome = await db.write(_bootstrap_postgres)
    else:
        outcome = await db.write(_bootstrap_sqlite)
    logger.debug("database schema %s (%s)", outcome, db.backend)
    return outcome
