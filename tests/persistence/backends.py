"""Database targets for the backend-parametrised tests (SQLite always; PostgreSQL when available).

PostgreSQL comes from ``DEERFLOW_TEST_POSTGRES_URL`` (``.ci/server-setup.sh`` prints it). Each
test gets a fresh database, created and dropped around it, so bootstrap tests start empty.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import sqlalchemy as sa

from deerflow_nb.persistence import DatabaseTarget, resolve_database

POSTGRES_ENV = "DEERFLOW_TEST_POSTGRES_URL"
BACKENDS = ["sqlite", "postgres"]
# read at import (collection) time: a test elsewhere that rewrites os.environ must not hide the server
_POSTGRES_URL = os.environ.get(POSTGRES_ENV)


def _admin_dsn(url: str) -> str:
    return sa.make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


async def _admin(url: str, sql: str) -> None:
    import asyncpg

    conn = await asyncpg.connect(_admin_dsn(url), timeout=5)
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


def postgres_url_or_skip() -> str:
    """The server's URL, or a loud skip saying why PostgreSQL tests do not run."""
    url = os.environ.get(POSTGRES_ENV) or _POSTGRES_URL
    if not url:
        pytest.skip(f"PostgreSQL tests skipped: {POSTGRES_ENV} is not set (run .ci/server-setup.sh)")
    try:
        asyncio.run(_admin(url, "SELECT 1"))
    except Exception as exc:  # any failure means the server is unavailable
        pytest.skip(f"PostgreSQL tests skipped: server at {POSTGRES_ENV} unavailable ({exc})")
    return url


@contextmanager
def database_target(backend: str, tmp_path: Path) -> Iterator[DatabaseTarget]:
    """A fresh, empty database of ``backend``."""
    if backend == "sqlite":
        yield resolve_database("sqlite", None, tmp_path / "db" / "deerflow.db", tmp_path)
        return
    url = postgres_url_or_skip()
    name = f"deerflow_t_{uuid.uuid4().hex[:12]}"
    asyncio.run(_admin(url, f'CREATE DATABASE "{name}"'))
    try:
        yield resolve_database("postgres", sa.make_url(url).set(database=name).render_as_string(
            hide_password=False), None, tmp_path)
    finally:
        asyncio.run(_drop_database(url, name))


async def _drop_database(url: str, name: str, attempts: int = 60) -> None:
    """``DROP DATABASE ... WITH (FORCE)``, retried while an autovacuum worker is on it.

    FORCE terminates other sessions, but refuses (InsufficientPrivilegeError) to end a process
    of a role we are not a member of, and an autovacuum worker that happens to be vacuuming
    the fresh database is one; it finishes within moments.
    """
    import asyncpg

    for attempt in range(attempts):
        try:
            await _admin(url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            return
        except (asyncpg.exceptions.InsufficientPrivilegeError, asyncpg.exceptions.ObjectInUseError):
            if attempt == attempts - 1:
                raise
            await asyncio.sleep(0.5)
