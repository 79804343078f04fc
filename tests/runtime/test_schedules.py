"""Scheduled runs in the runtime, with an injected clock: ticks, missed ticks, overlap, races, pause, reconcile."""

from __future__ import annotations

import asyncio
import datetime as dt
import threading
import time
from zoneinfo import ZoneInfo

import pytest
import yaml

from deerflow_nb.errors import NotFoundError, ThreadBusyError, UsageError
from deerflow_nb.persistence.schedules import ActiveScheduledRunConflict
from deerflow_nb.runtime.schedule_schemas import ScheduledTaskResponse, check_timezone, iso, next_tick
from deerflow_nb.testing import ScriptedChatModel

HOUR = 3600.0
T0 = 2_000_000_000.0  # a fixed "now" (2033): time is driven, never read


class _Gate(ScriptedChatModel):
    """Answers once ``gate`` is set (so a run stays active while a test dispatches again); records tools offered."""

    gate: threading.Event | None = None
    offered: list = []

    async def _hold(self, kwargs):
        self.offered.append([t["function"]["name"] for t in kwargs.get("tools", [])])
        if self.gate is not None:
            await asyncio.to_thread(self.gate.wait, 120)

    async def _agenerate(self, messages, stop=None, run_manager=None, **kwargs):
        await self._hold(kwargs)
        return await super()._agenerate(messages, stop, run_manager, **kwargs)

    async def _astream(self, messages, stop=None, run_manager=None, **kwargs):
        await self._hold(kwargs)
        async for chunk in super()._astream(messages, stop, run_manager, **kwargs):
            yield chunk


class Clock:
    def __init__(self, now: float = T0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def env(make_agent, tmp_path):
    """``(agent, runtime, service, clock, model)``; the model answers at once unless ``model.gate`` is cleared."""
    model = _Gate(responses=[f"answer {i}" for i in range(40)], offered=[], gate=threading.Event())
    model.gate.set()
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"config_version": 1, "memory": {"enabled": False},
                                      "title": {"enabled": False}}))
    agent = make_agent(model=model, config_path=config)
    runtime = agent.backend.local("runtime")
    service = runtime.schedules
    clock = Clock()
    service.clock = clock
    return agent, runtime, service, clock, model


def run(runtime, coro):
    return runtime.loop.run(coro)


def wait_ended(runtime, service, task_id, count=1, user="default"):
    """The task's occurrences once ``count`` of them ended (the run's watcher stores the outcome)."""
    async def ended():
        for _ in range(1200):
            runs = (await service.runs(user, task_id, 100))["runs"]
            if sum(r["status"] not in {"queued", "running"} for r in runs) >= count:
                return runs
            await asyncio.sleep(0.05)
        raise AssertionError(f"occurrences never ended: {runs}")

    return run(runtime, ended())


def test_create_validates_before_storing(env):
    agent, runtime, service, *_ = env
    bad = [
        ({"message": "x"}, "exactly one"),
        ({"message": "x", "cron": "* * * * *", "every_seconds": 60}, "exactly one"),
        ({"message": "x", "cron": "61 * * * *"}, "cron"),
        ({"message": "x", "cron": "* * * *"}, "5 fields"),
        ({"message": "x", "cron": "0 0 30 2 *"}, "never matches"),
        ({"message": "x", "every_seconds": 0.5}, "every_seconds"),
        ({"message": "x", "every_seconds": "60"}, "every_seconds"),
        ({"message": "  ", "every_seconds": 60}, "message"),
        ({"message": "x", "every_seconds": 60, "context_mode": "reuse_thread"}, "thread_id"),
        ({"message": "x", "every_seconds": 60, "thread_id": "t1"}, "thread_id"),
        ({"message": "x", "every_seconds": 60, "overlap_policy": "queue"}, "overlap_policy"),
        ({"message": "x", "every_seconds": 60, "timezone": "UTC"}, "timezone"),  # cron only
        ({"message": "x", "every_seconds": 60, "timezone": "Europe/Paris"}, "timezone: only for a cron"),
        ({"message": "x", "cron": "0 9 * * *", "timezone": "Mars/Olympus"}, "timezone: .*unknown IANA"),
        ({"message": "x", "cron": "0 9 * * *", "timezone": "europe/paris"}, "timezone: .*unknown IANA"),
        ({"message": "x", "cron": "0 9 * * *", "timezone": "localtime"}, "timezone: .*unknown IANA"),
        ({"message": "x", "cron": "0 9 * * *", "timezone": "America"}, "timezone: .*unknown IANA"),  # a folder
        ({"message": "x", "cron": "0 9 * * *", "timezone": "../../etc/passwd"}, "timezone: .*unknown IANA"),
        ({"message": "x", "cron": "0 9 * * *", "timezone": ""}, "timezone"),
        ({"message": "x", "cron": "0 9 * * *", "timezone": "Europe/" + "x" * 60}, "timezone: .*at most 64"),
        ({"message": "x", "cron": "0 9 * * *", "timezone": 1}, "timezone"),
    ]
    for body, field in bad:
        with pytest.raises(UsageError, match=field):
            run(runtime, service.create("default", body))
    with pytest.raises(NotFoundError):  # a thread the user does not have
        run(runtime, service.create("default", {"message": "x", "every_seconds": 60,
                                                "context_mode": "reuse_thread", "thread_id": "nope"}))
    assert run(runtime, service.list_tasks("default")) == {"tasks": []}


