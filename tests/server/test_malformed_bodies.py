"""Every route that takes a JSON body refuses malformed ones with a 4xx naming the field, and changes nothing.

The table is built from ``openapi.json``: for each documented JSON body, each top-level field is sent
with a value of a JSON type its schema does not allow (an object where a string goes, a list where an
object goes, ...), plus the bodies that once reached a 500. Path parameters are real ids (a thread with
a finished run and its checkpoint, a memory fact, a scheduled task, a skill, a model), so the handler
behind the route is reached. The state every GET route shows is compared before and after.
"""

from __future__ import annotations

import json
from typing import Any

from tornado.httpclient import HTTPClientError

from .test_handlers import MSG, call

#: Values of each JSON type, tried in this order until one the field does not allow.
_BAD = [("object", {"nested": {"a": 1}}), ("array", [{"a": 1}]), ("number", 12.5), ("boolean", True),
        ("string", "not-this")]
#: Bodies that reached a 500 before (issue 31), by route.
_KNOWN = {("/threads/{thread_id}/history", "post"): [
    ({"before": {"configurable": "x"}}, "before"),
    ({"before": {"configurable": {"checkpoint_id": {"a": 1}}}}, "before"),
    ({"before": {"checkpoint_id": [1]}}, "before"),
    ({"before": 5}, "before"),
    ({"limit": "10"}, "limit"),
]}


def _types(schema: dict[str, Any], spec: dict[str, Any]) -> set[str] | None:
    """The JSON types ``schema`` allows (``None``: anything)."""
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        return _types(spec["components"]["schemas"][name], spec)
    for key in ("anyOf", "oneOf"):
        if key in schema:
            found: set[str] = set()
            for option in schema[key]:
                sub = _types(option, spec)
                if sub is None:
                    return None
                found |= sub
            return found
    if "allOf" in schema and len(schema["allOf"]) == 1:
        return _types(schema["allOf"][0], spec)
    if "enum" in schema or "const" in schema:
        values = schema.get("enum", [schema.get("const")])
        names = {"object" if isinstance(v, dict) else "array" if isinstance(v, list) else
                 "boolean" if isinstance(v, bool) else "number" if isinstance(v, int | float) else
                 "null" if v is None else "string" for v in values}
        return names
    kind = schema.get("type")
    if kind is None:
        return {"object"} if "properties" in schema else None
    return set(kind) if isinstance(kind, list) else {kind}  # 12.5 is not an "integer": a wrong value for it


def _cases(spec: dict[str, Any]) -> list[tuple[str, str, dict[str, Any], str]]:
    cases = []
    for path, operations in spec["paths"].items():
        for method, operation in operations.items():
            content = (operation.get("requestBody") or {}).get("content", {})
            if "application/json" not in content:
                continue
            schema = content["application/json"]["schema"]
            if "$ref" in schema:
                schema = spec["components"]["schemas"][schema["$ref"].rsplit("/", 1)[-1]]
            for name, field in (schema.get("properties") or {}).items():
                allowed = _types(field, spec)
                if allowed is None:
                    continue
                value = next((v for kind, v in _BAD if kind not in allowed), None)
                if value is not None:
                    cases.append((path, method, {name: value}, name))
            cases.extend((path, method, body, name) for body, name in _KNOWN.get((path, method), []))
    return cases


async def _world(jp_fetch) -> dict[str, str]:
    thread = await call(jp_fetch, "threads", method="POST", body={})
    tid = thread["thread_id"]
    run = await call(jp_fetch, "threads", tid, "runs", method="POST", body={"input": MSG})
    await call(jp_fetch, "threads", tid, "runs", run["run_id"], "join")
    state = await call(jp_fetch, "threads", tid, "state")
    fact = await call(jp_fetch, "memory", "facts", method="POST", body={"content": "likes tea", "category": "preference"})
    task = await call(jp_fetch, "scheduled-tasks", method="POST",
                      body={"message": "nightly", "every_seconds": 3600})
    skills = await call(jp_fetch, "skills")
    return {"thread_id": tid, "run_id": run["run_id"], "checkpoint_id": state["checkpoint_id"],
            "fact_id": fact["id"], "task_id": task["id"], "assistant_id": "lead_agent",
            "skill": skills["skills"][0]["name"], "model": "scripted", "section": "workContext",
            "filename": "none.csv", "part": "facts", "path": "mnt/user-data/outputs/x.txt"}


