"""Rerun preparation, branches, checkout and fork routes: the official ``langgraph-sdk`` flow, strict bodies, openapi."""

from __future__ import annotations

import httpx
import pytest

from .test_handlers import call, expect_error
from .test_state_routes import _msg, deerflow_config  # noqa: F401  (the same ParityModel server config)


def _texts(values: dict) -> list[str]:
    return [m["content"] for m in values.get("messages", [])]


async def _two_turns(client) -> str:
    tid = (await client.threads.create())["thread_id"]
    await client.runs.wait(tid, "lead_agent", input=_msg("hello one"))
    await client.runs.wait(tid, "lead_agent", input=_msg("hello two"))
    return tid


async def test_regenerate_the_langgraph_way(lg_client):
    """A LangGraph client reruns a turn with what it already has: history, a checkpoint run, get_state."""
    tid = await _two_turns(lg_client)
    old_head = await lg_client.threads.get_state(tid)
    history = await lg_client.threads.get_history(tid, limit=50)
    (second_input,) = [h for h in history if h["metadata"]["source"] == "input"
                       and _texts(h["values"]) == ["hello one", "Answer to one."]]
    start = second_input["parent_checkpoint_id"]  # where the second turn started
    final = await lg_client.runs.wait(tid, "lead_agent", input=_msg("hello two"), checkpoint_id=start)
    assert _texts(final) == ["hello one", "Answer to one.", "hello two", "Answer to two."]
    assert final["messages"][-1]["id"] != old_head["values"]["messages"][-1]["id"]
    kept = await lg_client.threads.get_state(tid, checkpoint_id=old_head["checkpoint_id"])
    assert kept["values"] == old_head["values"]  # the old answer is still there
    # the extension's branches see the rerun as a sibling of the old turn
    branches = await lg_client.http.get(f"/threads/{tid}/branches")
    assert [b["kind"] for b in branches["branches"]] == ["original", "run"]
    assert branches["forks"][0]["checkpoint_id"] == start
    # update_state on the old tip, then back to it: the same as a checkout
    await lg_client.threads.update_state(tid, None, checkpoint_id=old_head["checkpoint_id"])
    assert (await lg_client.http.get(f"/threads/{tid}/branches"))["current"] == branches["branches"][0]["branch_id"]


async def test_prepare_then_run(lg_client):
    tid = await _two_turns(lg_client)
    prepared = await lg_client.http.post(f"/threads/{tid}/runs/regenerate/prepare", json={})
    assert prepared["metadata"]["replay_kind"] == "regenerate"
    assert prepared["input"]["messages"][0]["content"] == "hello two"
    assert prepared["checkpoint"] == {"thread_id": tid, "checkpoint_ns": "", "checkpoint_id": prepared["checkpoint_id"]}
    run = await lg_client.runs.create(tid, "lead_agent", input=prepared["input"],
                                      checkpoint_id=prepared["checkpoint_id"], metadata=prepared["metadata"])
    await lg_client.runs.join(tid, run["run_id"])
    stored = await lg_client.runs.get(tid, run["run_id"])
    assert stored["metadata"]["regenerate_from_run_id"] == prepared["run_id"]
    state = await lg_client.threads.get_state(tid)
    assert _texts(state["values"]) == ["hello one", "Answer to one.", "hello two", "Answer to two."]
    first = state["values"]["messages"][0]["id"]
    edit = await lg_client.http.post(f"/threads/{tid}/runs/edit-regenerate/prepare",
                                     json={"message_id": first, "content": "hello uno"})
    assert edit["metadata"]["replay_kind"] == "edit" and edit["input"]["messages"][0]["content"] == "hello uno"
    final = await lg_client.runs.wait(tid, "lead_agent", input=edit["input"], checkpoint=edit["checkpoint"],
                                      metadata=edit["metadata"])
    assert _texts(final) == ["hello uno", "Answer to uno."]
    info = await lg_client.http.get(f"/threads/{tid}/branches")
    assert [b["kind"] for b in info["branches"]] == ["original", "regenerate", "edit"]
    checked = await lg_client.http.post(f"/threads/{tid}/branches/checkout",
                                        json={"branch_id": info["branches"][0]["branch_id"]})
    assert checked["current"] == info["branches"][0]["branch_id"]
    state = await lg_client.threads.get_state(tid)
    assert _texts(state["values"])[-1] == "Answer to two."
    forked = await lg_client.http.post(f"/threads/{tid}/fork", json={"checkpoint_id": state["checkpoint_id"]})
    assert forked["workspace_clone_mode"] == "current_thread_best_effort" and forked["source_thread_id"] == tid
    assert (await lg_client.threads.get_state(forked["thread_id"]))["values"]["messages"] == state["values"]["messages"]