def test_a_due_tick_runs_once_non_interactive_and_the_next_tick_follows(env):
    agent, runtime, service, clock, model = env
    task = run(runtime, service.create("default", {"message": "daily report", "every_seconds": HOUR}))
    assert task["status"] == "active" and task["schedule_type"] == "interval"
    assert task["next_run_at"] == "2033-05-18T04:33:20+00:00"  # T0 + 1 h
    assert run(runtime, service.tick(T0 + 10)) == []  # not due yet
    [occurrence] = run(runtime, service.tick(T0 + HOUR))
    assert occurrence["trigger"] == "scheduled" and occurrence["status"] == "running"
    [ended] = wait_ended(runtime, service, task["id"])
    assert ended["status"] == "success" and ended["run_id"] == occurrence["run_id"]
    assert "ask_clarification" not in model.offered[-1] and "bash" in model.offered[-1]
    thread = agent.thread(ended["thread_id"])
    assert thread.messages[-1].content == "answer 0"
    info = run(runtime, runtime.runs.get(ended["run_id"], "default"))
    assert info.metadata["scheduled_task_id"] == task["id"] and info.metadata["trigger"] == "scheduled"
    task = run(runtime, service.get("default", task["id"]))
    assert task["run_count"] == 1 and task["last_run_id"] == ended["run_id"]
    assert task["next_run_at"] == "2033-05-18T05:33:20+00:00"  # the phase is kept: T0 + 2 h


def test_ticks_missed_during_downtime_run_once(env):
    agent, runtime, service, clock, _ = env
    task = run(runtime, service.create("default", {"message": "catch up", "every_seconds": HOUR}))
    later = T0 + 10.5 * HOUR  # ten ticks missed
    assert len(run(runtime, service.tick(later))) == 1
    assert run(runtime, service.tick(later)) == []  # the next tick is after "now"
    wait_ended(runtime, service, task["id"])
    task = run(runtime, service.get("default", task["id"]))
    assert task["next_run_at"] == "2033-05-18T14:33:20+00:00"  # T0 + 11 h: the first tick after later
    assert [r["trigger"] for r in run(runtime, service.runs("default", task["id"]))["runs"]] == ["scheduled"]


def test_a_cron_schedule_ticks_on_its_minutes(env):
    agent, runtime, service, clock, _ = env
    task = run(runtime, service.create("default", {"message": "x", "cron": "*/15  * * * *"}))
    assert task["cron"] == "*/15 * * * *" and task["next_run_at"] == "2033-05-18T03:45:00+00:00"
    assert len(run(runtime, service.tick(T0 + 2 * HOUR))) == 1
    assert run(runtime, service.get("default", task["id"]))["next_run_at"] == "2033-05-18T05:45:00+00:00"


def test_a_tick_while_the_previous_run_is_active_is_a_skipped_tombstone(env):
    agent, runtime, service, clock, model = env
    task = run(runtime, service.create("default", {"message": "slow", "every_seconds": 60}))
    model.gate.clear()
    [first] = run(runtime, service.tick(T0 + 60))
    [second] = run(runtime, service.tick(T0 + 120))
    assert second["status"] == "skipped" and "still active" in second["error"] and second["run_id"] is None
    with pytest.raises(ActiveScheduledRunConflict):  # a manual trigger is refused outright (409), not recorded
        run(runtime, service.trigger("default", task["id"]))
    model.gate.set()
    runs = wait_ended(runtime, service, task["id"], count=2)
    assert sorted(r["status"] for r in runs) == ["skipped", "success"]
    assert run(runtime, service.trigger("default", task["id"]))["trigger"] == "manual"  # free again


