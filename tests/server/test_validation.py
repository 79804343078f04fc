"""Strict validation at the HTTP boundary (issue 16): refusals name the field and change nothing."""

from __future__ import annotations

import errno
import json

import pytest
from tornado.httpclient import HTTPClientError

from .test_handlers import MSG, call, expect_error


@pytest.mark.parametrize(("body", "field"), [
    ({"config": {"recursion_limit": "abc"}}, "config.recursion_limit"),
    ({"config": {"recursion_limit": -5}}, "config.recursion_limit"),
    ({"config": {"configurable": "x"}}, "config.configurable"),
    ({"context": {"thinking_enabled": "yes"}}, "context.thinking_enabled"),
    ({"context": {"model_name": ["a", "b"]}}, "context.model_name"),
    ({"input": {"messages": [{"role": "user", "content": None}]}}, "input.messages"),
    # unknown keys and a second, non-human ``type`` used to land in the stored message's additional_kwargs
    ({"input": {"messages": [{"role": "user", "content": "x", "": None}]}}, "unknown message field"),
    ({"input": {"messages": [{"role": "user", "type": "tool", "content": "x"}]}}, "type must be"),
    ({"input": {"messages": [{"role": "assistant", "content": "x"}]}}, "role must be"),
    # the message fields openapi.json types (schemathesis sent ``example: null`` and it was accepted)
    ({"input": {"messages": [{"role": "user", "content": "x", "example": None}]}}, "example: must be a boolean"),
    ({"input": {"messages": [{"role": "user", "content": "x", "name": 3}]}}, "name: must be"),
    ({"input": {"messages": [{"role": "user", "content": "x", "response_metadata": []}]}}, "response_metadata"),
    ({"input": {"messages": [{"content": "x"}]}}, "needs a role"),
    # content blocks and field types are checked as LangChain's message definitions type them
    ({"input": {"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": 5}]}]}},
     "messages[0].content[0].image_url"),
    ({"input": {"messages": [{"role": "user", "content": [{"type": "text", "text": ["x"]}]}]}},
     "messages[0].content[0].text"),
    ({"input": {"messages": [{"role": "user", "content": [{"type": "image"}]}]}}, "needs one of url"),
    ({"input": {"messages": [{"role": "user", "content": [{"no_type": 1}]}]}}, "content[0].type"),
    ({"input": {"messages": [{"role": "user", "content": [7]}]}}, "content[0]"),
    ({"input": {"messages": [{"role": "user", "content": "x", "additional_kwargs": []}]}}, "additional_kwargs"),
    ({"metadata": {"n": 2 ** 70}}, "metadata.n"),
    ({"stream_mode": "debug"}, "stream_mode"),
    ({"checkpoint_id": ""}, "checkpoint_id"),
    ({"checkpoint": {"checkpoint_id": "a", "checkpoint_ns": "sub"}}, "checkpoint.checkpoint_ns"),
    ({"command": {"resume": "x"}}, "command"),
    ({"interrupt_before": ["model"]}, "interrupt_before"),
])
async def test_bad_run_bodies_are_refused_and_store_nothing(jp_fetch, body, field):
    payload = await expect_error(jp_fetch, 422, "threads", "t-bad", "runs", method="POST",
                                 body={"input": MSG, **body})
    assert field in payload["message"]
    await expect_error(jp_fetch, 404, "threads", "t-bad")  # no thread was created for the refused run


