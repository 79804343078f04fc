"""Open the application database and the LangGraph checkpointer.

``database.backend`` picks the backend: ``sqlite`` (default, ``{home}/deerflow.db``),
``postgres`` (``database.url``, ``postgresql+asyncpg://...``) or ``memory`` (SQLite in
memory plus LangGraph's in-memory saver, for throwaway work). A ``database.url`` starting
with ``postgresql`` selects PostgreSQL whatever the backend says.

Stores hand :meth:`Database.read` / :meth:`Database.write` a plain function of a
SQLAlchemy ``Connection``. On SQLite that function runs on the store's one database
thread (:class:`~deerflow_nb.persistence.dbthread.DbWorker`), which also serves the checkpointer: one thread hop per
transaction instead of one per driver call, and writes that never wait on each other's
file lock. On PostgreSQL it runs through the async engine (``run_sync``).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import sqlalchemy as sa
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlalchemy.pool import StaticPool

from deerflow_nb.errors import ConfigError
from deerflow_nb.persistence.dbthread import DbWorker, sqlite_wal

__all__ = [
    "Database", "DatabaseTarget", "DbWorker", "open_checkpointer", "open_database", "resolve_database", "sqlite_wal",
]

T = TypeVar("T")
logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class DatabaseTarget:
    """Where the data lives: ``backend`` is ``sqlite``, ``postgres`` or ``memory``."""

    backend: str
    url: str  # SQLAlchemy URL: ``sqlite:///...`` (pysqlite) or ``postgresql+asyncpg://...``
    sqlite_path: Path | None = None

    @property
    def libpq_url(self) -> str:
        """The URL in libpq form (``postgresql://...``) for psycopg / the Postgres checkpointer."""
        return sa.make_url(self.url).set(drivername="postgresql").render_as_string(hide_password=False)


def resolve_database(backend: str, url: str | None, sqlite_path: str | Path | None, home: Path) -> DatabaseTarget:
    """Turn ``database:`` config values into a :class:`DatabaseTarget` (``database.url`` names its field)."""
    if url and url.startswith(("postgresql", "postgres:")):
        parsed = sa.make_url(url.replace("postgres://", "postgresql://", 1))
        if parsed.drivername in {"postgresql", "postgresql+psycopg", "postgresql+psycopg2"}:
            parsed = parsed.set(drivername="postgresql+asyncpg")
        return DatabaseTarget("postgres", parsed.render_as_string(hide_password=False))
    if backend == "postgres":
        raise ConfigError("database.backend is 'postgres' but database.url is not a postgresql:// URL",
                          key="database.url")
    if backend == "memory":
        return DatabaseTarget("memory", "sqlite://")
    if url and not url.startswith("sqlite"):
        raise ConfigError(f"database.url {url!r} is neither sqlite nor postgresql", key="database.url")
    if url:
        path = sa.make_url(url).database
        db = Path(path).expanduser() if path else home / "deerflow.db"
    else:
        db = Path(sqlite_path).expanduser() if sqlite_path else home / "deerflow.db"
    return DatabaseTarget("sqlite", f"sqlite:///{db}", sqlite_path=db)


class Database:
    """The application tables of one database. Open with :func:`open_database`."""

    def __init__(self, target: DatabaseTarget, *, engine: sa.Engine | None = None,
                 async_engine: AsyncEngine | None = None, worker: DbWorker | None = None) -> None:
        if (engine is None) == (async_engine is None) or (engine is not None and worker is None):
            raise ValueError("a Database needs a sync engine with a worker, or an async engine")
        self.target = target
        self.engine = engine
        self.async_engine = async_engine
        self.worker = worker
        # SQLite: one connection kept open on the database thread (no pool checkout per transaction)
        self._conn: sa.Connection | None = None

    @property
    def backend(self) -> str:
        """``sqlite``, ``postgres`` or ``memory``."""
        return self.target.backend

    async def read(self, func: Callable[[sa.Connection], T]) -> T:
        """``func(connection)`` outside a write transaction; returns its result."""
        if self.engine is not None:
            assert self.worker is not None
            return await self.worker.call(self._read_on_worker, func)
        assert self.async_engine is not None
        async with self.async_engine.connect() as conn:
            return await conn.run_sync(func)

    async def write(self, func: Callable[[sa.Connection], T]) -> T:
        """``func(connection)`` in one transaction: committed if it returns, rolled back if it raises."""
        if self.engine is not None:
            assert self.worker is not None
            return await self.worker.call(self._write_on_worker, func)
        assert self.async_engine is not None
        async with self.async_engine.begin() as conn:
            return await conn.run_sync(func)

    def _dispose_on_worker(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        assert self.engine is not None
        self.engine.dispose()

    def _connection(self) -> sa.Connection:
        if self._conn is None or self._conn.closed:
            assert self.engine is not None
            self._conn = self.engine.connect()
        return self._conn

    def _read_on_worker(self, func: Callable[[sa.Connection], T]) -> T:
        conn = self._connection()
        try:
            return func(conn)
        finally:
            conn.rollback()  # end the read transaction (a WAL snapshot must not outlive the call)

    def _write_on_worker(self, func: Callable[[sa.Connection], T]) -> T:
        conn = self._connection()
        with conn.begin():
            return func(conn)

    async def dispose(self) -> None:
        """Close every pooled connection."""
        if self.engine is not None:
            assert self.worker is not None
            await self.worker.call(self._dispose_on_worker)
        else:
            assert self.async_engine is not None
            await self.async_engine.dispose()




def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    sqlite_wal(dbapi_conn)


async def open_database(target: DatabaseTarget, *, worker: DbWorker | None = None) -> Database:
    """Create the engine and bring the schema to head (see :mod:`.bootstrap`).

    SQLite and memory databases run on ``worker`` (a new :class:`DbWorker` when ``None``).
    """
    from deerflow_nb.persistence.bootstrap import bootstrap_schema

    if target.backend in {"memory", "sqlite"}:
        worker = worker or DbWorker()
        database = Database(target, engine=await worker.call(_sqlite_engine, target), worker=worker)
    else:
        engine = create_async_engine(target.url, pool_pre_ping=True, pool_size=5, max_overflow=10)
        database = Database(target, async_engine=engine)
    try:
        await bootstrap_schema(database)
    except BaseException:
        await database.dispose()
        raise
    return database


def _sqlite_engine(target: DatabaseTarget) -> sa.Engine:
    url = sa.make_url(target.url).set(drivername="sqlite")
    if target.backend == "memory":
        return sa.create_engine(url, poolclass=StaticPool, connect_args={"check_same_thread": False})
    assert target.sqlite_path is not None
    target.sqlite_path.parent.mkdir(parents=True, exist_ok=True)
    # the pool hands connections to the database thread only; check_same_thread guards nothing here
    engine = sa.create_engine(url, connect_args={"timeout": 30, "check_same_thread": False})
    sa.event.listen(engine, "connect", _sqlite_pragmas)
    return engine


async def open_checkpointer(target: DatabaseTarget, *, worker: DbWorker | None = None
                            ) -> tuple[BaseCheckpointSaver, Callable[[], Awaitable[None]]]:
    """The LangGraph saver for ``target`` and a coroutine function that closes it.

    A SQLite saver runs on ``worker`` (share the store's, so checkpoints and app rows
    are written by one thread); a new :class:`DbWorker` when ``None``.
    """
    if target.backend == "memory":
        async def _noop() -> None:
            return None

        return InMemorySaver(), _noop
    if target.backend == "sqlite":
        from deerflow_nb.persistence.checkpoint import open_sqlite_saver

        assert target.sqlite_path is not None
        return await open_sqlite_saver(target.sqlite_path, worker or DbWorker())
    try:
        from psycopg.rows import dict_row
        from psycopg_pool import AsyncConnectionPool

        from deerflow_nb.persistence.postgres_saver import DeltaLoggingPostgresSaver
    except ImportError as exc:  # pragma: no cover - depends on the installed extra
        raise ConfigError("PostgreSQL needs the [postgres] extra: pip install 'deerflow-nb[postgres]'",
                          key="database.url") from exc
    pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
        target.libpq_url, min_size=1, max_size=10, open=False,
        kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row})
    await pool.open(wait=True, timeout=30)
    pg_saver = DeltaLoggingPostgresSaver(pool)  # type: ignore[arg-type]
    await pg_saver.setup()
    return pg_saver, pool.close
