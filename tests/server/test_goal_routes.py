"""``/threads/{id}/goal``: strict bodies (422 naming the field), 404 for unknown threads, the OpenAPI entries."""

from __future__ import annotations

import pytest

from .test_handlers import call, expect_error


@pytest.mark.parametrize(("body", "field"), [
    ({"objective": "ok", "max_continuations": 9}, "max_continuations"),
    ({"objective": "ok", "max_continuations": -1}, "max_continuations"),
    ({"objective": "ok", "max_continuations": "3"}, "max_continuations"),
    ({"objective": "   "}, "objective"),
    ({"objective": 5}, "objective"),
    ({}, "objective"),
    ({"objective": "ok", "deadline": "soon"}, "deadline"),
])
async def test_bad_goal_bodies_are_refused_and_store_nothing(jp_fetch, body, field):
    tid = (await call(jp_fetch, "threads", method="POST", body={}))["thread_id"]
    payload = await expect_error(jp_fetch, 422, "threads", tid, "goal", method="PUT", body=body)
    assert field in payload["message"]
    assert await call(jp_fetch, "threads", tid, "goal") == {"goal": None}


async def test_goal_routes_round_trip(jp_fetch):
    tid = (await call(jp_fetch, "threads", method="POST", body={}))["thread_id"]
    assert await call(jp_fetch, "threads", tid, "goal") == {"goal": None}
    stored = await call(jp_fetch, "threads", tid, "goal", method="PUT", body={"objective": " Plot the sales "})
    assert stored["goal"]["objective"] == "Plot the sales" and stored["goal"]["max_continuations"] == 8
    assert await call(jp_fetch, "threads", tid, "goal") == stored
    state = await call(jp_fetch, "threads", tid, "state")
    assert state["values"]["goal"]["objective"] == "Plot the sales"
    assert await call(jp_fetch, "threads", tid, "goal", method="DELETE") == {"goal": None}
    assert await call(jp_fetch, "threads", tid, "goal") == {"goal": None}
    for method, body in (("GET", None), ("PUT", {"objective": "x"}), ("DELETE", None)):
        await expect_error(jp_fetch, 404, "threads", "no-such-thread", "goal", method=method, body=body)


async def test_openapi_describes_the_goal_routes(jp_fetch):
    spec = await call(jp_fetch, "openapi.json")
    operations = spec["paths"]["/threads/{thread_id}/goal"]
    assert set(operations) == {"get", "put", "delete"}
    body = operations["put"]["requestBody"]["content"]["application/json"]["schema"]
    assert body == {"$ref": "#/components/schemas/GoalSetRequest"}
    schema = spec["components"]["schemas"]["GoalSetRequest"]
    assert schema["properties"]["max_continuations"]["maximum"] == 8 and schema["required"] == ["objective"]
    for method in operations:
        response = operations[method]["responses"]["200"]["content"]["application/json"]["schema"]
        assert response["required"] == ["goal"] and "objective" in response["properties"]["goal"]["properties"]