@pytest.mark.parametrize(("path", "body", "field"), [
    ("runs/regenerate/prepare", {"run_id": ""}, "run_id"),
    ("runs/regenerate/prepare", {"run_id": 5}, "run_id"),
    ("runs/regenerate/prepare", {"latest": True}, "latest"),
    ("runs/edit-regenerate/prepare", {"message_id": "m"}, "content"),
    ("runs/edit-regenerate/prepare", {"message_id": "m", "content": "  "}, "content"),
    ("runs/edit-regenerate/prepare", {"content": "x"}, "message_id"),
    ("branches/checkout", {}, "branch_id"),
    ("branches/checkout", {"branch_id": 3}, "branch_id"),
    ("fork", {"checkpoint_id": ""}, "checkpoint_id"),
    ("fork", {"checkpoint_id": "c", "thread": "x"}, "thread"),
])
async def test_bad_bodies_are_refused(jp_fetch, path, body, field):
    tid = (await call(jp_fetch, "threads", method="POST", body={}))["thread_id"]
    payload = await expect_error(jp_fetch, 422, "threads", tid, *path.split("/"), method="POST", body=body)
    assert field in payload["message"]


async def test_unknown_and_busy(jp_fetch, lg_client):
    for parts, body in ((("runs", "regenerate", "prepare"), {}), (("branches",), None), (("fork",), {"checkpoint_id": "c"}),
                        (("branches", "checkout"), {"branch_id": "b"})):
        await expect_error(jp_fetch, 404, "threads", "no-such-thread", *parts,
                           method="GET" if body is None else "POST", body=body)
    tid = await _two_turns(lg_client)
    await expect_error(jp_fetch, 404, "threads", tid, "runs", "regenerate", "prepare", method="POST",
                       body={"run_id": "no-such-run"})
    await expect_error(jp_fetch, 404, "threads", tid, "runs", "edit-regenerate", "prepare", method="POST",
                       body={"message_id": "no-such-message", "content": "x"})
    await expect_error(jp_fetch, 404, "threads", tid, "branches", "checkout", method="POST", body={"branch_id": "b"})
    await expect_error(jp_fetch, 404, "threads", tid, "fork", method="POST", body={"checkpoint_id": "1f0d-missing"})
    state = await lg_client.threads.get_state(tid)
    answer = state["values"]["messages"][1]["id"]
    payload = await expect_error(jp_fetch, 422, "threads", tid, "runs", "edit-regenerate", "prepare", method="POST",
                                 body={"message_id": answer, "content": "x"})
    assert "message_id" in payload["message"]
    run = await lg_client.runs.create(tid, "lead_agent", input=_msg("slow please"))
    async for part in lg_client.runs.join_stream(tid, run["run_id"], stream_mode="messages-tuple"):
        if part.event == "messages":
            break
    branch = (await call(jp_fetch, "threads", tid, "branches"))["branches"][0]["branch_id"]
    for parts, body in ((("runs", "regenerate", "prepare"), {}), (("branches", "checkout"), {"branch_id": branch}),
                        (("runs", "edit-regenerate", "prepare"),
                         {"message_id": state["values"]["messages"][0]["id"], "content": "x"})):
        await expect_error(jp_fetch, 409, "threads", tid, *parts, method="POST", body=body)
    await lg_client.runs.cancel(tid, run["run_id"], wait=True)


async def test_openapi_describes_the_routes(jp_fetch):
    spec = await call(jp_fetch, "openapi.json")
    for path, method, body in (("/threads/{thread_id}/runs/regenerate/prepare", "post", "RegenerateRequest"),
                               ("/threads/{thread_id}/runs/edit-regenerate/prepare", "post", "EditRegenerateRequest"),
                               ("/threads/{thread_id}/branches/checkout", "post", "BranchCheckoutRequest"),
                               ("/threads/{thread_id}/fork", "post", "ForkRequest"),
                               ("/threads/{thread_id}/branches", "get", None)):
        operation = spec["paths"][path][method]
        if body:
            schema = operation["requestBody"]["content"]["application/json"]["schema"]
            assert schema == {"$ref": f"#/components/schemas/{body}"}
        response = operation["responses"]["200"]["content"]["application/json"]["schema"]
        assert response["$ref"].startswith("#/components/schemas/")
    assert "forks" in spec["components"]["schemas"]["BranchesResponse"]["properties"]


async def test_status_of_unparsable_body(api_url, jp_auth_header):
    async with httpx.AsyncClient(headers=jp_auth_header) as client:
        response = await client.post(f"{api_url}/threads/x/fork", content=b"[")
    assert response.status_code == 400
