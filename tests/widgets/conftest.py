from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import comm
import pytest
from comm.base_comm import BaseComm

import deerflow_nb as df
from deerflow_nb.testing import ScriptedChatModel


class RecordingComm(BaseComm):
    """A comm that keeps every message a widget publishes (no kernel, no browser)."""

    log: list[tuple[str, str, Any]] = []

    def publish_msg(self, msg_type: str, data: Any = None, metadata: Any = None, buffers: Any = None,
                    **keys: Any) -> None:
        RecordingComm.log.append((self.comm_id, msg_type, data))


class CommLog:
    def __init__(self) -> None:
        RecordingComm.log = []

    def updates(self, widget: Any, trait: str | None = None) -> list[dict[str, Any]]:
        """The state dicts of `update` messages sent for `widget` (optionally those that carry `trait`)."""
        out = []
        for comm_id, msg_type, data in RecordingComm.log:
            if comm_id != widget.comm.comm_id or msg_type != "comm_msg" or data.get("method") != "update":
                continue
            if trait is None or trait in data["state"]:
                out.append(data["state"])
        return out


@pytest.fixture
def comm_log(monkeypatch: pytest.MonkeyPatch) -> CommLog:
    monkeypatch.setattr(comm, "create_comm", lambda *a, **k: RecordingComm(*a, **k))
    return CommLog()


class FakeClock:
    """Advances by `step` seconds on every reading; timers are recorded, never fired."""

    def __init__(self, step: float) -> None:
        self.now = 0.0
        self.step = step
        self.timers: list[float] = []

    def __call__(self) -> float:
        self.now += self.step
        return self.now

    def call_later(self, delay: float, callback: Any) -> Any:
        self.timers.append(delay)

        class Handle:
            def cancel(self) -> None:
                pass

        return Handle()


@pytest.fixture
def make_agent(home) -> Iterator:
    agents: list[df.DeerFlow] = []

    def _make(responses: list | None = None, **kwargs: Any) -> df.DeerFlow:
        kwargs.setdefault("model", ScriptedChatModel(responses=responses or []))
        agent = df.DeerFlow(**kwargs)
        agents.append(agent)
        return agent

    yield _make
    for agent in agents:
        agent.close()


FORM = {"content": "", "tool_calls": [{"name": "ask_clarification", "args": {
    "question": "How should I build the report?", "clarification_type": "missing_info",
    "fields": [{"name": "dataset", "label": "Dataset", "type": "select", "options": ["sales.csv", "costs.csv"],
                "required": True},
               {"name": "rows", "label": "Rows", "type": "number"},
               {"name": "agree", "label": "Overwrite outputs", "type": "checkbox", "required": True}]}}]}


def write_and_present(name: str = "hello.csv", text: str = "a,b\n1,2\n") -> list:
    path = f"/mnt/user-data/outputs/{name}"
    return [
        {"content": "", "tool_calls": [{"name": "write_file", "args": {
            "description": "write", "path": path, "content": text}}]},
        {"content": "", "tool_calls": [{"name": "present_files", "args": {"filepaths": [path]}}]},
        f"I wrote **{name}**.",
    ]


def front_end_send(widget: Any, content: dict[str, Any]) -> None:
    """Deliver `content` as the browser's `model.send(content)` would: through the widget's comm."""
    widget.comm.handle_msg({"content": {"comm_id": widget.comm.comm_id,
                                        "data": {"method": "custom", "content": content}},
                            "buffers": []})