def test_concurrent_dispatches_start_one_run(env):
    """Two dispatches at once (a double click, a trigger racing the poller): one run, one skip or 409."""
    agent, runtime, service, clock, model = env
    task = run(runtime, service.create("default", {"message": "race", "every_seconds": 60}))
    store = run(runtime, runtime.store()).schedules
    task_row = run(runtime, store.get_task(task["id"], "default"))
    model.gate.clear()

    async def scheduled_race():
        return await asyncio.gather(service.dispatch_task(task_row, "scheduled"),
                                    service.dispatch_task(task_row, "scheduled"))

    outcomes = run(runtime, scheduled_race())
    assert sorted(o["status"] for o in outcomes) == ["running", "skipped"]
    model.gate.set()
    wait_ended(runtime, service, task["id"], count=2)
    model.gate.clear()

    async def manual_race():
        return await asyncio.gather(service.trigger("default", task["id"]), service.trigger("default", task["id"]),
                                    return_exceptions=True)

    outcomes = run(runtime, manual_race())
    assert sorted(type(o).__name__ for o in outcomes) == ["ActiveScheduledRunConflict", "dict"]
    model.gate.set()
    runs = wait_ended(runtime, service, task["id"], count=3)
    assert sorted(r["status"] for r in runs) == ["skipped", "success", "success"]  # nothing half-written


def test_pause_stops_ticks_and_resume_starts_from_now(env):
    agent, runtime, service, clock, _ = env
    task = run(runtime, service.create("default", {"message": "x", "every_seconds": HOUR}))
    paused = run(runtime, service.pause("default", task["id"]))
    assert paused["status"] == "paused" and paused["next_run_at"] is None
    assert run(runtime, service.tick(T0 + 5 * HOUR)) == []
    clock.now = T0 + 5.25 * HOUR
    resumed = run(runtime, service.resume("default", task["id"]))
    assert resumed["status"] == "active" and resumed["next_run_at"] == "2033-05-18T09:48:20+00:00"  # now + 1 h
    assert run(runtime, service.tick(T0 + 5.5 * HOUR)) == []  # nothing caught up from the pause
    assert len(run(runtime, service.tick(T0 + 6.25 * HOUR))) == 1


def test_reuse_thread_continues_one_thread_and_a_busy_thread_is_skipped(env):
    agent, runtime, service, clock, model = env
    thread = agent.thread()
    thread.chat("hello")
    task = run(runtime, service.create("default", {"message": "again", "every_seconds": 60,
                                                   "context_mode": "reuse_thread", "thread_id": thread.id}))
    assert run(runtime, service.trigger("default", task["id"]))["thread_id"] == thread.id
    wait_ended(runtime, service, task["id"])
    assert [m.content for m in thread.messages][-2:] == ["again", "answer 1"]
    model.gate.clear()
    busy = thread.start("the user's own run")
    with pytest.raises(ThreadBusyError):  # manual: refused like any second run on the thread, nothing recorded
        run(runtime, service.trigger("default", task["id"]))
    clock.now = T0 + 60
    [tick] = run(runtime, service.tick())
    assert tick["status"] == "skipped" and "active run" in tick["error"]
    model.gate.set()
    busy.wait()
    statuses = [r["status"] for r in run(runtime, service.runs("default", task["id"]))["runs"]]
    assert statuses == ["skipped", "success"]


def test_tasks_are_the_users_own(env):
    agent, runtime, service, *_ = env
    task = run(runtime, service.create("alice", {"message": "x", "every_seconds": 60}))
    for call in (service.get, service.pause, service.resume, service.delete, service.trigger, service.runs):
        with pytest.raises(NotFoundError):
            run(runtime, call("bob", task["id"]))
    assert run(runtime, service.list_tasks("bob")) == {"tasks": []}
    with pytest.raises(UsageError, match="task_id"):
        run(runtime, service.get("alice", "../x"))
    assert run(runtime, service.delete("alice", task["id"])) == {"success": True, "id": task["id"]}
    assert run(runtime, service.list_tasks("alice")) == {"tasks": []}


