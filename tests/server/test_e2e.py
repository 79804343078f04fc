"""End to end against a real ``jupyter server`` process (127.0.0.1, random port, token auth, isolated dirs)."""

from __future__ import annotations

import time

import httpx
import pytest
from langgraph_sdk import get_sync_client

import deerflow_nb as df

from .conftest import write_config
from .e2e import JupyterServer

SLOW = "tick " * 80  # one word per 25 ms: ~2 s per run
MSG = {"messages": [{"role": "user", "content": "go"}]}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("e2e")
    config = write_config(root / "config.yaml", [SLOW] * 50, latency=0.025)
    # two users, each identified by their token (the stock token auth is used by the restart test)
    srv = JupyterServer(root, config, users={"tok-alice": "alice", "tok-bob": "bob"}).start()
    yield srv
    srv.stop()


def sdk(server: JupyterServer, token: str | None = None):
    token = token or ("tok-alice" if server.users else server.token)
    return get_sync_client(url=server.api, api_key=None, headers=server.headers(token))


def wait_status(client, tid, rid, wanted, timeout=30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = client.runs.get(tid, rid)["status"]
        if status in wanted:
            return status
        time.sleep(0.05)
    raise AssertionError(f"run {rid} never reached {wanted}")


def test_streaming_with_langgraph_sdk(server):
    client = sdk(server)
    tid = client.threads.create()["thread_id"]
    parts = list(client.runs.stream(tid, "lead_agent", input=MSG, stream_mode=["values", "messages-tuple"]))
    assert parts[0].event == "metadata" and parts[-1].event == "values"  # no ``end``: LangGraph sends none
    text = "".join(p.data[0]["content"] for p in parts if p.event == "messages"
                   and p.data[0]["type"] == "AIMessageChunk")
    assert text.split() == SLOW.split()
    assert client.threads.get_state(tid)["values"]["messages"][-1]["content"].split() == SLOW.split()


def test_reconnect_with_last_event_id_mid_run(server):
    client = sdk(server)
    tid = client.threads.create()["thread_id"]
    run = client.runs.create(tid, "lead_agent", input=MSG)
    modes = ["values", "messages-tuple", "custom", "end", "progress"]  # every event the run streams
    url = f"{server.api}/threads/{tid}/runs/{run['run_id']}/stream?" + "&".join(f"stream_mode={m}" for m in modes)
    seen: list[tuple[str, str]] = []
    from_start = {**server.headers("tok-alice"), "Last-Event-ID": "-1"}  # a join without it gets what comes next
    with httpx.stream("GET", url, headers=from_start, timeout=30) as response:
        event_id = None
        for line in response.iter_lines():
            if line.startswith("id: "):
                event_id = line[4:]
            elif line.startswith("event: "):
                kind = line[7:]
            elif line == "" and event_id is not None:
                seen.append((event_id, kind))
                event_id = None
                if len(seen) == 10:
                    break  # drop the connection mid-run
    assert client.runs.get(tid, run["run_id"])["status"] == "running"  # the run kept going
    resumed = [(p.id, p.event) for p in client.runs.join_stream(tid, run["run_id"], last_event_id=seen[-1][0],
                                                                 stream_mode=modes)
               if p.id]
    ids = [int(i) for i, _ in seen + resumed]
    assert ids == list(range(1, len(ids) + 1))  # no event lost, none twice
    assert resumed[-1][1] == "end"


def test_conflict_on_busy_thread_and_cancel(server):
    client = sdk(server)
    tid = client.threads.create()["thread_id"]
    run = client.runs.create(tid, "lead_agent", input=MSG)
    response = httpx.post(f"{server.api}/threads/{tid}/runs", headers=server.headers("tok-alice"),
                          json={"assistant_id": "lead_agent", "input": MSG}, timeout=30)
    assert response.status_code == 409 and set(response.json()) >= {"message", "reason"}
    wait_status(client, tid, run["run_id"], {"running"})
    client.runs.cancel(tid, run["run_id"], wait=True)
    assert client.runs.get(tid, run["run_id"])["status"] == "interrupted"
    again = client.runs.wait(tid, "lead_agent", input=MSG)
    assert again["messages"][-1]["type"] == "ai"


def test_remote_client_over_http(server):
    remote = df.DeerFlow.connect(url=server.api, token="tok-alice")
    try:
        thread = remote.thread()
        assert thread.chat("hello").split() == SLOW.split()
        events = list(thread.stream("again"))
        assert events[-1].type == "end" and any(e.type == "messages-tuple" for e in events)
        run = thread.start("third")
        assert run.wait().split() == SLOW.split()
        assert [type(m).__name__ for m in thread.messages][:2] == ["HumanMessage", "AIMessage"]
        assert len(thread.history(limit=2)) == 2
        assert thread.id in [t["thread_id"] for t in remote.threads()]
    finally:
        remote.close()


def test_server_killed_mid_run_frees_its_threads_at_restart(tmp_path):
    # default leases (30 s): the restarted server recovers the runs of its dead predecessor at
    # start (same host, the holder's pid is gone), so the next message is accepted at once
    config = write_config(tmp_path / "config.yaml", [SLOW] * 40, latency=0.05)
    srv = JupyterServer(tmp_path / "srv", config).start()
    try:
        client = sdk(srv)
        tid = client.threads.create()["thread_id"]
        for cycle in range(10):
            run = client.runs.create(tid, "lead_agent", input=MSG)
            wait_status(client, tid, run["run_id"], {"running"})
            srv.kill()
            srv.start()
            client = sdk(srv)
            recovered = client.runs.get(tid, run["run_id"])
            assert (recovered["status"], recovered["stop_reason"]) == ("error", "orphan_recovered"), cycle
            assert client.threads.get(tid)["status"] == "error", cycle
            response = httpx.post(f"{srv.api}/threads/{tid}/runs", headers=srv.headers(),
                                  json={"assistant_id": "lead_agent", "input": MSG}, timeout=60)
            assert response.status_code == 200, (cycle, response.text)  # no 409 while a lease runs out
            client.runs.join(tid, response.json()["run_id"])
            assert client.runs.get(tid, response.json()["run_id"])["status"] == "success", cycle
        assert client.threads.get_state(tid)["values"]["messages"][-1]["type"] == "ai"
    finally:
        srv.stop()


def test_cross_user_isolation(server):
    srv = server
    alice, bob = sdk(srv, "tok-alice"), sdk(srv, "tok-bob")
    tid = alice.threads.create()["thread_id"]
    alice.runs.wait(tid, "lead_agent", input=MSG)
    rid = alice.runs.list(tid)[0]["run_id"]
    assert httpx.get(f"{srv.api}/health", headers=srv.headers("tok-bob")).json()["user_id"] == "bob"
    for path in (f"/threads/{tid}", f"/threads/{tid}/state", f"/threads/{tid}/runs/{rid}",
                 f"/threads/{tid}/runs/{rid}/events", f"/threads/{tid}/runs",
                 f"/threads/{tid}/artifacts/mnt/user-data/outputs/x.txt"):
        response = httpx.get(srv.api + path, headers=srv.headers("tok-bob"))
        assert response.status_code == 404, path
        assert httpx.get(srv.api + path, headers=srv.headers("tok-alice")).status_code in {200, 404}
    assert bob.threads.search() == []
    stolen = httpx.post(f"{srv.api}/threads/{tid}/runs", headers=srv.headers("tok-bob"),
                        json={"assistant_id": "lead_agent", "input": MSG})
    assert stolen.status_code == 404
    # checkpoints: bob can neither read alice's, nor write a new one, nor run from one
    cid = alice.threads.get_state(tid)["checkpoint_id"]
    bob_headers = srv.headers("tok-bob")
    for method, path, body in (("GET", f"/threads/{tid}/state/{cid}", None),
                               ("POST", f"/threads/{tid}/state/checkpoint", {"checkpoint": {"checkpoint_id": cid}}),
                               ("POST", f"/threads/{tid}/state", {"values": {"title": "bob's"}}),
                               ("POST", f"/threads/{tid}/runs", {"assistant_id": "lead_agent", "input": MSG,
                                                                 "checkpoint_id": cid})):
        assert httpx.request(method, srv.api + path, headers=bob_headers, json=body).status_code == 404, path
    assert alice.threads.get_state(tid)["checkpoint_id"] == cid  # nothing was written
    assert httpx.get(f"{srv.api}/health", headers=srv.headers("nobody")).status_code in {401, 403}
    assert tid in [t["thread_id"] for t in alice.threads.search(limit=100)]
    assert (srv.root / "deerflow-home/users/alice/threads" / tid).is_dir()


def test_a_queued_run_survives_a_restart_and_runs_after_the_recovered_one(tmp_path):
    # answers depend on the input only, so the restarted server's model answers the queued run as the first would
    config = write_config(tmp_path / "config.yaml", [], extra={"models": [
        {"name": "parity", "use": "tests.client.parity_models:ParityModel", "latency": 0.05}]})
    srv = JupyterServer(tmp_path / "srv", config).start()
    try:
        client = sdk(srv)
        tid = client.threads.create()["thread_id"]
        first = client.runs.create(tid, "lead_agent", input={"messages": [{"role": "user", "content": "slow please"}]})
        wait_status(client, tid, first["run_id"], {"running"})
        queued = client.runs.create(tid, "lead_agent", input={"messages": [{"role": "user", "content": "next"}]},
                                    multitask_strategy="enqueue")
        assert queued["status"] == "pending" and queued["multitask_strategy"] == "enqueue"
        assert client.runs.get(tid, queued["run_id"])["status"] == "pending"
        srv.kill()  # the active run dies with the server; the queued one is only a row
        srv.start()
        client = sdk(srv)
        recovered = client.runs.get(tid, first["run_id"])
        assert (recovered["status"], recovered["stop_reason"]) == ("error", "orphan_recovered")
        client.runs.join(tid, queued["run_id"])
        assert client.runs.get(tid, queued["run_id"])["status"] == "success"
        messages = client.threads.get_state(tid)["values"]["messages"]
        assert [m["content"] for m in messages if m["type"] == "human"] == ["slow please", "next"]
        assert messages[-1]["content"] == "Answer to next."
    finally:
        srv.stop()
