"""Scheduled runs in real ``jupyter server`` processes: the scheduler loop lives in the server.

A task survives a restart and a tick missed while the server was down runs once; an interval task
keeps ticking; two servers on one PostgreSQL database dispatch a due tick once. The scheduler polls
every 0.2 s here; every wait is on a condition with a generous timeout (no wall-clock assertions).
"""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
import time
from pathlib import Path
from zoneinfo import ZoneInfo

import httpx
import pytest
import sqlalchemy as sa

from tests.persistence.backends import database_target

from .conftest import write_config
from .e2e import JupyterServer, until

TOKEN = "tok-alice"
HOUR = 3600


def _server(root: Path, extra: dict | None = None) -> JupyterServer:
    root.mkdir()
    config = write_config(root / "config.yaml", [f"scheduled answer {i}" for i in range(20)],
                          extra={"title": {"enabled": False}, **(extra or {})})
    server = JupyterServer(root, config, users={TOKEN: "alice"})
    settings_file = root / "config" / "jupyter_server_config.json"
    settings = json.loads(settings_file.read_text())
    settings["DeerFlowExtension"]["scheduler_poll_seconds"] = 0.2
    settings_file.write_text(json.dumps(settings))
    return server


def call(server: JupyterServer, method: str, path: str, body: dict | None = None) -> httpx.Response:
    return httpx.request(method, f"{server.api}{path}", json=body, headers=server.headers(TOKEN), timeout=60)


def ended_runs(server: JupyterServer, task_id: str, count: int = 1) -> list[dict]:
    def ended() -> list[dict] | None:
        runs = call(server, "GET", f"/scheduled-tasks/{task_id}/runs").json()["runs"]
        return runs if sum(r["status"] not in {"queued", "running"} for r in runs) >= count else None

    return until(ended)  # type: ignore[return-value]


def test_a_task_survives_a_restart_and_missed_ticks_run_once(tmp_path):
    server = _server(tmp_path / "s")
    try:
        server.start()
        refused = call(server, "POST", "/scheduled-tasks", {"message": "x", "cron": "not cron"})
        assert refused.status_code == 422 and "cron" in refused.json()["message"]
        refused = call(server, "POST", "/scheduled-tasks", {"message": "x", "cron": "0 9 * * *",
                                                            "timezone": "Mars/Olympus"})
        assert refused.status_code == 422 and "timezone: " in refused.json()["message"]
        assert call(server, "GET", "/scheduled-tasks").json() == {"tasks": []}  # nothing stored
        zoned = call(server, "POST", "/scheduled-tasks", {"message": "standup", "cron": "0 9 * * 1-5",
                                                          "timezone": "Europe/Paris"}).json()
        local = dt.datetime.fromisoformat(zoned["next_run_at"]).astimezone(ZoneInfo("Europe/Paris"))
        assert zoned["timezone"] == "Europe/Paris" and (local.hour, local.minute) == (9, 0)
        assert call(server, "DELETE", f"/scheduled-tasks/{zoned['id']}").json()["success"]
        task = call(server, "POST", "/scheduled-tasks", {"message": "nightly", "every_seconds": HOUR}).json()
        server.stop()
        # five and a half hours of downtime: five ticks missed
        missed = time.time() - 5.5 * HOUR
        with sqlite3.connect(server.root / "deerflow-home" / "deerflow.db") as db:
            db.execute("UPDATE scheduled_tasks SET next_run_at = ? WHERE id = ?", (missed, task["id"]))
        restarted = time.time()
        server.start()
        [occurrence] = ended_runs(server, task["id"])
        assert occurrence["trigger"] == "scheduled" and occurrence["status"] == "success"
        assert dt.datetime.fromisoformat(occurrence["scheduled_for"]).timestamp() == pytest.approx(missed)
        stored = call(server, "GET", f"/scheduled-tasks/{task['id']}").json()
        assert stored["run_count"] == 1 and stored["last_run_id"] == occurrence["run_id"]
        assert dt.datetime.fromisoformat(stored["next_run_at"]).timestamp() > restarted  # no backlog left
        assert [r["id"] for r in call(server, "GET", f"/scheduled-tasks/{task['id']}/runs").json()["runs"]] == [
            occurrence["id"]]
        thread = call(server, "GET", f"/threads/{occurrence['thread_id']}/state").json()
        assert thread["values"]["messages"][-1]["content"] == "scheduled answer 0"
    finally:
        server.stop()


def test_an_interval_task_keeps_ticking_until_paused(tmp_path):
    server = _server(tmp_path / "s")
    try:
        server.start()
        task = call(server, "POST", "/scheduled-tasks", {"message": "tick", "every_seconds": 1}).json()
        runs = ended_runs(server, task["id"], 2)
        assert {r["trigger"] for r in runs} == {"scheduled"}
        assert len({r["thread_id"] for r in runs}) == len(runs)  # a fresh thread per run
        paused = call(server, "POST", f"/scheduled-tasks/{task['id']}/pause").json()
        assert paused["status"] == "paused" and paused["next_run_at"] is None
    finally:
        server.stop()


@pytest.fixture
def database_url(tmp_path):
    with database_target("postgres", tmp_path) as target:
        assert target.url
        yield target.url


def test_two_servers_on_one_database_dispatch_a_tick_once(tmp_path, database_url):
    database = {"database": {"backend": "postgres", "url": database_url}}
    a, b = _server(tmp_path / "a", database), _server(tmp_path / "b", database)
    try:
        a.start()
        task = call(a, "POST", "/scheduled-tasks", {"message": "shared", "every_seconds": HOUR}).json()
        b.start()
        assert call(b, "GET", f"/scheduled-tasks/{task['id']}").json()["id"] == task["id"]
        engine = sa.create_engine(sa.make_url(database_url).set(drivername="postgresql+psycopg"))
        try:
            with engine.begin() as conn:  # due now, for both servers' next pass
                conn.execute(sa.text("UPDATE scheduled_tasks SET next_run_at = :t WHERE id = :id"),
                             {"t": time.time() - 1, "id": task["id"]})
        finally:
            engine.dispose()
        [occurrence] = ended_runs(a, task["id"])
        assert occurrence["status"] == "success" and occurrence["trigger"] == "scheduled"
        stored = call(b, "GET", f"/scheduled-tasks/{task['id']}").json()
        assert stored["run_count"] == 1
        assert len(call(b, "GET", f"/scheduled-tasks/{task['id']}/runs").json()["runs"]) == 1  # no double dispatch
        other = call(b, "POST", f"/scheduled-tasks/{task['id']}/trigger").json()  # dispatched by B
        assert other["trigger"] == "manual"
        runs = ended_runs(a, task["id"], 2)
        assert [r["id"] for r in runs] == [other["id"], occurrence["id"]]
    finally:
        a.stop()
        b.stop()
