"""``ScheduleStore`` on SQLite and PostgreSQL: the active-run index is the arbiter, ticks are claimed once."""

from __future__ import annotations

import asyncio

import pytest
import sqlalchemy as sa

from deerflow_nb.persistence import open_database, open_store
from deerflow_nb.persistence.bootstrap import HEAD_REVISION, alembic_config, bootstrap_schema
from deerflow_nb.persistence.schedules import ActiveScheduledRunConflict
from deerflow_nb.runtime.schedule_schemas import ScheduledTaskResponse, next_tick, task_timezone


def _task(task_id: str = "t1", next_run_at: float = 100.0) -> dict:
    return {"id": task_id, "user_id": "alice", "message": "m", "schedule_type": "interval", "cron": None,
            "interval_seconds": 60.0, "context_mode": "fresh_thread_per_run", "thread_id": None,
            "overlap_policy": "skip", "status": "active", "next_run_at": next_run_at, "last_run_at": None,
            "last_run_id": None, "last_thread_id": None, "last_error": None, "run_count": 0, "created_at": 1.0,
            "updated_at": 1.0}


def _occurrence(occurrence_id: str, status: str = "queued", task_id: str = "t1") -> dict:
    return {"id": occurrence_id, "task_id": task_id, "user_id": "alice", "thread_id": None, "run_id": None,
            "trigger": "scheduled", "status": status, "scheduled_for": None, "error": None, "created_at": 1.0,
            "started_at": None, "finished_at": None}


@pytest.mark.asyncio
async def test_one_active_occurrence_per_task(target):
    store = await open_store(target)
    try:
        schedules = store.schedules
        await schedules.create_task(_task())
        await schedules.create_task(_task("t2"))
        results = await asyncio.gather(*(schedules.create_run(_occurrence(f"o{i}")) for i in range(4)),
                                       return_exceptions=True)
        assert sum(r is None for r in results) == 1  # the index admitted exactly one
        assert all(isinstance(r, ActiveScheduledRunConflict) for r in results if r is not None)
        await schedules.create_run(_occurrence("tomb", "skipped"))  # a terminal tombstone takes no slot
        await schedules.create_run(_occurrence("other", task_id="t2"))  # another task has its own slot
        assert await schedules.has_active_runs("t1")
        [winner] = [r for r in await schedules.active_runs() if r["task_id"] == "t1"]
        assert await schedules.finish_run(winner["id"], "success", error=None, now=2.0)
        assert not await schedules.finish_run(winner["id"], "error", error="late", now=3.0)  # ended already
        assert not await schedules.has_active_runs("t1")
        await schedules.create_run(_occurrence("next"))  # the slot is free again
        assert {r["id"]: r["status"] for r in await schedules.list_runs("t1", 10)} == {
            winner["id"]: "success", "tomb": "skipped", "next": "queued"}
        await schedules.delete_task("t1")  # the task and its occurrences, together
        assert await schedules.get_task("t1", None) is None and await schedules.list_runs("t1", 10) == []
    finally:
        await store.aclose()


@pytest.mark.asyncio
async def test_a_tick_is_claimed_once(target):
    store = await open_store(target)
    try:
        schedules = store.schedules
        await schedules.create_task(_task(next_run_at=100.0))
        assert [t["id"] for t in await schedules.due_tasks(100.0)] == ["t1"]
        assert await schedules.due_tasks(99.0) == []
        claims = await asyncio.gather(*(schedules.claim_tick("t1", 100.0, 160.0, 100.0) for _ in range(3)))
        assert sorted(claims) == [False, False, True]
        assert (await schedules.get_task("t1", "alice"))["next_run_at"] == 160.0
        assert await schedules.get_task("t1", "bob") is None
        await schedules.update_task("t1", status="paused", next_run_at=None)
        assert await schedules.due_tasks(1e12) == []
        assert not await schedules.claim_tick("t1", 160.0, 220.0, 160.0)
    finally:
        await store.aclose()


@pytest.mark.asyncio
async def test_a_0003_database_is_upgraded_to_scheduled_tasks(target):
    db = await open_database(target)
    try:
        def make_0003(c: sa.Connection) -> None:  # the schema as 0003_run_cancel_requests left it
            c.execute(sa.text("DROP TABLE scheduled_task_runs"))
            c.execute(sa.text("DROP TABLE scheduled_tasks"))
            c.execute(sa.text("UPDATE alembic_version SET version_num = '0003_run_cancel_requests'"))

        await db.write(make_0003)
        assert await bootstrap_schema(db) == "upgraded"
        indexes = await db.read(lambda c: {i["name"]: i for i in sa.inspect(c).get_indexes("scheduled_task_runs")})
        assert indexes["uq_scheduled_task_run_active"]["unique"]
        version = await db.read(lambda c: [r[0] for r in c.execute(sa.text("SELECT version_num FROM alembic_version"))])
        assert version == [HEAD_REVISION] == ["0005_schedule_timezone"]
        columns = await db.read(lambda c: {col["name"] for col in sa.inspect(c).get_columns("scheduled_tasks")})
        assert "timezone" in columns  # 0004 made the table, 0005 added the column
    finally:
        await db.dispose()
    store = await open_store(target)  # the migrated index arbitrates like the created one
    try:
        await store.schedules.create_task(_task())
        await store.schedules.create_run(_occurrence("a"))
        with pytest.raises(ActiveScheduledRunConflict):
            await store.schedules.create_run(_occurrence("b", "running"))
    finally:
        await store.aclose()


