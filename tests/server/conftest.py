"""Server-extension fixtures: pytest-jupyter's in-process server (async tests here run on its loop).

Async tests in this folder are plain ``async def`` (no asyncio marker): pytest-jupyter's
runner drives them on the server's loop; pytest-asyncio stays in strict mode.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from pytest_jupyter.jupyter_server import *  # noqa: F403  (fixtures: jp_serverapp, jp_fetch, ...)

ANSWER = "Hello from the scripted model."


def write_config(path: Path, responses: list, *, latency: float = 0.0, extra: dict | None = None) -> Path:
    """A config.yaml whose only model is the scripted test model."""
    config = {"config_version": 1, "models": [{"name": "scripted", "use": "deerflow_nb.testing:ScriptedChatModel",
                          "responses": responses, "latency": latency}],
              "memory": {"enabled": False}, "title": {"enabled": True}, **(extra or {})}
    path.write_text(yaml.safe_dump(config))
    return path


@pytest.fixture
def deerflow_config(tmp_path) -> Path:
    return write_config(tmp_path / "config.yaml", [ANSWER])


@pytest.fixture
def jp_server_config(deerflow_config, home):
    return {"ServerApp": {"jpserver_extensions": {"jupyter_ext": True}},
            # in-process servers leave the test process's collector alone (test_gc_freeze checks the default)
            "DeerFlowExtension": {"config_path": str(deerflow_config), "home": str(home), "gc_freeze": False}}


@pytest.fixture
def api_url(jp_serverapp, http_server_client, jp_base_url) -> str:
    """Absolute URL of the gateway in the in-process server."""
    return http_server_client.get_url(f"{jp_base_url}deerflow/api")


@pytest.fixture
def lg_client(api_url, jp_auth_header):
    """The official langgraph-sdk client, pointed at the gateway with the Jupyter token."""
    from langgraph_sdk import get_client

    return get_client(url=api_url, api_key=None, headers=jp_auth_header)