async def test_json_that_cannot_be_stored_is_refused(jp_fetch):
    for metadata, why in [({"big": 2 ** 64}, "64-bit"), ({"s": "\ud800"}, "surrogate"),
                          ({"deep": json.loads("[" * 40 + "]" * 40)}, "nested")]:
        payload = await expect_error(jp_fetch, 422, "threads", method="POST", body={"metadata": metadata})
        assert why in payload["message"] and "metadata" in payload["message"]
    deep = "[" * 5000 + "]" * 5000
    with pytest.raises(HTTPClientError) as info:
        await jp_fetch("deerflow", "api", "threads", method="POST", body='{"metadata": {"x": ' + deep + "}}")
    assert info.value.code == 422
    await expect_error(jp_fetch, 413, "threads", method="POST", body={"metadata": {"x": "y" * 70_000}})
    await expect_error(jp_fetch, 422, "threads", method="POST", body={"thread_id": ""})
    await expect_error(jp_fetch, 400, "threads", method="POST", body=[1, 2])
    with pytest.raises(HTTPClientError) as info:  # ``null`` is not an object either (it used to mean ``{}``)
        await jp_fetch("deerflow", "api", "threads", method="POST", body="null")
    assert info.value.code == 400
    with pytest.raises(HTTPClientError) as info:  # whitespace is not JSON (only an empty body means ``{}``)
        await jp_fetch("deerflow", "api", "threads", method="POST", body="\n")
    assert info.value.code == 400
    assert await call(jp_fetch, "threads", "search", method="POST", body={}) == []  # nothing was stored


async def test_strict_types_and_query_values(jp_fetch):
    payload = await expect_error(jp_fetch, 422, "skills", "x", method="PUT", body={"enabled": "yes"})
    assert "enabled" in payload["message"]
    await expect_error(jp_fetch, 422, "threads", "search", method="POST", body={"limit": "5"})
    thread = await call(jp_fetch, "threads", method="POST", body={})
    tid = thread["thread_id"]
    for query in ({"limit": "abc"}, {"offset": "-1"}, {"status": "nope"}):
        payload = await expect_error(jp_fetch, 422, "threads", tid, "runs", params=query)
        assert next(iter(query)) in payload["message"]
    await expect_error(jp_fetch, 422, "threads", tid, "history", params={"limit": "x"})
    await expect_error(jp_fetch, 422, "usage", params={"since": "soon"})
    for query in ({"since": "\x00"}, {"limit": "\x00"}):  # tornado turns control characters into spaces
        payload = await expect_error(jp_fetch, 422, *(("usage",) if "since" in query else ("threads", tid, "runs")),
                                     params=query)
        assert next(iter(query)) in payload["message"]
    payload = await expect_error(jp_fetch, 422, "memory", "facts", params={"limit": "x"})  # even without ?query=
    assert "limit" in payload["message"]


async def test_duplicate_thread_is_409_and_thread_object_is_complete(jp_fetch):
    thread = await call(jp_fetch, "threads", method="POST", body={"thread_id": "t-dup", "metadata": {"a": 1}})
    assert {"config", "state_updated_at", "values"} <= set(thread) and thread["values"] is None
    payload = await expect_error(jp_fetch, 409, "threads", method="POST", body={"thread_id": "t-dup"})
    assert payload["error_type"] == "ConflictError"
    again = await call(jp_fetch, "threads", method="POST", body={"thread_id": "t-dup", "if_exists": "do_nothing"})
    assert again["thread_id"] == "t-dup"


async def test_refused_stateless_run_leaves_no_thread(jp_fetch):
    await expect_error(jp_fetch, 422, "runs", "wait", method="POST", body={"input": MSG, "assistant_id": "nope"})
    assert await call(jp_fetch, "threads", "search", method="POST", body={}) == []


async def test_run_delete_and_routes_serve_only_their_methods(jp_fetch):
    thread = await call(jp_fetch, "threads", method="POST", body={})
    tid = thread["thread_id"]
    run = await call(jp_fetch, "threads", tid, "runs", method="POST", body={"input": MSG})
    await call(jp_fetch, "threads", tid, "runs", run["run_id"], "join")
    with pytest.raises(HTTPClientError) as info:  # DELETE exists on the run, not on its sub-routes
        await jp_fetch("deerflow", "api", "threads", tid, "runs", run["run_id"], "join", method="DELETE")
    assert info.value.code == 405
    response = await jp_fetch("deerflow", "api", "threads", tid, "runs", run["run_id"], method="DELETE")
    assert response.code == 204
    await expect_error(jp_fetch, 404, "threads", tid, "runs", run["run_id"])
    assert await call(jp_fetch, "threads", tid, "runs") == []


