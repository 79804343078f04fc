"""``agent.schedules``, one API over two backends: an embedded ``DeerFlow`` and a real ``jupyter server``.

Same answers (validated against the route models), same exceptions. The server's scheduler loop runs,
but every task here ticks hourly at most, so only manual triggers dispatch.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import time
from zoneinfo import ZoneInfo

import pytest

from deerflow_nb.errors import ConflictError, NotFoundError, UsageError
from deerflow_nb.persistence.schedules import ActiveScheduledRunConflict
from deerflow_nb.runtime.schedule_schemas import ScheduledTaskResponse, ScheduledTaskRunResponse
from tests.client.conftest import two_backend_client

SLOW = "tick " * 60  # with 50 ms per chunk: a run that stays active for a few seconds


@pytest.fixture(scope="module", params=["embedded", "server"])
def agent(request, tmp_path_factory):
    with two_backend_client(request.param, tmp_path_factory.mktemp(f"schedules-{request.param}"), {
        "config_version": 1,
        "models": [{"name": "scripted", "use": "deerflow_nb.testing:ScriptedChatModel",
                    "responses": [SLOW, *(f"answer {i}" for i in range(8))], "latency": 0.05}],
        "memory": {"enabled": False}, "title": {"enabled": False},
    }) as client:
        yield client


def _ended(agent, task_id, count):
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        runs = agent.schedules.runs(task_id)
        if sum(r["status"] not in {"queued", "running"} for r in runs) >= count:
            return runs
        time.sleep(0.1)
    raise AssertionError(f"occurrences never ended: {runs}")


def test_definitions_round_trip(agent):
    task = agent.schedules.create("weekly digest", cron="0 9 * * 1")
    ScheduledTaskResponse.model_validate(task)
    assert (task["schedule_type"], task["cron"], task["context_mode"], task["status"], task["run_count"]) == (
        "cron", "0 9 * * 1", "fresh_thread_per_run", "active", 0)
    assert dt.datetime.fromisoformat(task["next_run_at"]).weekday() == 0  # a Monday, 09:00 UTC
    assert task["timezone"] == "UTC"  # said explicitly when none was given
    hourly = agent.schedules.create("hourly", every=dt.timedelta(hours=1))
    assert hourly["every_seconds"] == 3600.0 and hourly["schedule_type"] == "interval"
    assert hourly["timezone"] is None  # an interval has no zone
    assert [t["id"] for t in agent.schedules.list()][-2:] == [task["id"], hourly["id"]]
    assert agent.schedules.get(task["id"]) == task
    paused = agent.schedules.pause(task["id"])
    assert paused["status"] == "paused" and paused["next_run_at"] is None
    resumed = agent.schedules.resume(task["id"])
    assert resumed["status"] == "active" and resumed["next_run_at"] == task["next_run_at"]
    agent.schedules.delete(task["id"])
    agent.schedules.delete(hourly["id"])
    with pytest.raises(NotFoundError):
        agent.schedules.get(task["id"])
    with pytest.raises(NotFoundError):
        agent.schedules.trigger(task["id"])


def test_a_cron_task_in_a_time_zone(agent):
    paris = ZoneInfo("Europe/Paris")
    task = agent.schedules.create("standup", cron="0 9 * * 1-5", timezone="Europe/Paris")
    ScheduledTaskResponse.model_validate(task)
    assert task["timezone"] == "Europe/Paris" and task["cron"] == "0 9 * * 1-5"
    following = dt.datetime.fromisoformat(task["next_run_at"])
    assert following.utcoffset() == dt.timedelta(0)  # next_run_at stays UTC ...
    local = following.astimezone(paris)  # ... and is 09:00 on a weekday in Paris (07:00 or 08:00 UTC)
    assert (local.hour, local.minute, local.weekday() < 5) == (9, 0, True)
    assert following.hour == 9 - local.utcoffset() // dt.timedelta(hours=1)
    assert agent.schedules.get(task["id"]) == task
    assert agent.schedules.resume(agent.schedules.pause(task["id"])["id"])["next_run_at"] == task["next_run_at"]
    york = agent.schedules.create("open", cron="30 9 * * 1-5", timezone=ZoneInfo("America/New_York"))
    assert york["timezone"] == "America/New_York"
    local = dt.datetime.fromisoformat(york["next_run_at"]).astimezone(ZoneInfo("America/New_York"))
    assert (local.hour, local.minute) == (9, 30)
    for item in (task, york):
        agent.schedules.delete(item["id"])


def test_invalid_schedules_are_refused_alike(agent):
    before = agent.schedules.list()
    for kwargs, field in [({"cron": "every day"}, "cron"), ({"every": 0.1}, "every_seconds"),
                          ({"cron": "* * * * *", "every": 60}, "exactly one"), ({}, "exactly one"),
                          ({"every": "60"}, "every_seconds"), ({"every": 60, "overlap": "queue"}, "overlap_policy"),
                          ({"cron": "0 9 * * *", "timezone": "Mars/Olympus"}, "timezone: .*unknown IANA time zone"),
                          ({"cron": "0 9 * * *", "timezone": 2}, "timezone"),
                          ({"every": 60, "timezone": "Europe/Paris"}, "timezone: only for a cron")]:
        with pytest.raises(UsageError, match=field):
            agent.schedules.create("x", **kwargs)
    with pytest.raises(UsageError, match="thread"):
        agent.schedules.create("x", every=60, thread=42)
    with pytest.raises(NotFoundError):  # a thread this user does not have
        agent.schedules.create("x", every=60, thread="no-such-thread")
    with pytest.raises(UsageError, match="task_id"):
        agent.schedules.get(5)
    with pytest.raises(UsageError, match="limit"):
        agent.schedules.runs("abc", limit=0)
    assert agent.schedules.list() == before  # nothing stored


def test_trigger_runs_now_and_refuses_a_second_active_run(agent):
    task = agent.schedules.create("report", every=3600)
    first = agent.schedules.trigger(task["id"])
    ScheduledTaskRunResponse.model_validate(first)
    assert first["trigger"] == "manual" and first["status"] == "running" and first["run_id"]
    with pytest.raises(ActiveScheduledRunConflict) as info:  # 409 over HTTP, the same class
        agent.schedules.trigger(task["id"])
    assert isinstance(info.value, ConflictError)
    [ended] = _ended(agent, task["id"], 1)
    assert ended["status"] == "success" and ended["finished_at"]
    assert agent.thread(first["thread_id"]).messages[-1].content == SLOW
    second = agent.schedules.trigger(task["id"])  # a fresh thread each time
    assert second["thread_id"] != first["thread_id"]
    runs = _ended(agent, task["id"], 2)
    assert [r["id"] for r in runs] == [second["id"], first["id"]]  # newest first
    task = agent.schedules.get(task["id"])
    assert task["run_count"] == 2 and task["last_run_id"] == second["run_id"]
    agent.schedules.delete(task["id"])


def test_the_scheduler_loop_is_the_servers(agent):
    from deerflow_nb.client.http import HttpBackend

    if isinstance(agent.backend, HttpBackend):  # the server runs its own; a client cannot start one there
        with pytest.raises(UsageError, match="embedded"):
            agent.schedules.start_scheduler()
    else:  # a kernel is not a scheduler unless asked
        runtime = agent.backend.local("runtime")
        assert not runtime.schedules.running
        agent.schedules.start_scheduler(poll_seconds=3600)
        assert runtime.schedules.running


def test_async_twins(agent):
    async def go():
        task = await agent.schedules.acreate("async", every=3600)
        assert await agent.schedules.aget(task["id"]) == task
        assert task["id"] in [t["id"] for t in await agent.schedules.alist()]
        assert (await agent.schedules.apause(task["id"]))["status"] == "paused"
        assert (await agent.schedules.aresume(task["id"]))["status"] == "active"
        occurrence = await agent.schedules.atrigger(task["id"])
        assert [r["id"] for r in await agent.schedules.aruns(task["id"], limit=5)] == [occurrence["id"]]
        return task

    task = asyncio.run(go())
    _ended(agent, task["id"], 1)
    asyncio.run(agent.schedules.adelete(task["id"]))
    with pytest.raises(NotFoundError):
        agent.schedules.get(task["id"])