async def _snapshot(jp_fetch, ids: dict[str, str]) -> dict[str, Any]:
    tid = ids["thread_id"]
    views = {
        "threads": ("threads", "search"), "memory": ("memory",), "tasks": ("scheduled-tasks",),
        "skills": ("skills",), "runs": ("threads", tid, "runs"), "state": ("threads", tid, "state"),
        "thread": ("threads", tid), "goal": ("threads", tid, "goal"),
    }
    out: dict[str, Any] = {}
    for name, parts in views.items():
        method = "POST" if parts[-1] == "search" else "GET"
        body = await call(jp_fetch, *parts, method=method, body={} if method == "POST" else None)
        out[name] = json.dumps(body, sort_keys=True, default=str)
    return out


def _fill(path: str, ids: dict[str, str]) -> list[str]:
    parts = []
    for piece in path.strip("/").split("/"):
        if piece.startswith("{") and piece.endswith("}"):
            key = piece[1:-1]
            if key == "name":
                key = "model" if path.startswith("/models") else "skill"
            parts.append(ids[key])
        else:
            parts.append(piece)
    return parts


async def test_malformed_bodies_are_refused_naming_the_field_and_change_nothing(jp_fetch):
    spec = await call(jp_fetch, "openapi.json")
    cases = _cases(spec)
    routes = {(path, method) for path, method, _, _ in cases}
    assert len(routes) >= 25 and len(cases) >= 60  # the table covers the API, not a handful of routes
    ids = await _world(jp_fetch)
    before = await _snapshot(jp_fetch, ids)
    failures = []
    for path, method, body, field in cases:
        try:
            response = await jp_fetch("deerflow", "api", *_fill(path, ids), method=method.upper(),
                                      body=json.dumps(body), raise_error=False, allow_nonstandard_methods=True)
        except HTTPClientError as exc:  # pragma: no cover - raise_error=False returns the response
            response = exc.response
        status = response.code
        message = json.loads(response.body).get("message", "") if response.body else ""
        if not (400 <= status < 500) or field not in message:
            failures.append(f"{method.upper()} {path} {body!r}: {status} {message[:200]!r}")
    assert not failures, "\n".join(failures)
    assert await _snapshot(jp_fetch, ids) == before


async def test_history_limits_above_100_are_clamped_not_refused(jp_fetch):
    thread = await call(jp_fetch, "threads", method="POST", body={})
    tid = thread["thread_id"]
    for i in range(102):
        await call(jp_fetch, "threads", tid, "state", method="POST", body={"values": {"title": f"t{i}"}})
    for limit in (101, 1000, 5000):  # LangChain's useStream asks for 1000
        assert len(await call(jp_fetch, "threads", tid, "history", method="POST", body={"limit": limit})) == 100
        assert len(await call(jp_fetch, "threads", tid, "history", params={"limit": str(limit)})) == 100
    page = await call(jp_fetch, "threads", tid, "history", method="POST", body={"limit": 100})
    rest = await call(jp_fetch, "threads", tid, "history", method="POST",
                      body={"limit": 100, "before": {"configurable": {"checkpoint_id": page[-1]["checkpoint_id"]}}})
    assert len(rest) == 2 and not {s["checkpoint_id"] for s in rest} & {s["checkpoint_id"] for s in page}


async def test_malformed_headers_and_query_values_never_reach_a_5xx(jp_fetch):
    ids = await _world(jp_fetch)
    tid, rid = ids["thread_id"], ids["run_id"]
    stream = ("threads", tid, "runs", rid, "join")
    for name, value in [("Last-Event-ID", "abc"), ("Last-Event-ID", "-5"), ("Last-Event-ID", "1e999"),
                        ("Last-Event-ID", "9" * 400), ("X-Trace-Id", "\u00e9" * 3), ("X-Trace-Id", "x" * 5000),
                        ("Content-Type", "application/json; charset=nope")]:
        response = await jp_fetch("deerflow", "api", *stream, headers={name: value}, raise_error=False)
        assert response.code < 500, (name, value, response.code)
    for parts, query in [(("threads", tid, "history"), {"before": "x" * 500}),
                         (("threads", tid, "history"), {"limit": "-1"}),
                         (("threads", tid, "runs"), {"limit": "99999999999999999999"}),
                         (("threads", tid, "runs", rid, "events"), {"event_type": "\x00"}),
                         (("usage",), {"since": "2026-13-45"}), (("memory", "facts"), {"query": "x" * 5000})]:
        response = await jp_fetch("deerflow", "api", *parts, params=query, raise_error=False)
        assert 200 <= response.code < 500, (parts, query, response.code)
        if response.code >= 400:
            assert next(iter(query)) in json.loads(response.body)["message"], (parts, query)
