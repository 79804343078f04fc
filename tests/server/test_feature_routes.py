"""The agent.memory / agent.mcp / agent.subagents routes at the HTTP boundary: strict bodies (422 naming the
field, nothing stored), 404 / 409 with the exception's class, and openapi.json listing them with schemas."""

from __future__ import annotations

import json

import pytest

from .test_handlers import call, expect_error


async def _export(jp_fetch):
    return await call(jp_fetch, "memory", "export")


@pytest.mark.parametrize(("method", "parts", "body", "field"), [
    ("POST", ("memory", "facts"), {}, "content"),
    ("POST", ("memory", "facts"), {"content": "   "}, "content"),
    ("POST", ("memory", "facts"), {"content": "x", "confidence": "0.5"}, "confidence"),
    ("POST", ("memory", "facts"), {"content": "x", "confidence": 2}, "confidence"),
    ("POST", ("memory", "facts"), {"content": "x", "category": ""}, "category"),
    ("POST", ("memory", "facts"), {"content": "x", "source": "thread:1"}, "source"),
    ("PATCH", ("memory", "facts", "KEEP"), {"confidence": True}, "confidence"),
    ("PATCH", ("memory", "facts", "KEEP"), {"expected_revision": "1"}, "expected_revision"),
    ("PATCH", ("memory", "facts", "KEEP"), {"content": "y", "id": "other"}, "id"),
    ("DELETE", ("memory", "facts", "KEEP"), {"expected_revision": -1}, "expected_revision"),
    ("PUT", ("memory", "summaries", "topOfMind"), {"text": ["a"]}, "text"),
    ("PUT", ("memory", "summaries", "topOfMind"), {}, "text"),
    ("PUT", ("memory", "summaries", "favouriteColour"), {"text": "blue"}, "favouriteColour"),
    ("POST", ("memory", "import"), {"facts": [{"content": ""}]}, "facts.0.content"),
    ("POST", ("memory", "import"), {"facts": [{"content": "a", "confidence": "high"}]}, "facts.0.confidence"),
    ("POST", ("memory", "import"), {"user": {"topOfMind": {"summary": 1}}}, "user.topOfMind.summary"),
    ("POST", ("memory", "import"), {"user": {"mood": {"summary": "x"}}}, "user.mood"),
    ("POST", ("memory", "import"), {"facts": {}}, "facts"),
])
async def test_bad_memory_bodies_are_refused_and_store_nothing(jp_fetch, method, parts, body, field):
    kept = await call(jp_fetch, "memory", "facts", method="POST", body={"content": "Keeps this"})
    parts = tuple(kept["id"] if p == "KEEP" else p for p in parts)
    before = await _export(jp_fetch)
    payload = await expect_error(jp_fetch, 422, *parts, method=method, body=body,
                                 allow_nonstandard_methods=True)
    assert field in payload["message"]
    assert await _export(jp_fetch) == before


async def test_memory_routes_not_found_conflict_and_round_trip(jp_fetch):
    fact = await call(jp_fetch, "memory", "facts", method="POST", body={"content": "Uses DuckDB", "confidence": 0.9})
    assert fact["revision"] == 1 and fact["source"] == "manual"
    listed = await call(jp_fetch, "memory", "facts")
    assert [f["id"] for f in listed["facts"]] == [fact["id"]]
    found = await call(jp_fetch, "memory", "facts", params={"query": "duckdb", "limit": 5})
    assert [f["content"] for f in found["facts"]] == ["Uses DuckDB"]
    await expect_error(jp_fetch, 422, "memory", "facts", params={"query": "x", "limit": 0})

    payload = await expect_error(jp_fetch, 404, "memory", "facts", "fact_000000000000", method="PATCH",
                                 body={"confidence": 0.5})
    assert payload["error_type"] == "NotFoundError"
    updated = await call(jp_fetch, "memory", "facts", fact["id"], method="PATCH",
                         body={"confidence": 0.5, "expected_revision": 1})
    assert updated["revision"] == 2
    payload = await expect_error(jp_fetch, 409, "memory", "facts", fact["id"], method="PATCH",
                                 body={"content": "Uses Postgres", "expected_revision": 1})
    assert payload["error_type"] == "MemoryConflictError"
    assert (await call(jp_fetch, "memory", "facts"))["facts"][0]["content"] == "Uses DuckDB"

    document = await call(jp_fetch, "memory", "summaries", "topOfMind", method="PUT", body={"text": "Q3 report"})
    assert document["user"]["topOfMind"]["summary"] == "Q3 report"
    preview = await call(jp_fetch, "memory", "preview", params={"message": "duckdb?"})
    assert "Uses DuckDB" in preview["memory"] and "Q3 report" in preview["memory"]
    exported = await _export(jp_fetch)
    cleared = await call(jp_fetch, "memory", method="DELETE")
    assert cleared["user"]["topOfMind"]["summary"] == "" and (await call(jp_fetch, "memory", "facts"))["facts"] == []
    imported = await call(jp_fetch, "memory", "import", method="POST", body=exported)
    assert imported["user"]["topOfMind"]["summary"] == "Q3 report"
    again = (await _export(jp_fetch))["facts"]
    assert [{**f, "revision": 1} for f in again] == [{**f, "revision": 1} for f in exported["facts"]]
    assert [f["revision"] for f in again] == [1]  # an imported fact starts again at revision 1
    deleted = await call(jp_fetch, "memory", "facts", fact["id"], method="DELETE")
    assert deleted == {"success": True, "fact_id": fact["id"]}
    await expect_error(jp_fetch, 404, "memory", "facts", fact["id"], method="DELETE")

    queue = await call(jp_fetch, "memory", "queue")
    assert queue["pending_updates"] == 0 and queue["facts"] == 0
    assert await call(jp_fetch, "memory", "flush", method="POST", body={}) == {"processed": 0}
    assert (await call(jp_fetch, "memory", "section"))["enabled"] is False
    await expect_error(jp_fetch, 404, "memory", "nonsense")


