from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

import deerflow_nb as df
from deerflow_nb.testing import ScriptedChatModel


@pytest.fixture
def memory_agent(tmp_path: Path) -> Iterator[Callable[..., df.DeerFlow]]:
    """``memory_agent(model, **memory_config)``: a DeerFlow with a scripted model and memory settings."""
    agents: list[df.DeerFlow] = []

    def _make(model: ScriptedChatModel, **memory: Any) -> df.DeerFlow:
        path = tmp_path / f"config-{len(agents)}.yaml"
        path.write_text(yaml.safe_dump({"config_version": 1, "memory": memory}))
        agent = df.DeerFlow(config_path=path, model=model)
        agents.append(agent)
        return agent

    yield _make
    for agent in agents:
        agent.close()
