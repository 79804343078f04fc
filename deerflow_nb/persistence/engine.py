"""Open the application database (SQLAlchemy async engine) and the LangGraph checkpointer.

``database.backend`` picks the backend: ``sqlite`` (default, ``{home}/deerflow.db``),
``postgres`` (``database.url``, ``postgresql+asyncpg://...``) or ``memory`` (SQLite in
memory plus LangGraph's in-memory saver, for throwaway work). A ``database.url`` starting
with ``postgresql`` selects PostgreSQL whatever the backend says.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from sqlalchemy.ext.asyncio import AsyncEngine, async_sessionmaker, create_async_engine
from sqlalchemy.pool import StaticPool

from deerflow_nb.errors import ConfigError

__all__ = ["Database", "DatabaseTarget", "open_checkpointer", "open_database", "resolve_database"]


@dataclass(frozen=True)
class DatabaseTarget:
    """Where the data lives: ``backend`` is ``sqlite``, ``postgres`` or ``memory``."""

    backend: str
    url: str  # SQLAlchemy URL (async driver)
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
        return DatabaseTarget("memory", "sqlite+aiosqlite://")
    if url and not url.startswith("sqlite"):
        raise ConfigError(f"database.url {url!r} is neither sqlite nor postgresql", key="database.url")
    if url:
        path = sa.make_url(url).database
        db = Path(path).expanduser() if path else home / "deerflow.db"
    else:
        db = Path(sqlite_path).expanduser() if sqlite_path else home / "deerflow.db"
    return DatabaseTarget("sqlite", f"sqlite+aiosqlite:///{db}", sqlite_path=db)


@dataclass
class Database:
    """An open async engine plus its session factory."""

    target: DatabaseTarget
    engine: AsyncEngine
    sessions: async_sessionmaker[Any] = field(init=False)

    def __post_init__(self) -> None:
        self.sessions = async_sessionmaker(self.engine, expire_on_commit=False)

    @property
    def backend(self) -> str:
        """``sqlite``, ``postgres`` or ``memory``."""
        return self.target.backend

    async def dispose(self) -> None:
        """Close every pooled connection."""
        await self.engine.dispose()


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    # WAL lets the checkpointer's own connection write while we read; busy_timeout
    # turns lock contention between the two connections into waiting, not errors.
    cursor = dbapi_conn.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA busy_timeout=10000")
    cursor.close()


async def open_database(target: DatabaseTarget) -> Database:
    """Create the engine and bring the schema to head (see :mod:`.bootstrap`)."""
    from deerflow_nb.persistence.bootstrap import bootstrap_schema

    if target.backend == "memory":
        engine = create_async_engine(target.url, poolclass=StaticPool,
                                     connect_args={"check_same_thread": False})
    elif target.backend == "sqlite":
        assert target.sqlite_path is not None
        target.sqlite_path.parent.mkdir(parents=True, exist_ok=True)
        engine = create_async_engine(target.url, connect_args={"timeout": 30})
        sa.event.listen(engine.sync_engine, "connect", _sqlite_pragmas)
    else:
        engine = create_async_engine(target.url, pool_pre_ping=True, pool_size=5, max_overflow=10)
    database = Database(target, engine)
    try:
        await bootstrap_schema(engine, backend=target.backend)
    except BaseException:
        await engine.dispose()
        raise
    return database


async def open_checkpointer(target: DatabaseTarget) -> tuple[BaseCheckpointSaver, Callable[[], Awaitable[None]]]:
    """The LangGraph saver for ``target`` and a coroutine function that closes it."""
    if target.backend == "memory":
        async def _noop() -> None:
            return None

        return InMemorySaver(), _noop
    if target.backend == "sqlite":
        import aiosqlite
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

        assert target.sqlite_path is not None
        conn = await aiosqlite.connect(str(target.sqlite_path), timeout=30)
        await conn.execute("PRAGMA journal_mode=WAL")
        await conn.execute("PRAGMA synchronous=NORMAL")
        await conn.execute("PRAGMA busy_timeout=10000")
        saver = AsyncSqliteSaver(conn)
        await saver.setup()
        return saver, conn.close
    try:
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
        from psycopg.rows import dict_row
        from psycopg_pool import AsyncConnectionPool
    except ImportError as exc:  # pragma: no cover - depends on the installed extra
        raise ConfigError("PostgreSQL needs the [postgres] extra: pip install 'deerflow-nb[postgres]'",
                          key="database.url") from exc
    pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
        target.libpq_url, min_size=1, max_size=10, open=False,
        kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row})
    await pool.open(wait=True, timeout=30)
    pg_saver = AsyncPostgresSaver(pool)  # type: ignore[arg-type]
    await pg_saver.setup()
    return pg_saver, pool.close