def test_reconcile_ends_occurrences_whose_run_ended_unwatched(env):
    """A server that died mid-run left its occurrence running: the run's row gives the outcome."""
    import sqlalchemy as sa

    agent, runtime, service, clock, _ = env
    task = run(runtime, service.create("default", {"message": "x", "every_seconds": 60}))
    occurrence = run(runtime, service.trigger("default", task["id"]))
    wait_ended(runtime, service, task["id"])
    store = run(runtime, runtime.store()).schedules
    table = sa.table("scheduled_task_runs", sa.column("id"), sa.column("status"))
    run(runtime, store._db.write(lambda c: c.execute(
        sa.update(table).where(table.c.id == occurrence["id"]).values(status="running"))))
    assert run(runtime, service.reconcile(T0)) == 1
    [row] = run(runtime, service.runs("default", task["id"]))["runs"]
    assert row["status"] == "success"
    # a queued row whose dispatcher died before starting the run: interrupted after the grace period
    run(runtime, store.create_run({"id": "orphan", "task_id": task["id"], "user_id": "default", "thread_id": None,
                                   "run_id": None, "trigger": "scheduled", "status": "queued",
                                   "scheduled_for": None, "error": None, "created_at": T0, "started_at": None,
                                   "finished_at": None}))
    assert run(runtime, service.reconcile(T0 + 1)) == 0  # its dispatcher may still be starting it
    assert run(runtime, service.reconcile(T0 + 3600)) == 1
    statuses = {r["id"]: r["status"] for r in run(runtime, service.runs("default", task["id"]))["runs"]}
    assert statuses["orphan"] == "interrupted"


def test_an_embedded_client_ticks_only_when_asked(env):
    agent, runtime, service, clock, _ = env
    service.clock = time.time  # real time: the loop reads the clock itself
    task = agent.schedules.create("tick", every=1)
    assert not service.running and agent.schedules.runs(task["id"]) == []  # defined, not dispatched
    agent.schedules.start_scheduler(poll_seconds=0.1)
    assert service.running
    runs = wait_ended(runtime, service, task["id"], count=2)
    assert {r["trigger"] for r in runs} == {"scheduled"} and {r["status"] for r in runs} <= {"success", "running"}
    agent.schedules.pause(task["id"])
    with pytest.raises(UsageError, match="poll_seconds"):
        agent.schedules.start_scheduler(poll_seconds=0)


def test_a_single_user_server_dispatches_only_its_users_tasks(env):
    """Under JupyterHub each user's server mounts only that user's files: it ticks only that user's tasks."""
    agent, runtime, service, clock, _ = env
    mine = run(runtime, service.create("alice", {"message": "x", "every_seconds": 60}))
    theirs = run(runtime, service.create("bob", {"message": "y", "every_seconds": 60}))
    service.dispatch_user = "alice"
    assert [o["task_id"] for o in run(runtime, service.tick(T0 + 60))] == [mine["id"]]
    assert run(runtime, service.get("bob", theirs["id"]))["next_run_at"] == "2033-05-18T03:34:20+00:00"  # unclaimed
    service.dispatch_user = None  # one server for everyone: bob's tick is dispatched by it
    assert [o["task_id"] for o in run(runtime, service.tick(T0 + 60))] == [theirs["id"]]
    wait_ended(runtime, service, mine["id"], user="alice")
    wait_ended(runtime, service, theirs["id"], user="bob")


def test_a_failed_run_is_the_occurrences_outcome_and_the_tasks_last_error(make_agent, tmp_path):
    config = tmp_path / "failing.yaml"
    config.write_text(yaml.safe_dump({"config_version": 1, "memory": {"enabled": False},
                                      "title": {"enabled": False}}))
    agent = make_agent(model=ScriptedChatModel(responses=["fine"], error_at=1, error_message="model down"),
                       config_path=config)
    runtime = agent.backend.local("runtime")
    service = runtime.schedules
    task = agent.schedules.create("x", every=3600)
    agent.schedules.trigger(task["id"])
    [ended] = wait_ended(runtime, service, task["id"])
    assert ended["status"] == "error" and "model down" in ended["error"]
    assert "model down" in agent.schedules.get(task["id"])["last_error"]
    agent.schedules.trigger(task["id"])  # a run that starts clears it; this one succeeds
    wait_ended(runtime, service, task["id"], count=2)
    task = agent.schedules.get(task["id"])
    assert task["last_error"] is None and task["run_count"] == 2


