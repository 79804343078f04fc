from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

import deerflow_nb as df
from deerflow_nb.testing import ScriptedChatModel


@pytest.fixture
def make_agent(home, tmp_path: Path) -> Iterator:
    agents: list[df.DeerFlow] = []

    def _make(responses: list, subagents: dict | None = None, **kwargs) -> df.DeerFlow:
        config = {"memory": {"enabled": False}, "subagents": subagents or {}}
        path = tmp_path / f"config-{len(agents)}.yaml"
        path.write_text(yaml.safe_dump(config))
        kwargs.setdefault("model", ScriptedChatModel(responses=responses))
        agent = df.DeerFlow(path, subagents=True, persistence="memory", **kwargs)
        agents.append(agent)
        return agent

    yield _make
    for agent in agents:
        agent.close()
