import asyncio

import pytest
import sqlalchemy as sa

from deerflow_nb.persistence import open_database, open_store
from deerflow_nb.persistence.bootstrap import BASELINE_TABLES, bootstrap_schema
from deerflow_nb.persistence.models import APP_TABLES, Base


async def _tables(db) -> set[str]:
    async with db.engine.connect() as conn:
        return set(await conn.run_sync(lambda c: sa.inspect(c).get_table_names()))


async def _version(db) -> list[str]:
    async with db.engine.connect() as conn:
        return [r[0] for r in await conn.execute(sa.text("SELECT version_num FROM alembic_version"))]


@pytest.mark.asyncio
async def test_empty_database_is_created_and_stamped_then_upgraded(target):
    db = await open_database(target)
    try:
        assert APP_TABLES <= await _tables(db)
        assert await _version(db) == ["0001_baseline"]
        # a second start takes the "versioned" branch and changes nothing
        assert await bootstrap_schema(db.engine, backend=target.backend) == "upgraded"
        assert await _version(db) == ["0001_baseline"]
    finally:
        await db.dispose()


@pytest.mark.asyncio
async def test_legacy_database_is_backfilled_and_stamped(target):
    db = await open_database(target)
    try:
        async with db.engine.begin() as conn:  # simulate a pre-alembic database: one table, no version
            await conn.execute(sa.text("DROP TABLE alembic_version"))
            await conn.run_sync(lambda c: Base.metadata.drop_all(c, tables=[Base.metadata.tables["feedback"]]))
        assert await bootstrap_schema(db.engine, backend=target.backend) == "legacy"
        assert set(BASELINE_TABLES) <= await _tables(db)
        assert await _version(db) == ["0001_baseline"]
    finally:
        await db.dispose()


@pytest.mark.asyncio
async def test_checkpointer_tables_are_not_alembic_tables(target):
    store = await open_store(target)
    try:
        tables = await _tables(store.db)
        assert any(t.startswith("checkpoint") for t in tables)
        assert not any(t.startswith("checkpoint") for t in APP_TABLES)
    finally:
        await store.aclose()


@pytest.mark.asyncio
async def test_concurrent_startups_bootstrap_once(target):
    dbs = await asyncio.gather(open_database(target), open_database(target))
    try:
        assert await _version(dbs[0]) == ["0001_baseline"]
    finally:
        for db in dbs:
            await db.dispose()


def test_baseline_tables_match_the_models():
    assert set(BASELINE_TABLES) == APP_TABLES
