"""JSON shapes of the LangGraph-compatible resources (assistant, thread, run, state)."""

from __future__ import annotations

from typing import Any

from deerflow_nb.persistence import RunInfo, ThreadRecord
from deerflow_nb.persistence.runs import public_status
from deerflow_nb.runtime.serialize import serialize_state
from jupyter_ext.handlers.base import iso

__all__ = ["ASSISTANT", "run_json", "state_json", "thread_json"]

#: The one assistant: the lead agent.
ASSISTANT: dict[str, Any] = {
    "assistant_id": "lead_agent", "graph_id": "lead_agent", "name": "lead_agent",
    "description": "DeerFlow's lead agent: sandboxed tools, skills, memory, subagents, human input.",
    "config": {}, "context": {}, "metadata": {"created_by": "system"}, "version": 1,
    "created_at": "1970-01-01T00:00:00+00:00", "updated_at": "1970-01-01T00:00:00+00:00",
}


def thread_json(record: ThreadRecord, values: dict[str, Any] | None = None) -> dict[str, Any]:
    """A LangGraph ``Thread`` (plus DeerFlow's ``title``); ``values`` is ``null`` until the thread has state."""
    updated = iso(record.updated_at)
    out = {"thread_id": record.thread_id, "created_at": iso(record.created_at), "updated_at": updated,
           "state_updated_at": updated,
           "metadata": {**record.metadata, "graph_id": record.assistant_id, "assistant_id": record.assistant_id},
           "status": record.status, "config": {}, "title": record.title, "values": None}
    if values:  # as LangGraph: a thread with state also has its config, error and interrupts
        out.update(config={"configurable": {}}, values=serialize_state(values), error=None, interrupts={})
    return out


def run_json(info: RunInfo) -> dict[str, Any]:
    """A LangGraph ``Run`` (plus DeerFlow's ``error``, ``stop_reason``, ``usage``)."""
    return {"run_id": info.run_id, "thread_id": info.thread_id, "assistant_id": info.assistant_id,
            "created_at": iso(info.created_at), "updated_at": iso(info.updated_at),
            "status": public_status(info.status),
            "metadata": info.metadata, "multitask_strategy": info.multitask_strategy, "kwargs": info.kwargs,
            "error": info.error, "stop_reason": info.stop_reason, "usage": info.usage}


def state_json(thread_id: str, item: dict[str, Any] | None, ref: dict[str, Any] | None = None) -> dict[str, Any]:
    """A LangGraph ``ThreadState`` from one history item of the engine (``None``: no state yet).

    ``ref``: the ``checkpoint`` object as the request named it (LangGraph echoes the config it was asked for).
    """
    if item is None:
        return {"values": {}, "next": [], "tasks": [], "interrupts": [], "metadata": {}, "created_at": None,
                "checkpoint": None, "parent_checkpoint": None, "checkpoint_id": None, "parent_checkpoint_id": None}

    def config(checkpoint_id: str | None) -> dict[str, Any] | None:
        if checkpoint_id is None:
            return None
        return {"thread_id": thread_id, "checkpoint_ns": "", "checkpoint_id": checkpoint_id}

    return {"values": serialize_state(item["values"]), "next": [], "tasks": [], "interrupts": [],
            "metadata": item.get("metadata", {}), "created_at": item.get("created_at"),
            "checkpoint": ref or config(item["checkpoint_id"]),
            "parent_checkpoint": config(item.get("parent_checkpoint_id")),
            "checkpoint_id": item["checkpoint_id"], "parent_checkpoint_id": item.get("parent_checkpoint_id")}
