from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import deerflow_nb as df
from deerflow_nb.testing import ScriptedChatModel

SERVER = Path(__file__).with_name("server.py")


def server_entry(**extra) -> dict:
    return {"type": "stdio", "command": sys.executable, "args": [str(SERVER)], **extra}


@pytest.fixture
def extensions_file(tmp_path: Path) -> Path:
    """extensions_config.json in the test's cwd (found by the search), with the test server."""
    path = Path.cwd() / "extensions_config.json"
    path.write_text(json.dumps({"mcpServers": {"notes": server_entry()}, "skills": {}}))
    return path


@pytest.fixture
def make_agent(home) -> Iterator:
    agents: list[df.DeerFlow] = []

    def _make(responses: list | None = None, **kwargs) -> df.DeerFlow:
        kwargs.setdefault("model", ScriptedChatModel(responses=responses or []))
        kwargs.setdefault("persistence", "memory")
        agent = df.DeerFlow(**kwargs)
        agents.append(agent)
        return agent

    yield _make
    for agent in agents:
        agent.close()
