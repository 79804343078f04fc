import asyncio

import pytest
import sqlalchemy as sa

from deerflow_nb.persistence import open_database, open_store
from deerflow_nb.persistence.bootstrap import BASELINE_TABLES, HEAD_REVISION, bootstrap_schema
from deerflow_nb.persistence.models import APP_TABLES, Base


async def _tables(db) -> set[str]:
    return set(await db.read(lambda c: sa.inspect(c).get_table_names()))


async def _version(db) -> list[str]:
    return await db.read(lambda c: [r[0] for r in c.execute(sa.text("SELECT version_num FROM alembic_version"))])


@pytest.mark.asyncio
async def test_empty_database_is_created_and_stamped_then_upgraded(target):
    db = await open_database(target)
    try:
        assert APP_TABLES <= await _tables(db)
        assert await _version(db) == [HEAD_REVISION]
        # a second start takes the "versioned" branch and changes nothing
        assert await bootstrap_schema(db) == "upgraded"
        assert await _version(db) == [HEAD_REVISION]
    finally:
        await db.dispose()


@pytest.mark.asyncio
async def test_legacy_database_is_backfilled_and_stamped(target):
    db = await open_database(target)
    try:
        def make_legacy(c: sa.Connection) -> None:  # a pre-alembic database: one table missing, no version
            c.execute(sa.text("DROP TABLE alembic_version"))
            Base.metadata.drop_all(c, tables=[Base.metadata.tables["feedback"]])

        await db.write(make_legacy)
        assert await bootstrap_schema(db) == "legacy"
        assert APP_TABLES <= await _tables(db)  # the baseline back-filled, later tables migrated
        assert await _version(db) == [HEAD_REVISION]
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
        assert await _version(dbs[0]) == [HEAD_REVISION]
    finally:
        for db in dbs:
            await db.dispose()


def test_baseline_tables_match_the_models():
    # tables added after the baseline come from their own migration (0004_scheduled_tasks)
    assert set(BASELINE_TABLES) | {"scheduled_tasks", "scheduled_task_runs"} == APP_TABLES


@pytest.mark.asyncio
async def test_a_0001_database_is_upgraded_to_run_leases(target):
    db = await open_database(target)
    try:
        def make_0001(c: sa.Connection) -> None:  # the schema as 0001_baseline left it
            c.execute(sa.text("ALTER TABLE runs DROP COLUMN lease_expires_at"))
            c.execute(sa.text("UPDATE alembic_version SET version_num = '0001_baseline'"))

        await db.write(make_0001)
        columns = await db.read(lambda c: {col["name"] for col in sa.inspect(c).get_columns("runs")})
        assert "lease_expires_at" not in columns
        assert await bootstrap_schema(db) == "upgraded"
        columns = await db.read(lambda c: {col["name"] for col in sa.inspect(c).get_columns("runs")})
        assert "lease_expires_at" in columns
        assert await _version(db) == [HEAD_REVISION]
    finally:
        await db.dispose()


@pytest.mark.asyncio
async def test_a_0002_database_is_upgraded_to_cancel_requests(target):
    db = await open_database(target)
    try:
        def make_0002(c: sa.Connection) -> None:  # the schema as 0002_run_leases left it
            c.execute(sa.text("ALTER TABLE runs DROP COLUMN cancel_requested"))
            c.execute(sa.text("UPDATE alembic_version SET version_num = '0002_run_leases'"))

        await db.write(make_0002)
        assert await bootstrap_schema(db) == "upgraded"
        columns = await db.read(lambda c: {col["name"] for col in sa.inspect(c).get_columns("runs")})
        assert {"lease_expires_at", "cancel_requested"} <= columns
        assert await _version(db) == [HEAD_REVISION]
    finally:
        await db.dispose()