async def test_mcp_and_subagents_routes(jp_fetch):
    assert await call(jp_fetch, "mcp", "tools") == {"tools": [], "errors": {}}
    assert await call(jp_fetch, "mcp", "reload", method="POST", body={}) == {"success": True}
    subagents = {s["name"]: s for s in (await call(jp_fetch, "subagents"))["subagents"]}
    assert {"general-purpose", "bash"} <= set(subagents) and subagents["bash"]["max_turns"] > 0


async def test_openapi_lists_the_feature_routes_with_schemas(jp_fetch):
    spec = await call(jp_fetch, "openapi.json")
    paths, schemas = spec["paths"], spec["components"]["schemas"]
    assert set(paths["/memory"]) == {"get", "delete"} and set(paths["/memory/facts"]) == {"get", "post"}
    assert set(paths["/memory/facts/{fact_id}"]) == {"patch", "delete"}
    assert set(paths["/memory/summaries/{section}"]) == {"put"} and set(paths["/memory/import"]) == {"post"}
    for read in ("config", "status", "data", "export", "section", "queue", "preview"):
        assert set(paths[f"/memory/{read}"]) == {"get"}, read
    assert set(paths["/memory/reload"]) == set(paths["/memory/flush"]) == {"post"}
    assert "/memory/{part}" not in paths and "/memory/nonsense" not in paths
    assert set(paths["/mcp/tools"]) == {"get"} and set(paths["/mcp/reload"]) == {"post"}
    assert set(paths["/subagents"]) == {"get"}
    patch = paths["/memory/facts/{fact_id}"]["patch"]
    assert patch["requestBody"]["content"]["application/json"]["schema"]["$ref"].endswith("/FactUpdateRequest")
    assert patch["responses"]["200"]["content"]["application/json"]["schema"]["$ref"].endswith("/FactRecord")
    assert set(schemas["FactUpdateRequest"]["properties"]) == {"content", "category", "confidence",
                                                               "expected_revision"}
    assert "facts" in schemas["MemoryImportRequest"]["properties"] and "ImportFact" in schemas
    assert json.dumps(spec)  # serialisable as served


def test_each_user_has_their_own_memory(tmp_path):
    """Over a real server with two users: facts, edits and clears never cross users."""
    import deerflow_nb as df
    from deerflow_nb.errors import NotFoundError

    from .conftest import write_config
    from .e2e import JupyterServer

    server = JupyterServer(tmp_path, write_config(tmp_path / "config.yaml", ["ok"]),
                           users={"tok-alice": "alice", "tok-bob": "bob"}).start()
    try:
        alice = df.DeerFlow.connect(url=server.api, token="tok-alice")
        bob = df.DeerFlow.connect(url=server.api, token="tok-bob")
        fact = alice.memory.add_fact("Alice uses R")
        alice.memory.set_summary("topOfMind", "Alice's thesis")
        assert bob.memory.facts == [] and bob.memory.search("R") == []
        assert bob.memory.data["user"]["topOfMind"]["summary"] == ""
        with pytest.raises(NotFoundError):
            bob.memory.update_fact(fact.id, content="Bob was here")
        with pytest.raises(NotFoundError):
            bob.memory.delete_fact(fact.id)
        bob.memory.clear()
        assert [f.content for f in alice.memory.facts] == ["Alice uses R"]
        assert alice.memory.status()["path"].endswith("/users/alice/memory.json")
        alice.close()
        bob.close()
    finally:
        server.stop()
