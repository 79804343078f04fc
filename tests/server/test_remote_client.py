"""``DeerFlow.connect()``: discovery, and the remote Thread/Run API against the in-process server."""

from __future__ import annotations

import asyncio
import json
import os

import pytest

import deerflow_nb as df
from deerflow_nb.client.remote import discover_server
from deerflow_nb.errors import HumanInputRequired, NotFoundError, UsageError

from .conftest import write_config


@pytest.fixture
def deerflow_config(tmp_path):
    config = write_config(tmp_path / "config.yaml", [])
    # a model whose answers depend only on the input, so graph rebuilds cannot reorder a script
    config.write_text(config.read_text().replace("deerflow_nb.testing:ScriptedChatModel",
                                                 "tests.server.models:FormThenReport"))
    return config


def test_discovery_explicit_hub_and_running_servers(monkeypatch):
    assert discover_server("http://h:1/deerflow/api/", "t") == ("http://h:1/deerflow/api", "t")
    monkeypatch.setenv("JUPYTERHUB_SERVICE_URL", "http://127.0.0.1:9/user/alice/")
    monkeypatch.setenv("JUPYTERHUB_API_TOKEN", "hub-token")
    assert discover_server() == ("http://127.0.0.1:9/user/alice/deerflow/api", "hub-token")
    monkeypatch.delenv("JUPYTERHUB_SERVICE_URL")
    servers = [{"pid": os.getppid(), "url": "http://127.0.0.1:8888/lab-base/", "token": "srv"},
               {"pid": -1, "url": "http://other/", "token": "x"}]
    monkeypatch.setattr("jupyter_server.serverapp.list_running_servers", lambda: iter(servers))
    assert discover_server() == ("http://127.0.0.1:8888/lab-base/deerflow/api", "srv")
    monkeypatch.setattr("jupyter_server.serverapp.list_running_servers", lambda: iter(servers[1:] * 2))
    with pytest.raises(UsageError, match="connect\\(url="):
        discover_server()


async def test_remote_thread_api_and_human_input(api_url, jp_auth_header):
    token = jp_auth_header["Authorization"].split()[1]
    remote = df.DeerFlow.connect(url=api_url, token=token)
    assert type(remote) is df.DeerFlow  # one class in both modes
    try:
        thread = await remote.athread()
        with pytest.raises(HumanInputRequired) as info:
            await thread.achat("Build the report")
        assert info.value.request["question"] == "Which dataset?"
        assert await thread.arespond({"dataset": "a.csv"}) == "Report built from a.csv."
        events = [e async for e in thread.astream("again")]
        assert events[-1].type == "end" and "".join(
            e.data["content"] for e in events if e.type == "messages-tuple" and e.data.get("type") == "ai"
        ) == "Answer to again."
        run = await thread.astart("third")
        assert await run.await_result() == "Answer to third."
        assert await run.acancel() == "not_cancellable"
        state = await thread.aget_state()
        assert [type(m).__name__ for m in state["messages"]][:2] == ["HumanMessage", "AIMessage"]
        assert len(await thread.ahistory(limit=3)) == 3
        assert (await thread.aworkspace_changes())["changes"] == []
        # the same chat widget works on a remote thread; it renders the thread's history
        # (built off this loop: the in-process server runs on it, and ui() loads history synchronously)
        widget = await asyncio.to_thread(thread.ui)
        assert repr(widget).startswith("<ChatWidget 'Build the report'")
        assert "Answer to third." in widget._repr_mimebundle_()[0]["text/markdown"]
        with pytest.raises(NotFoundError):
            await _missing_state(remote)
    finally:
        await asyncio.to_thread(remote.close)


async def _missing_state(remote):
    from deerflow_nb.client.thread import Thread

    return await Thread(remote, "missing").aget_state()


def test_enablement_file_and_extension_point():
    import tomllib
    from pathlib import Path

    from jupyter_ext import _jupyter_server_extension_points
    from jupyter_ext.app import DeerFlowExtension

    root = Path(__file__).resolve().parents[2]
    config = json.loads((root / "jupyter-config/server-config/jupyter_ext.json").read_text())
    assert config["ServerApp"]["jpserver_extensions"] == {"jupyter_ext": True}
    shared = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["hatch"]["build"]["targets"]["wheel"]
    assert shared["shared-data"]["jupyter-config/server-config/jupyter_ext.json"] == \
        "etc/jupyter/jupyter_server_config.d/jupyter_ext.json"
    (point,) = _jupyter_server_extension_points()
    assert point["app"] is DeerFlowExtension and DeerFlowExtension.name == "deerflow"


def test_deprecated_remote_names_still_work():
    from deerflow_nb.client import remote

    with pytest.warns(DeprecationWarning, match="DeerFlow.connect"):
        cls = remote.RemoteDeerFlow
    assert issubclass(cls, df.DeerFlow)
    with pytest.warns(DeprecationWarning):
        remote_thread = remote.RemoteThread
    with pytest.warns(DeprecationWarning):
        remote_run = remote.RemoteRun

    class Client:  # what the old constructors took: a client, a thread id, a run id
        def thread(self, thread_id):
            return Thread(thread_id)

    class Thread:
        def __init__(self, thread_id):
            self.id = thread_id

        def run(self, run_id):
            return (self.id, run_id)

    assert remote_thread(Client(), "t").id == "t"
    assert remote_run(Client(), "t", "r") == ("t", "r")  # tests/client/test_parity.py runs it for real


async def test_waiting_on_a_run_streams_only_its_answer_and_outcome(api_url, jp_auth_header):
    """``run.await_result()`` over HTTP joins with ``messages-tuple`` and ``end``: the server sends it no states."""
    token = jp_auth_header["Authorization"].split()[1]
    remote = df.DeerFlow.connect(url=api_url, token=token)
    try:
        backend = remote.backend
        joins: list[list[str]] = []
        received: list[str] = []
        join_stream = backend.sdk.runs.join_stream

        def recording(*args, **kwargs):
            joins.append(list(kwargs["stream_mode"]))

            async def parts():
                async for part in join_stream(*args, **kwargs):
                    received.append(part.event)
                    yield part
            return parts()

        backend.sdk.runs.join_stream = recording
        thread = await remote.athread()
        run = await thread.astart("first")
        assert await run.await_result() == "Answer to first."
        assert joins == [["messages-tuple", "end"]]
        assert "messages" in received and "end" in received and "values" not in received, received
        # streaming the run itself still gets every mode
        events = [e async for e in thread.astream("second")]
        assert {"values", "messages-tuple", "end"} <= {e.type for e in events}
    finally:
        remote.close()
