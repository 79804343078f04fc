"""Streams that never lie, over HTTP: every event the client asked for arrives, or a ``gap`` says it did not.

- A reader that stops reading while the run emits megabytes of events is not buffered without
  bound: once it is ``stream_bridge.reader_queue_maxsize`` events behind it gets a ``gap`` naming
  the last id it had and the id it resumes at, and then the events from there, with their ids.
- A resume with ``Last-Event-ID`` after the finished run's channel was cleaned up gets a ``gap``
  (not a bare end) unless it had already seen the run's last event.
"""

from __future__ import annotations

import asyncio
import json
import socket
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from .conftest import ANSWER, write_config

ALL_MODES = ["values", "messages-tuple", "updates", "custom", "end", "progress"]


def _send_buffer_max() -> int:
    """The most a TCP socket's send buffer grows to here (Linux ``tcp_wmem``); 4 MiB elsewhere."""
    try:
        return int(Path("/proc/sys/net/ipv4/tcp_wmem").read_text().split()[2])
    except (OSError, ValueError, IndexError):
        return 4 << 20


# ~10 MB of token events (at least 2.5 times the server's socket buffer): far more than the buffers hold
WORDS = 400
WORD_SIZE = max(25_000, int(2.5 * _send_buffer_max()) // WORDS)
LONG_ANSWER = " ".join(f"{i:05d}" + "x" * (WORD_SIZE - 5) for i in range(WORDS))
READER_BOUND = 16


@pytest.fixture
def deerflow_config(request, tmp_path):
    answer = getattr(request, "param", ANSWER)
    return write_config(tmp_path / "config.yaml", [answer] * 4, extra={
        "title": {"enabled": False},
        "stream_bridge": {"queue_maxsize": 4, "reader_queue_maxsize": READER_BOUND}})


def _service(jp_serverapp):
    point = jp_serverapp.extension_manager.extension_points["deerflow"]
    return point.app.service


def parse_sse(text: str) -> list[dict]:
    """SSE frames as ``{"event", "id", "data"}`` (comments such as heartbeats left out)."""
    frames = []
    for block in text.split("\n\n"):
        fields: dict = {}
        for line in block.splitlines():
            if line.startswith(":") or ": " not in line:
                continue
            key, value = line.split(": ", 1)
            fields[key] = value
        if "event" in fields:
            frames.append({"event": fields["event"], "id": fields.get("id"), "data": json.loads(fields["data"])})
    return frames


async def _stream(jp_fetch, *parts, method="GET", body=None, last_event_id=None, params=None) -> list[dict]:
    headers = {"Last-Event-ID": last_event_id} if last_event_id else {}
    response = await jp_fetch("deerflow", "api", *parts, method=method, headers=headers, params=params,
                              **({"body": json.dumps(body)} if body is not None else {}))
    return parse_sse(response.body.decode())


@pytest.mark.parametrize("deerflow_config", [LONG_ANSWER], indirect=True, ids=["long-answer"])
async def test_a_stalled_reader_gets_a_gap_and_the_later_events_with_their_ids(
        jp_fetch, jp_serverapp, http_server_client, jp_base_url, jp_auth_header):
    await jp_fetch("deerflow", "api", "threads", method="POST", body=json.dumps({"thread_id": "t-slow"}))
    url = urlsplit(http_server_client.get_url(f"{jp_base_url}deerflow/api/threads/t-slow/runs/stream"))
    body = json.dumps({"input": {"messages": [{"role": "user", "content": "go"}]}, "stream_mode": ALL_MODES})
    head = [f"POST {url.path} HTTP/1.0", f"Host: {url.netloc}", "Content-Type: application/json",
            f"Content-Length: {len(body)}", *(f"{k}: {v}" for k, v in jp_auth_header.items())]
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # a small window: the server's writes back up
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, (url.hostname, url.port))
    reader, writer = await asyncio.open_connection(sock=sock, limit=1024)  # reads pause past 2 KiB unread
    writer.write(("\r\n".join(head) + "\r\n\r\n" + body).encode())
    await writer.drain()
    headers = (await reader.readuntil(b"\r\n\r\n")).decode()
    assert headers.startswith("HTTP/1.0 200") or headers.startswith("HTTP/1.1 200"), headers
    run_id = next(line.split("/runs/")[1].strip() for line in headers.splitlines()
                  if line.lower().startswith("content-location:"))

    # the reader stops reading; the run is not held up by it and finishes
    run = json.loads((await jp_fetch("deerflow", "api", "threads", "t-slow", "runs", run_id, "join")).body)
    assert "".join(m["content"] for m in run["messages"] if m["type"] == "ai") == LONG_ANSWER, str(run)[:3000]
    bridge = _service(jp_serverapp).engine.bridge
    assert len(bridge._channels[run_id].events) <= READER_BOUND  # not the ~700 events the run emitted

    text = (await asyncio.wait_for(reader.read(), 300)).decode()  # HTTP/1.0: the body ends at close
    writer.close()
    frames = parse_sse(text)
    assert frames[0]["event"] == "metadata"
    assert frames[-1]["event"] == "end" and frames[-1]["data"]["status"] == "success"
    gaps = [f for f in frames if f["event"] == "gap"]
    assert gaps, "a reader that fell behind must be told"
    # every event the run published is there, except exactly the ranges the gaps name
    previous, pending_gap, delivered = 0, None, 0
    for frame in frames[1:]:
        if frame["event"] == "gap":
            assert pending_gap is None and frame["id"] is None
            assert frame["data"]["type"] == "stream_replay_gap"
            assert frame["data"]["last_event_id"] == str(previous)
            pending_gap = frame["data"]
            continue
        current = int(frame["id"])
        if pending_gap is not None:
            assert pending_gap["resumed_at"] == str(current) and current > previous + 1
            pending_gap = None
        else:
            assert current == previous + 1, (previous, current)
        previous, delivered = current, delivered + 1
    assert pending_gap is None
    assert str(previous) == bridge.latest_id(run_id)
    assert delivered < previous  # some were skipped, each skip reported
    text_seen = "".join(f["data"][0]["content"] for f in frames if f["event"] == "messages")
    assert text_seen and text_seen in LONG_ANSWER and len(text_seen) < len(LONG_ANSWER)