async def test_openapi_lists_routed_operations_with_responses(jp_fetch):
    spec = await call(jp_fetch, "openapi.json")
    paths = spec["paths"]
    assert "put" not in paths["/skills"] and "post" not in paths["/memory"]
    assert "get" not in paths["/threads/{thread_id}/uploads"] and "post" in paths["/skills/install"]
    assert set(paths["/threads/{thread_id}/runs/{run_id}"]) == {"get", "delete"}
    assert set(paths["/threads/{thread_id}/runs/{run_id}/join"]) == {"get"}
    for path, operations in paths.items():
        for method, operation in operations.items():
            ok = operation["responses"].get("200") or operation["responses"].get("204")
            assert ok, (path, method)
            if "200" in operation["responses"]:
                assert operation["responses"]["200"]["content"], (path, method)
    stream = paths["/threads/{thread_id}/runs/stream"]["post"]["responses"]["200"]["content"]
    assert "text/event-stream" in stream


async def test_unknown_api_paths_answer_json_404(jp_fetch):
    for parts in (("runs", "nope"), ("no", "such", "route"), ("threads", "t", "runs", "r", "nope")):
        payload = await expect_error(jp_fetch, 404, *parts, method="POST", body={})
        assert "no route" in payload["message"]


async def test_thread_stream_without_active_run_is_an_empty_event_stream(jp_fetch):
    thread = await call(jp_fetch, "threads", method="POST", body={})
    response = await jp_fetch("deerflow", "api", "threads", thread["thread_id"], "stream")
    assert response.code == 200 and response.body == b""
    assert response.headers["Content-Type"].startswith("text/event-stream")  # was relabelled application/json


async def test_name_too_long_is_422_and_other_os_errors_stay_errors(jp_fetch):
    thread = await call(jp_fetch, "threads", method="POST", body={})
    name = "x" * 300
    body = (f'--B\r\nContent-Disposition: form-data; name="files"; filename="{name}"\r\n\r\nabc\r\n--B--\r\n').encode()
    with pytest.raises(HTTPClientError) as info:
        await jp_fetch("deerflow", "api", "threads", thread["thread_id"], "uploads", method="POST", body=body,
                       headers={"Content-Type": "multipart/form-data; boundary=B"})
    assert info.value.code == 422 and "too long" in json.loads(info.value.response.body)["message"]
    payload = await expect_error(jp_fetch, 422, "threads", thread["thread_id"], "uploads", name, method="DELETE")
    assert "too long" in payload["message"]

    from jupyter_ext.handlers.base import api_method

    @api_method
    async def broken(handler):
        raise OSError(errno.EIO, "I/O error")

    with pytest.raises(OSError) as info:  # a real failure: tornado answers it with 500
        await broken(object())
    assert info.value.errno == errno.EIO


async def test_openapi_documents_streams_queries_and_uploads(jp_fetch):
    paths = (await call(jp_fetch, "openapi.json"))["paths"]
    assert "/runs/{mode}" not in paths
    stream = paths["/runs/stream"]["post"]["responses"]["200"]["content"]
    assert set(stream) == {"text/event-stream"} and stream["text/event-stream"]["schema"]["required"] == ["event", "data"]
    assert set(paths["/runs/wait"]["post"]["responses"]["200"]["content"]) == {"application/json"}
    runs = {p["name"]: p for p in paths["/threads/{thread_id}/runs"]["get"]["parameters"]}
    assert {"thread_id", "limit", "offset", "status"} <= set(runs)
    join = {p["name"]: p["in"] for p in paths["/threads/{thread_id}/runs/{run_id}/stream"]["get"]["parameters"]}
    assert join["Last-Event-ID"] == "header" and join["stream_mode"] == "query"
    skill = paths["/skills/{name}"]["put"]["requestBody"]["content"]["application/json"]["schema"]
    assert skill["$ref"].endswith("/SkillUpdateRequest")
    upload = paths["/threads/{thread_id}/uploads"]["post"]["requestBody"]["content"]
    assert upload["multipart/form-data"]["schema"]["required"] == ["files"]
    message = (await call(jp_fetch, "openapi.json"))["components"]["schemas"]["RunInput"]["properties"]["messages"]
    assert message["items"]["required"] == ["content"] and message["items"]["anyOf"] == [{"required": ["role"]},
                                                                                         {"required": ["type"]}]