# -- time zones ------------------------------------------------------------------------------
PARIS = "Europe/Paris"  # CET (UTC+1) / CEST (UTC+2); 2026: forward 03-29 02:00 -> 03:00, back 10-25 03:00 -> 02:00


def at(text: str) -> float:
    return dt.datetime.fromisoformat(text).timestamp()


def ticks(cron: str, zone: str | None, after: str, count: int) -> list[str]:
    """The ``count`` ticks after ``after``, each computed from the previous one (as the scheduler does)."""
    out, now = [], at(after)
    for _ in range(count):
        now = next_tick("cron", cron, None, now, timezone=zone)
        out.append(iso(now))
    return out


def test_a_weekday_cron_follows_the_zones_wall_clock_across_dst():
    # 09:00 in Paris is 08:00 UTC in winter, 07:00 UTC in summer (the week of the spring change)
    assert ticks("0 9 * * 1-5", PARIS, "2026-03-26T12:00:00+00:00", 3) == [
        "2026-03-27T08:00:00+00:00",  # Friday, CET
        "2026-03-30T07:00:00+00:00",  # Monday, CEST (the clocks went forward on Sunday)
        "2026-03-31T07:00:00+00:00"]
    assert ticks("0 9 * * 1-5", PARIS, "2026-10-22T12:00:00+00:00", 3) == [
        "2026-10-23T07:00:00+00:00",  # Friday, CEST
        "2026-10-26T08:00:00+00:00",  # Monday, CET (the clocks went back on Sunday)
        "2026-10-27T08:00:00+00:00"]
    paris = ZoneInfo(PARIS)
    for tick in ticks("0 9 * * 1-5", PARIS, "2026-03-20T00:00:00+00:00", 30):
        local = dt.datetime.fromisoformat(tick).astimezone(paris)
        assert (local.hour, local.minute) == (9, 0) and local.weekday() < 5
    # the same expression without a zone (or in UTC) is UTC, as before time zones existed
    assert ticks("0 9 * * 1-5", None, "2026-03-26T12:00:00+00:00", 2) == [
        "2026-03-27T09:00:00+00:00", "2026-03-30T09:00:00+00:00"]
    assert ticks("0 9 * * 1-5", "UTC", "2026-03-26T12:00:00+00:00", 2) == ticks(
        "0 9 * * 1-5", None, "2026-03-26T12:00:00+00:00", 2)


def test_the_skipped_hour_ticks_once_after_the_gap_and_the_repeated_hour_twice():
    """croniter's DST behaviour, pinned (docs/operations.md describes it)."""
    # spring forward: 02:30 does not exist on 2026-03-29; the tick comes at 03:00 CEST (01:00 UTC), once
    assert ticks("30 2 * * *", PARIS, "2026-03-28T12:00:00+00:00", 3) == [
        "2026-03-29T01:00:00+00:00", "2026-03-30T00:30:00+00:00", "2026-03-31T00:30:00+00:00"]
    assert ticks("15,45 2 * * *", PARIS, "2026-03-28T12:00:00+00:00", 2) == [
        "2026-03-29T01:00:00+00:00", "2026-03-30T00:15:00+00:00"]  # two skipped times, one tick
    # fall back: 02:30 happens twice on 2026-10-25 (CEST, then CET): two ticks an hour apart
    assert ticks("30 2 * * *", PARIS, "2026-10-24T12:00:00+00:00", 3) == [
        "2026-10-25T00:30:00+00:00", "2026-10-25T01:30:00+00:00", "2026-10-26T01:30:00+00:00"]
    # ticking from inside the repeated hour (fold) moves on, never back
    assert next_tick("cron", "30 2 * * *", None, at("2026-10-25T01:30:00+00:00"), timezone=PARIS) == at(
        "2026-10-26T01:30:00+00:00")
    # an hourly job keeps one tick per real hour through both changes
    assert ticks("0 * * * *", PARIS, "2026-10-24T23:30:00+00:00", 3) == [
        "2026-10-25T00:00:00+00:00", "2026-10-25T01:00:00+00:00", "2026-10-25T02:00:00+00:00"]
    assert ticks("0 * * * *", PARIS, "2026-03-29T00:30:00+00:00", 2) == [
        "2026-03-29T01:00:00+00:00", "2026-03-29T02:00:00+00:00"]


