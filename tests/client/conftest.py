from __future__ import annotations

from collections.abc import Iterator

import pytest

import deerflow_nb as df
from deerflow_nb.testing import ScriptedChatModel


def write_and_present(text: str = "hello world") -> list:
    return [
        {"content": "", "tool_calls": [{"name": "write_file", "args": {
            "description": "write", "path": "/mnt/user-data/outputs/hello.txt", "content": text}}]},
        {"content": "", "tool_calls": [{"name": "present_files", "args": {
            "filepaths": ["/mnt/user-data/outputs/hello.txt"]}}]},
        "I wrote **hello.txt** and presented it.",
    ]


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
