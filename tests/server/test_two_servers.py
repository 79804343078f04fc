"""Two real ``jupyter server`` processes on one PostgreSQL (as JupyterHub pods would share one).

A run started on server A is listed, joined and cancelled from server B, and interrupted by a new run
with ``multitask_strategy="interrupt"`` on B; A is SIGKILLed mid-run
and B recovers the run at once (same host: A's pid is gone), or through its lease when B plays another
host (``DEER_FLOW_HOST_ID``); a server restarted with the host name and pid its dead predecessor recorded
still recovers that run. Each test has a database of its own. Leases are
short here and every wait is on a condition with a generous timeout (no wall-clock assertions).
"""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import sqlalchemy as sa
from langgraph_sdk import get_sync_client
from langgraph_sdk.errors import ConflictError

from tests.persistence.backends import database_target

from .conftest import write_config
from .e2e import JupyterServer, until

SLOW = "tick " * 600  # one word per 40 ms: a run streams far longer than the journal's 5 s partial pace
FAST = "Answered by server B."
MSG = {"messages": [{"role": "user", "content": "go"}]}
TOKEN = "tok-alice"
LEASES = {"lease_seconds": 4, "lease_renew_seconds": 0.5, "recover_interval_seconds": 0.5}


@pytest.fixture
def database_url(tmp_path) -> Iterator[str]:
    with database_target("postgres", tmp_path) as target:
        assert target.url
        yield target.url


def _server(root: Path, url: str, responses: list, latency: float, host: str | None = None) -> JupyterServer:
    root.mkdir()
    config = write_config(root / "config.yaml", responses, latency=latency, extra={
        "title": {"enabled": False}, "database": {"backend": "postgres", "url": url}, "runs": LEASES})
    env = {"DEER_FLOW_HOST_ID": host} if host else None  # plays a pod on another machine
    return JupyterServer(root, config, users={TOKEN: "alice"}, extra_env=env)  # one user, known to both


@pytest.fixture
def servers(tmp_path, database_url) -> Iterator[tuple[JupyterServer, JupyterServer]]:
    a = _server(tmp_path / "a", database_url, [SLOW] * 20, 0.04)
    b = _server(tmp_path / "b", database_url, [FAST] * 20, 0.0)
    try:
        a.start()
        sdk(a).threads.create()  # A bootstraps the schema before B opens the database
        b.start()
        yield a, b
    finally:
        a.stop()
        b.stop()


def sdk(server: JupyterServer):
    return get_sync_client(url=server.api, api_key=None, headers=server.headers(TOKEN), timeout=120)


def journal(server: JupyterServer, tid: str, rid: str, event_type: str | None = None) -> list[dict]:
    params = {"event_type": event_type} if event_type else {}
    reply = httpx.get(f"{server.api}/threads/{tid}/runs/{rid}/events", params=params,
                      headers=server.headers(TOKEN), timeout=60)
    reply.raise_for_status()
    return reply.json()["data"]


def start_slow_run(a: JupyterServer, b: JupyterServer) -> tuple[str, str, str]:
    """A run on A, seen from B with a partial answer in the shared journal: ``(thread, run, partial text)``."""
    tid = sdk(a).threads.create()["thread_id"]
    rid = sdk(a).runs.create(tid, "lead_agent", input=MSG)["run_id"]
    partials = until(lambda: journal(b, tid, rid, "ai_partial"))
    assert isinstance(partials, list)
    return tid, rid, partials[-1]["payload"]["content"]


def test_a_run_of_server_a_is_listed_joined_and_cancelled_from_server_b(servers):
    a, b = servers
    tid, rid, partial = start_slow_run(a, b)
    assert partial.startswith("tick")
    client = sdk(b)
    listed = client.runs.list(tid)
    assert [r["run_id"] for r in listed] == [rid] and listed[0]["status"] == "running"
    assert client.runs.get(tid, rid)["status"] == "running"

    parts: list = []
    joined = threading.Event()

    def join() -> None:
        for part in sdk(b).runs.join_stream(tid, rid, stream_mode=["messages-tuple", "values", "end"]):
            parts.append(part)
            if part.event == "messages":
                joined.set()

    follower = threading.Thread(target=join, daemon=True)
    follower.start()
    assert joined.wait(180), "B's join stream replayed nothing"
    replayed = "".join(p.data[0]["content"] for p in parts if p.event == "messages")
    assert replayed.startswith(partial)  # the journal so far, as message deltas

    thread_events: list[str] = []  # GET /threads/{id}/stream on B joins the thread's run on A

    def join_thread() -> None:
        url = f"{b.api}/threads/{tid}/stream?stream_mode=messages-tuple&stream_mode=end"
        with httpx.stream("GET", url, headers=b.headers(TOKEN), timeout=180) as reply:
            for line in reply.iter_lines():
                if line.startswith("event: "):
                    thread_events.append(line[len("event: "):])

    thread_follower = threading.Thread(target=join_thread, daemon=True)
    thread_follower.start()
    until(lambda: "messages" in thread_events)

    client.runs.cancel(tid, rid, wait=True)  # A's lease renewal reads the request and cancels its run
    run = client.runs.get(tid, rid)
    assert (run["status"], run["stop_reason"]) == ("interrupted", "cancelled")
    assert sdk(a).runs.get(tid, rid)["status"] == "interrupted"
    follower.join(180)
    thread_follower.join(180)
    assert not follower.is_alive() and not thread_follower.is_alive(), "B's join streams did not end with the run"
    assert "messages" in thread_events and thread_events[-2:] == ["error", "end"]
    events = [p.event for p in parts]
    assert events[0] == "metadata" and events[-3:] == ["values", "error", "end"]
    assert parts[-1].data["status"] == "interrupted"
    text = "".join(p.data[0]["content"] for p in parts if p.event == "messages")
    assert text.startswith(replayed) and SLOW.startswith(text)

    final = client.runs.join(tid, rid)  # the blocking join of a finished run: the thread's values
    assert final["__error__"]["stop_reason"] == "cancelled"
    assert client.threads.get(tid)["status"] == "idle"
    assert client.runs.wait(tid, "lead_agent", input=MSG)["messages"][-1]["content"] == FAST  # B takes the thread


