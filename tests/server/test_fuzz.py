"""Schemathesis over ``openapi.json`` against a real ``jupyter server`` (issue 16).

Every operation the live server documents gets generated requests, valid ones (positive mode)
and invalid ones (negative mode), sent with the Jupyter token. Each response must be no 5xx,
have a documented status and content type, and match the documented response schema; an
invalid request must be refused with a 4xx. The total number of requests is counted and
must reach :data:`MIN_REQUESTS`, so the test cannot pass by generating nothing.

Path parameters are half of the time real ids (a thread, a finished run on it, its checkpoint,
a model, a skill, the last scheduled task and memory fact a fuzzed request created; otherwise
random), so the handlers behind the 404 are reached too. Operations that destroy
them (``DELETE`` of the thread or the run) are fuzzed like every other; the fixture is
rebuilt after each successful delete, so later operations see the same world. Nothing is
excluded: streams of finished runs end at once, runs use a scripted model.

Generation is derandomized (the same requests on every run) and not shrunk (each shrinking
step would be another request against the server; the failing request is printed as curl).
"""

from __future__ import annotations

import os
import time
from collections import Counter
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import (
    content_type_conformance,
    negative_data_rejection,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)

from .conftest import write_config
from .e2e import JupyterServer

#: Generated requests per operation and generation mode (operations without inputs stop early);
#: ``DEERFLOW_FUZZ_EXAMPLES=200`` fuzzes deeper locally.
EXAMPLES = int(os.environ.get("DEERFLOW_FUZZ_EXAMPLES", "20"))
#: The least number of requests the test must have sent.
MIN_REQUESTS = 1000
MSG = {"messages": [{"role": "user", "content": "hello"}]}
#: ``POST`` routes whose answer's ``id`` is the path parameter of the routes under them.
CREATES = {"/scheduled-tasks": "task_id", "/memory/facts": "fact_id"}
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("fuzz")
    config = write_config(root / "config.yaml", [], extra={"title": {"enabled": False}})  # echoes every message
    srv = JupyterServer(root, config).start()
    yield srv
    srv.stop()


class World:
    """Real ids for path parameters: a thread with one finished run and its checkpoint, a model, a skill.

    The thread and run are rebuilt when a fuzzed request deletes either.
    """

    def __init__(self, server: JupyterServer) -> None:
        self.client = httpx.Client(base_url=server.api, headers=server.headers(), timeout=120)
        self.thread_id = "fuzz-thread"
        self.run_id = self.checkpoint_id = ""
        self.learned: dict[str, str] = {}  # ids the fuzzed requests created (a scheduled task, a memory fact)
        self.skill = self.client.get("/skills").raise_for_status().json()["skills"][0]["name"]
        self.build()

    def build(self) -> None:
        self.client.post("/threads", json={"thread_id": self.thread_id, "if_exists": "do_nothing"}).raise_for_status()
        # "interrupt": a fuzzed background run may still be running on the thread
        run = self.client.post(f"/threads/{self.thread_id}/runs", json={"input": MSG, "multitask_strategy": "interrupt"})
        self.run_id = run.raise_for_status().json()["run_id"]
        self.client.get(f"/threads/{self.thread_id}/runs/{self.run_id}/join").raise_for_status()
        self.checkpoint_id = self.client.get(f"/threads/{self.thread_id}/state").raise_for_status().json()[
            "checkpoint_id"]

    def ids(self, path: str) -> dict[str, str]:
        """Real values for the path parameters of ``path``."""
        return {**self.learned, "thread_id": self.thread_id, "run_id": self.run_id,
                "checkpoint_id": self.checkpoint_id, "assistant_id": "lead_agent",
                "name": "scripted" if path.startswith("/models") else self.skill}

    def learn(self, case: Any, response: Any) -> None:
        """Remember the id of what a successful ``POST`` created, for the routes that take it."""
        param = CREATES.get(case.path)
        if param is None or case.method.upper() != "POST" or not 200 <= response.status_code < 300:
            return
        body = response.json()
        if isinstance(body, dict) and isinstance(body.get("id"), str):
            self.learned[param] = body["id"]

    def repair(self, case: Any, status: int) -> None:
        """Rebuild after a successful ``DELETE`` of the thread or of the run."""
        if case.method.upper() == "DELETE" and status < 300 and case.path_parameters:
            params = case.path_parameters
            if params.get("thread_id") == self.thread_id and set(params) <= {"thread_id", "run_id"}:
                if params.get("run_id") in (None, self.run_id):
                    self.build()