def test_an_interval_ignores_zones_and_zone_names_are_checked():
    assert next_tick("interval", None, 60.0, 1000.0, anchor=970.0, timezone=PARIS) == 1030.0
    assert check_timezone("Europe/Paris") == "Europe/Paris" and check_timezone("UTC") == "UTC"
    assert check_timezone("America/Argentina/ComodRivadavia")  # the longest IANA name there is
    for bad in ("Mars/Olympus", "localtime", "posixrules", "Europe", "/etc/localtime", "Europe/Paris "):
        with pytest.raises(ValueError, match="unknown IANA time zone"):
            check_timezone(bad)


def test_a_row_stored_without_a_zone_reads_as_utc():
    row = {"id": "t", "message": "m", "schedule_type": "cron", "cron": "0 9 * * *", "interval_seconds": None,
           "context_mode": "fresh_thread_per_run", "thread_id": None, "overlap_policy": "skip", "status": "active",
           "next_run_at": None, "last_run_at": None, "last_run_id": None, "last_thread_id": None,
           "last_error": None, "run_count": 0, "created_at": 1.0, "updated_at": 1.0}
    assert ScheduledTaskResponse.from_row({**row, "timezone": None}).timezone == "UTC"
    assert ScheduledTaskResponse.from_row(row).timezone == "UTC"  # a row read before the column existed
    assert ScheduledTaskResponse.from_row({**row, "timezone": PARIS}).timezone == PARIS
    interval = {**row, "schedule_type": "interval", "cron": None, "interval_seconds": 60.0, "timezone": None}
    assert ScheduledTaskResponse.from_row(interval).timezone is None


def test_a_zoned_task_is_stored_ticks_and_resumes_in_its_zone(env):
    agent, runtime, service, clock, _ = env
    clock.now = at("2026-03-27T12:00:00+00:00")  # a Friday, the last weekday before the spring change
    body = {"message": "standup", "cron": "0 9 * * 1-5", "timezone": PARIS}
    task = run(runtime, service.create("default", body))
    assert task["timezone"] == PARIS and task["next_run_at"] == "2026-03-30T07:00:00+00:00"  # Monday, CEST
    store = run(runtime, runtime.store()).schedules
    assert run(runtime, store.get_task(task["id"], "default"))["timezone"] == PARIS
    assert run(runtime, service.get("default", task["id"])) == task
    assert [t["timezone"] for t in run(runtime, service.list_tasks("default"))["tasks"]] == [PARIS]
    [occurrence] = run(runtime, service.tick(at("2026-03-30T07:00:05+00:00")))
    assert occurrence["scheduled_for"] == "2026-03-30T07:00:00+00:00"
    wait_ended(runtime, service, task["id"])
    assert run(runtime, service.get("default", task["id"]))["next_run_at"] == "2026-03-31T07:00:00+00:00"
    run(runtime, service.pause("default", task["id"]))
    clock.now = at("2026-10-23T12:00:00+00:00")  # a Friday, the last weekday before the autumn change
    resumed = run(runtime, service.resume("default", task["id"]))
    assert resumed["next_run_at"] == "2026-10-26T08:00:00+00:00" and resumed["timezone"] == PARIS  # CET
    utc = run(runtime, service.create("default", {"message": "x", "cron": "0 9 * * 1-5"}))
    assert utc["timezone"] == "UTC" and utc["next_run_at"] == "2026-10-26T09:00:00+00:00"
    assert run(runtime, store.get_task(utc["id"], "default"))["timezone"] == "UTC"  # stored explicitly
    interval = run(runtime, service.create("default", {"message": "x", "every_seconds": 60}))
    assert interval["timezone"] is None


def test_a_task_whose_zone_is_unknown_here_does_not_stop_the_others(env):
    """A zone stored on a machine whose tz database knew it: the pass skips that task and says why."""
    agent, runtime, service, clock, _ = env
    good = run(runtime, service.create("default", {"message": "x", "cron": "0 * * * *"}))
    odd = run(runtime, service.create("default", {"message": "y", "cron": "0 * * * *", "timezone": PARIS}))
    store = run(runtime, runtime.store()).schedules
    run(runtime, store.update_task(odd["id"], timezone="Mars/Olympus"))
    [occurrence] = run(runtime, service.tick(T0 + HOUR))
    assert occurrence["task_id"] == good["id"]
    odd = run(runtime, service.get("default", odd["id"]))
    assert "Mars/Olympus" in odd["last_error"] and odd["run_count"] == 0
    wait_ended(runtime, service, good["id"])