@pytest.mark.asyncio
async def test_due_tasks_of_one_user(target):
    store = await open_store(target)
    try:
        await store.schedules.create_task(_task("a"))
        await store.schedules.create_task({**_task("b"), "user_id": "bob"})
        assert sorted(t["id"] for t in await store.schedules.due_tasks(100.0)) == ["a", "b"]
        assert [t["id"] for t in await store.schedules.due_tasks(100.0, "bob")] == ["b"]
    finally:
        await store.aclose()


@pytest.mark.asyncio
async def test_a_tasks_time_zone_round_trips(target):
    store = await open_store(target)
    try:
        cron = {**_task("paris"), "schedule_type": "cron", "cron": "0 9 * * 1-5", "interval_seconds": None,
                "timezone": "America/Argentina/ComodRivadavia"}  # the longest IANA name
        await store.schedules.create_task(cron)
        assert (await store.schedules.get_task("paris", "alice"))["timezone"] == "America/Argentina/ComodRivadavia"
        await store.schedules.update_task("paris", timezone="Europe/Paris")
        [row] = await store.schedules.list_tasks("alice")
        assert row["timezone"] == "Europe/Paris"
        assert [t["timezone"] for t in await store.schedules.due_tasks(100.0)] == ["Europe/Paris"]
        await store.schedules.create_task(_task("every"))  # an interval task given no zone: NULL
        assert (await store.schedules.get_task("every", None))["timezone"] is None
    finally:
        await store.aclose()


_COLUMNS_0004 = ("id, user_id, message, schedule_type, cron, interval_seconds, context_mode, thread_id, "
                 "overlap_policy, status, next_run_at, last_run_at, last_run_id, last_thread_id, last_error, "
                 "run_count, created_at, updated_at")


@pytest.mark.asyncio
async def test_a_0004_database_is_upgraded_to_time_zones_and_its_tasks_stay_utc(target):
    db = await open_database(target)
    try:
        def make_0004(c: sa.Connection) -> None:  # the schema as 0004_scheduled_tasks left it, with a cron task
            c.execute(sa.text("ALTER TABLE scheduled_tasks DROP COLUMN timezone"))
            c.execute(sa.text("UPDATE alembic_version SET version_num = '0004_scheduled_tasks'"))
            c.execute(sa.text(f"INSERT INTO scheduled_tasks ({_COLUMNS_0004}) VALUES ('old', 'alice', 'm', 'cron', "
                              "'0 9 * * 1-5', NULL, 'fresh_thread_per_run', NULL, 'skip', 'active', 1774684800.0, "
                              "NULL, NULL, NULL, NULL, 0, 1.0, 1.0)"))

        await db.write(make_0004)
        assert await bootstrap_schema(db) == "upgraded"
        names = await db.read(lambda c: {col["name"] for col in sa.inspect(c).get_columns("scheduled_tasks")})
        assert "timezone" in names
        version = await db.read(lambda c: [r[0] for r in c.execute(sa.text("SELECT version_num FROM alembic_version"))])
        assert version == [HEAD_REVISION] == ["0005_schedule_timezone"]
        assert await bootstrap_schema(db) == "upgraded"  # again: nothing to do

        def downgrade(c: sa.Connection) -> None:
            from alembic import command

            command.downgrade(alembic_config(c), "0004_scheduled_tasks")

        await db.write(downgrade)  # drops the column and keeps the row
        names = await db.read(lambda c: {col["name"] for col in sa.inspect(c).get_columns("scheduled_tasks")})
        assert "timezone" not in names and "cron" in names
        assert await db.read(lambda c: c.execute(sa.text("SELECT count(*) FROM scheduled_tasks")).scalar()) == 1
        assert await bootstrap_schema(db) == "upgraded"  # and up again
    finally:
        await db.dispose()
    store = await open_store(target)
    try:
        row = await store.schedules.get_task("old", "alice")
        assert row is not None and row["timezone"] is None  # an old row is NULL ...
        assert task_timezone(row) == "UTC" and ScheduledTaskResponse.from_row(row).timezone == "UTC"  # ... UTC
        # its next tick is computed in UTC as before: Monday 2026-03-30 09:00 UTC, not 07:00 (Paris summer time)
        assert next_tick(row["schedule_type"], row["cron"], None, row["next_run_at"],
                         timezone=task_timezone(row)) == 1774861200.0
        indexes = {i["name"] for i in await store.db.read(lambda c: sa.inspect(c).get_indexes("scheduled_tasks"))}
        assert {"ix_scheduled_tasks_user_id", "ix_scheduled_tasks_due"} <= indexes  # kept through the round trip
    finally:
        await store.aclose()
