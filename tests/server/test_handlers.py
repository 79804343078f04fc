"""In-process handler tests (pytest-jupyter): routes, validation, errors, OpenAPI, SSE."""

from __future__ import annotations

import json

import pytest
from tornado.httpclient import HTTPClientError

from .conftest import ANSWER

MSG = {"messages": [{"role": "user", "content": "hi"}]}


async def call(jp_fetch, *parts, method="GET", body=None, **kwargs):
    if body is not None:
        kwargs["body"] = json.dumps(body)
    response = await jp_fetch("deerflow", "api", *parts, method=method, **kwargs)
    return json.loads(response.body) if response.body else None


async def expect_error(jp_fetch, status, *parts, **kwargs):
    with pytest.raises(HTTPClientError) as info:
        await call(jp_fetch, *parts, **kwargs)
    assert info.value.code == status
    payload = json.loads(info.value.response.body)
    assert set(payload) >= {"message", "reason"}
    return payload


async def test_health_and_openapi_cover_every_route(jp_fetch):
    health = await call(jp_fetch, "health")
    assert health["status"] == "ok" and health["database"] == "sqlite" and health["user_id"] == "default"
    spec = await call(jp_fetch, "openapi.json")
    from jupyter_ext.handlers import default_handlers

    assert len(spec["paths"]) >= len(default_handlers)  # templated routes served for fixed values are split
    run_create = spec["paths"]["/threads/{thread_id}/runs/stream"]["post"]
    assert run_create["requestBody"]["content"]["application/json"]["schema"]["$ref"].endswith("RunCreateRequest")
    assert "RunCreateRequest" in spec["components"]["schemas"]


async def test_thread_lifecycle_and_wait(jp_fetch):
    thread = await call(jp_fetch, "threads", method="POST", body={"metadata": {"project": "demo"}})
    tid = thread["thread_id"]
    assert thread["status"] == "idle" and thread["metadata"]["project"] == "demo"
    state = await call(jp_fetch, "threads", tid, "runs", "wait", method="POST",
                       body={"assistant_id": "lead_agent", "input": MSG})
    assert state["messages"][-1]["content"] == ANSWER
    got = await call(jp_fetch, "threads", tid)
    assert got["values"]["messages"][-1]["content"] == ANSWER and got["title"]
    runs = await call(jp_fetch, "threads", tid, "runs")
    assert [r["status"] for r in runs] == ["success"]
    events = await call(jp_fetch, "threads", tid, "runs", runs[0]["run_id"], "events")
    assert [e["event_type"] for e in events["data"]][0] == "human_message"
    history = await call(jp_fetch, "threads", tid, "history", method="POST", body={"limit": 2})
    assert len(history) == 2 and history[0]["checkpoint"]["checkpoint_id"]
    assert await call(jp_fetch, "threads", tid, "history", method="POST", body={"limit": 0}) == []
    found = await call(jp_fetch, "threads", "search", method="POST", body={"metadata": {"project": "demo"}})
    assert [t["thread_id"] for t in found] == [tid]
    await call(jp_fetch, "threads", tid, method="DELETE")
    await expect_error(jp_fetch, 404, "threads", tid)


@pytest.mark.parametrize("body, field", [
    ({"input": MSG, "stream_mode": "messages"}, "stream_mode"),
    ({"input": MSG, "stream_mode": ["values", "events"]}, "stream_mode"),
    ({"input": MSG, "multitask_strategy": "later"}, "multitask_strategy"),
    ({"input": MSG, "durability": "sync"}, "durability"),
    ({"input": MSG, "checkpoint_during": True}, "checkpoint_during"),
    ({"input": MSG, "on_completion": "complete"}, "on_completion"),
    ({}, "input"),
])
async def test_run_requests_are_validated(jp_fetch, body, field):
    payload = await expect_error(jp_fetch, 422, "threads", "t-val", "runs", method="POST", body=body)
    assert field in payload["message"]