async def test_resume_after_cleanup_gets_a_gap_unless_it_saw_the_last_event(jp_fetch, jp_serverapp):
    frames = await _stream(jp_fetch, "threads", "t-resume", "runs", "stream", method="POST",
                           body={"input": {"messages": [{"role": "user", "content": "hi"}]}, "stream_mode": ALL_MODES,
                                 "if_not_exists": "create"})
    assert frames[0]["event"] == "metadata" and frames[-1]["event"] == "end"
    run_id, last = frames[0]["data"]["run_id"], frames[-1]["id"]
    join = ("threads", "t-resume", "runs", run_id, "stream")
    modes = [("stream_mode", "values"), ("stream_mode", "end")]
    # while the channel is there: a join streams what comes next (nothing), "-1" replays the run from its start
    assert await _stream(jp_fetch, *join, params=modes) == []
    replay = await _stream(jp_fetch, *join, last_event_id="-1", params=[("stream_mode", m) for m in ALL_MODES])
    gap = replay[1]["data"]  # only stream_bridge.queue_maxsize (4) events are retained once the run ended
    assert replay[0]["event"] == "metadata" and replay[1]["event"] == "gap" and gap["last_event_id"] == "-1"
    assert replay[2:] == [f for f in frames[1:] if int(f["id"]) >= int(gap["resumed_at"])] and len(replay[2:]) == 4
    for odd in ("9" * 5000, "\u00b2", "abc", "0"):  # not an id of this run (too big, not ASCII digits, ...): the same
        again = await _stream(jp_fetch, *join, last_event_id=odd, params=[("stream_mode", m) for m in ALL_MODES])
        again = again[1:] if again[0]["event"] == "metadata" else again  # (a well-formed id beyond the run: none)
        assert again[0]["event"] == "gap" and again[0]["data"]["last_event_id"] == odd and again[1:] == replay[2:]
    service = _service(jp_serverapp)
    bridge = service.engine.bridge

    async def expire() -> None:
        bridge.expire(run_id)

    await service.call(expire())
    assert not bridge.has(run_id)

    resumed = await _stream(jp_fetch, *join, last_event_id="1", params=modes)
    assert [f["event"] for f in resumed] == ["gap", "end"]  # never a bare end
    assert resumed[0]["data"]["last_event_id"] == "1" and resumed[0]["data"]["resumed_at"] is None
    assert resumed[0]["data"]["journal"] == f"/threads/t-resume/runs/{run_id}/events"
    assert resumed[1]["data"]["status"] == "success"

    caught_up = await _stream(jp_fetch, *join, last_event_id=last, params=modes)
    assert [f["event"] for f in caught_up] == ["end"]  # it had everything: no gap

    bridge._final_ids.clear()  # as after a restart: nothing says what the client saw
    assert [f["event"] for f in await _stream(jp_fetch, *join, last_event_id=last, params=modes)] == ["gap", "end"]


def test_journal_cursors_are_ascii_digits_only():
    from jupyter_ext.handlers.follow import _journal_cursor

    assert _journal_cursor("j12") == 12
    for odd in ("j\u00b2", "j" + "9" * 5000, "j", "12", "-1", None):  # int() would raise on the first two
        assert _journal_cursor(odd) is None



MANY_WORDS = " ".join(f"word{i}" for i in range(60))


@pytest.mark.parametrize("deerflow_config", [MANY_WORDS], indirect=True, ids=["many-words"])
async def test_the_python_client_answers_from_the_state_after_a_gap(api_url, jp_auth_header, caplog):
    """A replay whose start is gone (4 events retained) must not return the truncated deltas as the answer."""
    import logging

    import deerflow_nb as df

    remote = df.DeerFlow.connect(url=api_url, token=jp_auth_header["Authorization"].split()[1])
    try:
        thread = await remote.athread()
        run = await thread.astart("go")
        assert await run.await_result() == MANY_WORDS
        backend = remote.backend
        outcome = await backend.loop.arun(backend.wait_run(thread.id, run.run_id))  # a fresh replay: start gone
        assert outcome.status == "success" and outcome.final_text == MANY_WORDS
        with caplog.at_level(logging.WARNING, logger="deerflow_nb.client.http"):
            replayed = [e async for e in backend.loop.aiterate(lambda: backend.run_batches(thread.id, run.run_id, 0))]
        assert replayed and "no longer has some of its events" in caplog.text
    finally:
        await remote.aclose()
