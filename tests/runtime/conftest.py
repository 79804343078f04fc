from __future__ import annotations

from collections.abc import Iterator

import pytest

import deerflow_nb as df
from deerflow_nb.testing import ScriptedChatModel


@pytest.fixture
def make_agent(home) -> Iterator:
    agents: list[df.DeerFlow] = []

    def _make(responses: list | None = None, **kwargs) -> df.DeerFlow:
        kwargs.setdefault("model", ScriptedChatModel(responses=responses or []))
        agent = df.DeerFlow(**kwargs)
        agents.append(agent)
        return agent

    yield _make
    for agent in agents:
        agent.close()