async def test_sdk_default_payload_and_messages_tuple_are_accepted(jp_fetch):
    body = {"input": MSG, "stream_mode": ["values", "messages-tuple"], "stream_subgraphs": False,
            "stream_resumable": False, "assistant_id": "lead_agent", "if_not_exists": "create",
            "on_disconnect": "continue", "multitask_strategy": "reject"}
    response = await jp_fetch("deerflow", "api", "threads", "t-sse", "runs", "stream", method="POST",
                              body=json.dumps(body))
    assert response.headers["Content-Type"].startswith("text/event-stream")
    text = response.body.decode()
    assert text.startswith("event: metadata\n")
    assert "event: messages\nid: " in text and text.rstrip().split("\n\n")[-1].startswith("event: values")
    assert "event: end" not in text  # DeerFlow's ``end`` only for streams that ask for it
    assert response.headers["Location"].endswith("/stream")
    assert response.headers["Content-Location"].endswith("/runs/" + response.headers["Location"].split("/")[-2])


async def test_errors_are_json_and_bad_json_is_400(jp_fetch):
    with pytest.raises(HTTPClientError) as info:
        await jp_fetch("deerflow", "api", "threads", method="POST", body="{not json")
    assert info.value.code == 400 and "not valid JSON" in json.loads(info.value.response.body)["message"]
    await expect_error(jp_fetch, 404, "threads", "nope", "state")
    await expect_error(jp_fetch, 404, "assistants", "other")
    await expect_error(jp_fetch, 422, "threads", method="POST", body={"thread_id": "../x"})


async def test_models_and_assistants(jp_fetch):
    models = await call(jp_fetch, "models")
    assert [m["name"] for m in models["models"]] == ["scripted"]
    assert (await call(jp_fetch, "models", "scripted"))["name"] == "scripted"
    assistants = await call(jp_fetch, "assistants", "search", method="POST", body={})
    assert assistants[0]["assistant_id"] == "lead_agent"


async def test_artifacts_uploads_and_workspace_routes(jp_fetch, home):
    tid = (await call(jp_fetch, "threads", method="POST", body={}))["thread_id"]
    outputs = home / "users/default/threads" / tid / "user-data/outputs"
    outputs.mkdir(parents=True)
    (outputs / "page.html").write_text("<script>alert(1)</script>")
    (outputs / "notes.txt").write_text("plain")
    page = await jp_fetch("deerflow", "api", "threads", tid, "artifacts", "mnt/user-data/outputs/page.html")
    assert page.headers["Content-Disposition"].startswith("attachment")
    assert page.headers["Content-Type"].startswith("text/html")
    notes = await jp_fetch("deerflow", "api", "threads", tid, "artifacts", "mnt/user-data/outputs/notes.txt")
    assert notes.body == b"plain" and "Content-Disposition" not in notes.headers
    await expect_error(jp_fetch, 404, "threads", tid, "artifacts", "mnt/user-data/outputs/missing.txt")
    with pytest.raises(HTTPClientError) as info:
        await jp_fetch("deerflow", "api", "threads", tid, "artifacts", "mnt/user-data/outputs/..%2F..%2Fsecret")
    assert info.value.code in {403, 404}

    boundary = "XyZ"
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"files\"; filename=\"data.csv\"\r\n"
            f"Content-Type: text/csv\r\n\r\na,b\n1,2\n\r\n--{boundary}--\r\n").encode()
    response = await jp_fetch("deerflow", "api", "threads", tid, "uploads", method="POST", body=body,
                              headers={"Content-Type": f"multipart/form-data; boundary={boundary}"})
    assert json.loads(response.body)["files"][0]["filename"] == "data.csv"
    listed = await call(jp_fetch, "threads", tid, "uploads", "list")
    assert [f["filename"] for f in listed["files"]] == ["data.csv"]

    changes = await call(jp_fetch, "threads", tid, "workspace-changes")
    assert changes["changes"] == [] and changes["thread_id"] == tid


async def test_unauthenticated_requests_are_refused(jp_fetch):
    for method, body in (("GET", None), ("POST", "{}")):
        with pytest.raises(HTTPClientError) as info:
            await jp_fetch("deerflow", "api", "threads", "search" if method == "POST" else "x",
                           method=method, body=body, headers={"Authorization": ""})
        assert info.value.code in {401, 403}