def test_a_run_on_server_b_with_multitask_interrupt_stops_server_a_s_run_first(servers):
    a, b = servers
    tid, rid, _ = start_slow_run(a, b)
    client = sdk(b)
    with pytest.raises(ConflictError) as refused:  # the default strategy refuses: the thread is busy elsewhere
        client.runs.create(tid, "lead_agent", input=MSG)
    assert refused.value.response.status_code == 409
    answer = client.runs.wait(tid, "lead_agent", input=MSG, multitask_strategy="interrupt")
    assert answer["messages"][-1]["content"] == FAST
    run = sdk(a).runs.get(tid, rid)  # A carried out B's request before B's run was admitted
    assert (run["status"], run["stop_reason"]) == ("interrupted", "cancelled")
    assert [r["status"] for r in client.runs.list(tid)] == ["success", "interrupted"]


def test_a_killed_server_s_run_is_recovered_by_the_other_and_the_thread_takes_new_runs(servers):
    a, b = servers
    tid, rid, partial = start_slow_run(a, b)
    client = sdk(b)
    a.kill()  # SIGKILL mid-run: nothing is stored, the lease just stops being renewed

    until(lambda: client.runs.get(tid, rid)["status"] != "running")
    run = client.runs.get(tid, rid)
    assert (run["status"], run["stop_reason"]) == ("error", "orphan_recovered")
    assert run["error"]["type"] == "OrphanRecovered"
    assert "its process died" in run["error"]["message"]  # same host: B saw A's pid gone, no lease wait

    def marked() -> dict | None:
        last = client.threads.get_state(tid)["values"].get("messages", [{}])[-1]
        return last if last.get("additional_kwargs", {}).get("deerflow_interrupted") else None

    last = until(marked)
    assert isinstance(last, dict)
    assert last["content"].startswith(partial) and last["additional_kwargs"]["stop_reason"] == "orphan_recovered"
    assert client.threads.get(tid)["status"] == "error"

    state = client.runs.wait(tid, "lead_agent", input=MSG)
    assert state["messages"][-1]["content"] == FAST
    assert client.runs.list(tid)[0]["status"] == "success"


def _fake_owner(url: str, run_id: str, owner: str) -> int:
    """Record ``owner`` as the run's owner, as the lease code writes it; returns the rows changed."""
    import asyncpg

    async def update() -> int:
        dsn = sa.make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
        conn = await asyncpg.connect(dsn, timeout=30)
        try:
            status = await conn.execute("UPDATE runs SET owner = $1 WHERE run_id = $2 AND status = 'running'",
                                        owner, run_id)
        finally:
            await conn.close()
        return int(status.split()[-1])

    return asyncio.run(update())


def test_a_server_restarted_with_its_predecessors_host_and_pid_recovers_the_run(tmp_path, database_url):
    # a pod restarted in place: same host name and (often) the same pid as the process that died
    server = _server(tmp_path / "pod", database_url, [SLOW] * 20, 0.04)
    try:
        server.start()
        client = sdk(server)
        tid = client.threads.create()["thread_id"]
        rid = client.runs.create(tid, "lead_agent", input=MSG)["run_id"]
        until(lambda: journal(server, tid, rid, "ai_partial"))
        server.kill()

        faked: list[str] = []

        def same_identity(pid: int) -> None:  # before the new process reads the database
            owner = f"{socket.gethostname()}:{pid}:0dead0"
            assert _fake_owner(database_url, rid, owner) == 1
            faked.append(owner)

        server.start(on_spawn=same_identity)
        assert server.proc is not None and faked == [f"{socket.gethostname()}:{server.proc.pid}:0dead0"]
        until(lambda: sdk(server).runs.get(tid, rid)["status"] != "running")
        run = sdk(server).runs.get(tid, rid)
        assert (run["status"], run["stop_reason"]) == ("error", "orphan_recovered")
        assert run["error"]["owner"] == faked[0]  # recovered although its owner "is" this very process
        again = sdk(server).runs.create(tid, "lead_agent", input=MSG)["run_id"]  # the thread is free again
        sdk(server).runs.cancel(tid, again, wait=True)
        assert sdk(server).runs.get(tid, again)["status"] == "interrupted"
    finally:
        server.stop()


def test_a_server_of_another_host_waits_for_the_lease_of_a_killed_run(tmp_path, database_url):
    a = _server(tmp_path / "a", database_url, [SLOW] * 20, 0.04, host="pod-a")
    b = _server(tmp_path / "b", database_url, [FAST] * 20, 0.0, host="pod-b")
    try:
        a.start()
        sdk(a).threads.create()
        b.start()
        tid, rid, _ = start_slow_run(a, b)
        client = sdk(b)
        a.kill()
        until(lambda: client.runs.get(tid, rid)["status"] != "running")
        run = client.runs.get(tid, rid)
        assert (run["status"], run["stop_reason"]) == ("error", "orphan_recovered")
        # B cannot tell whether a process of another host lives: only the expired lease let it recover the run
        assert "its lease expired" in run["error"]["message"]
        assert client.runs.wait(tid, "lead_agent", input=MSG)["messages"][-1]["content"] == FAST
    finally:
        a.stop()
        b.stop()