def cases(operation: Any, mode: GenerationMode, world: World) -> st.SearchStrategy[Any]:
    """The operation's cases; half of them with real ids as path parameters (read when drawn)."""
    names = {p.name for p in operation.path_parameters} & (set(world.ids(operation.path)) | set(CREATES.values()))
    if not names:
        return operation.as_strategy(generation_mode=mode)
    return st.booleans().flatmap(lambda use: operation.as_strategy(generation_mode=mode, path_parameters={
        k: v for k, v in world.ids(operation.path).items() if k in names} if use else None))


def fuzz(operation: Any, mode: GenerationMode, server: JupyterServer, world: World, sent: Counter[str],
         statuses: Counter[tuple[str, int]]) -> None:
    """Send the operation's generated requests; raise on the first failed check."""
    checks = CHECKS + ([negative_data_rejection] if mode is GenerationMode.NEGATIVE else [])

    @settings(max_examples=EXAMPLES, derandomize=True, deadline=None, database=None,
              phases=[Phase.explicit, Phase.generate], report_multiple_bugs=False,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large])
    @given(case=cases(operation, mode, world))
    def one(case: Any) -> None:
        response = case.call(base_url=server.api, headers=server.headers(), timeout=120)
        sent[operation.label] += 1
        statuses[operation.label, response.status_code] += 1
        world.repair(case, response.status_code)
        world.learn(case, response)
        case.validate_response(response, checks=checks, headers=server.headers())

    one()


def test_generated_requests_get_documented_non_5xx_answers(server):
    # the token is sent with every request, so the security scheme's header is not a generated (droppable) parameter
    # and invalid input is refused with any 4xx (413 for a body over the size limits too)
    config = schemathesis.Config.from_dict({"generation": {"with-security-parameters": False},
                                            "checks": {"negative_data_rejection": {"expected-statuses": ["4XX"]}}})
    schema = schemathesis.openapi.from_url(f"{server.api}/openapi.json", config=config, headers=server.headers(),
                                           timeout=60)
    world = World(server)
    sent: Counter[str] = Counter()
    statuses: Counter[tuple[str, int]] = Counter()
    failures: list[str] = []
    nothing_to_negate: list[str] = []
    started = time.monotonic()
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 40, [op.label for op in operations]
    for operation in operations:
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            try:
                fuzz(operation, mode, server, world, sent, statuses)
            except Unsatisfiable:  # nothing of the operation can be made invalid (e.g. only free-form strings)
                assert mode is GenerationMode.NEGATIVE, operation.label
                nothing_to_negate.append(operation.label)
            except (Exception, BaseExceptionGroup) as exc:  # one failure per operation and mode; fuzz on
                failures.append(f"{operation.label} [{mode.value}]: {str(exc)[:3000]}")
    total = sum(sent.values())
    print(f"fuzz: {total} requests over {len(operations)} operations in {time.monotonic() - started:.0f} s")
    for label in sent:  # what each operation answered: the CI log shows how deep the fuzzing reached
        print(f"  {label}: " + ", ".join(f"{code}x{n}" for (op, code), n in sorted(statuses.items()) if op == label))
    print("no invalid input to generate for: " + ", ".join(nothing_to_negate))
    assert not failures, "\n\n".join(failures)
    assert total >= MIN_REQUESTS, sent
