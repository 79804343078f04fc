"""``X-Trace-Id``: echoed on every response, checked, and carried by the runs a request starts."""

from __future__ import annotations

import json
import re

import pytest
from tornado.httpclient import HTTPClientError

from .test_handlers import MSG, call


async def test_a_valid_trace_id_is_echoed_and_a_missing_one_generated(jp_fetch):
    response = await jp_fetch("deerflow", "api", "health", headers={"X-Trace-Id": "req-42.a:b_c"})
    assert response.headers["X-Trace-Id"] == "req-42.a:b_c"
    first = (await jp_fetch("deerflow", "api", "health")).headers["X-Trace-Id"]
    second = (await jp_fetch("deerflow", "api", "health")).headers["X-Trace-Id"]
    assert re.fullmatch(r"[0-9a-f]{32}", first) and re.fullmatch(r"[0-9a-f]{32}", second) and first != second
    with pytest.raises(HTTPClientError) as info:  # error responses carry it too
        await jp_fetch("deerflow", "api", "threads", "missing-thread", headers={"X-Trace-Id": "req-404"})
    assert info.value.code == 404 and info.value.response.headers["X-Trace-Id"] == "req-404"


@pytest.mark.parametrize("value", ["has space", "x" * 129, "new\u00e9", "semi;colon", ""])
async def test_an_invalid_trace_id_is_refused_naming_the_header(jp_fetch, value):
    with pytest.raises(HTTPClientError) as info:
        await jp_fetch("deerflow", "api", "threads", method="POST", body="{}", headers={"X-Trace-Id": value})
    assert info.value.code == 422
    payload = json.loads(info.value.response.body)
    assert "X-Trace-Id" in payload["message"]
    assert re.fullmatch(r"[0-9a-f]{32}", info.value.response.headers["X-Trace-Id"])  # a fresh one, not theirs
    assert await call(jp_fetch, "threads", "search", method="POST", body={}) == []  # nothing was stored


async def test_a_run_carries_its_request_trace_id_in_journal_and_span(jp_fetch, spans):
    tid = (await call(jp_fetch, "threads", method="POST", body={}))["thread_id"]
    response = await jp_fetch("deerflow", "api", "threads", tid, "runs", "wait", method="POST",
                              body=json.dumps({"assistant_id": "lead_agent", "input": MSG}),
                              headers={"X-Trace-Id": "trace-run-7"})
    assert response.headers["X-Trace-Id"] == "trace-run-7"
    (run,) = await call(jp_fetch, "threads", tid, "runs")
    events = await call(jp_fetch, "threads", tid, "runs", run["run_id"], "events")
    (end,) = [e for e in events["data"] if e["event_type"] == "run_end"]
    assert end["payload"]["trace_id"] == "trace-run-7"
    (span,) = [s for s in spans.get_finished_spans() if s.name == "deerflow.run"]
    assert span.attributes["deerflow.trace_id"] == "trace-run-7"
    assert span.attributes["deerflow.run_id"] == run["run_id"]


async def test_openapi_documents_the_header_on_every_operation_and_response(jp_fetch):
    spec = await call(jp_fetch, "openapi.json")
    operations = [op for item in spec["paths"].values() for op in item.values()]
    assert len(operations) > 50
    for op in operations:
        [param] = [p for p in op["parameters"] if p["name"] == "X-Trace-Id"]
        assert param["in"] == "header" and not param["required"]
        pattern = re.compile(param["schema"]["pattern"])
        assert pattern.fullmatch("req-42.a:b_c") and pattern.fullmatch("a" * 128)
        assert not pattern.fullmatch("a" * 129) and not pattern.fullmatch("bad id") and not pattern.fullmatch("")
        for status, response in op["responses"].items():
            assert response["headers"]["X-Trace-Id"]["required"], (op["operationId"], status)
