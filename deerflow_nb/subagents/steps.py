"""Pure helpers: a subagent's steps, usage totals, events and its ledger entry.

Nothing here does I/O; the executor feeds it messages and sends what it builds.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from deerflow_nb.agent.middlewares.token_usage import add_usage

__all__ = [
    "EVENT_TYPES",
    "LEDGER_MAX_STEPS",
    "LEDGER_STEP_CHARS",
    "STEP_MAX_CHARS",
    "SubagentResult",
    "build_step",
    "delegation_entry",
    "merge_usage_totals",
    "result_text",
    "usage_of",
]

SubagentStatus = Literal["completed", "failed", "timed_out"]
#: Event types on the ``custom`` stream, in lifecycle order.
EVENT_TYPES = ("task_started", "task_running", "task_completed", "task_failed", "task_timed_out")
#: A streamed step's text and each tool call's arguments are cut at this many characters.
STEP_MAX_CHARS = 2000
#: The ledger keeps at most this many steps per delegation, each cut shorter.
LEDGER_MAX_STEPS = 50
LEDGER_STEP_CHARS = 500


def _cut(text: str, limit: int) -> tuple[str, bool]:
    return (text, False) if len(text) <= limit else (text[:limit] + "…", True)


def build_step(message: BaseMessage, index: int, limit: int = STEP_MAX_CHARS) -> dict[str, Any] | None:
    """A JSON-ready summary of one assistant turn or tool result (``None`` for other messages)."""
    text, truncated = _cut(message.text, limit)
    if isinstance(message, AIMessage):
        calls = []
        for call in message.tool_calls:
            args, args_cut = _cut(json.dumps(call.get("args") or {}, default=str, ensure_ascii=False), limit)
            calls.append({"id": call.get("id"), "name": call["name"], "args": args, "args_truncated": args_cut})
        return {"index": index, "type": "ai", "id": message.id, "text": text, "truncated": truncated,
                "tool_calls": calls}
    if isinstance(message, ToolMessage):
        return {"index": index, "type": "tool", "id": message.id, "name": message.name,
                "tool_call_id": message.tool_call_id, "status": message.status, "text": text,
                "truncated": truncated}
    return None


def usage_of(messages: list[BaseMessage]) -> dict[str, int]:
    """Token totals (input, output, total, cache_read) of the AI messages in ``messages``."""
    total: dict[str, int] = {}
    for message in messages:
        if isinstance(message, AIMessage) and message.usage_metadata:
            add_usage(total, dict(message.usage_metadata))
    return total


def merge_usage_totals(target: dict[str, dict[str, int]], model: str, totals: dict[str, int]) -> None:
    """Add ``totals`` into ``target[model]`` (the ``context.extra["token_usage"]`` layout)."""
    if not totals:
        return
    bucket = target.setdefault(model, {})
    for key, value in totals.items():
        bucket[key] = bucket.get(key, 0) + int(value)


@dataclass
class SubagentResult:
    """How one delegation ended."""

    task_id: str
    subagent_type: str
    description: str
    model: str
    status: SubagentStatus
    result: str | None = None
    error: str | None = None
    stop_reason: str | None = None
    usage: dict[str, int] = field(default_factory=dict)
    steps: list[dict[str, Any]] = field(default_factory=list)
    started_at: float = 0.0
    finished_at: float = 0.0

    @property
    def event_type(self) -> str:
        """``task_completed``, ``task_failed`` or ``task_timed_out``."""
        return f"task_{self.status}"

    def event(self) -> dict[str, Any]:
        """The terminal ``custom`` event."""
        payload: dict[str, Any] = {"type": self.event_type, "task_id": self.task_id,
                                   "subagent_type": self.subagent_type, "model": self.model,
                                   "usage": dict(self.usage), "step_count": len(self.steps)}
        if self.result is not None:
            payload["result"] = self.result
        if self.error is not None:
            payload["error"] = self.error
        if self.stop_reason is not None:
            payload["stop_reason"] = self.stop_reason
        return payload


def result_text(result: SubagentResult) -> str:
    """The tool result the lead agent reads."""
    capped = f" (capped: {result.stop_reason})" if result.stop_reason else ""
    if result.status == "completed":
        return f"Task Succeeded{capped}. Result: {result.result or ''}"
    if result.status == "timed_out":
        return f"Task timed out. Error: {result.error}"
    return f"Task failed{capped}. Error: {result.error}"


def delegation_entry(result: SubagentResult, run_id: str | None) -> dict[str, Any]:
    """The ``ThreadState.delegations`` entry: status, result, usage and a step summary."""
    steps = []
    for step in result.steps[-LEDGER_MAX_STEPS:]:
        short = dict(step)
        short["text"], cut = _cut(step.get("text") or "", LEDGER_STEP_CHARS)
        short["truncated"] = bool(step.get("truncated")) or cut
        steps.append(short)
    entry: dict[str, Any] = {
        "id": result.task_id, "run_id": run_id, "description": result.description,
        "subagent_type": result.subagent_type, "model": result.model, "status": result.status,
        "usage": dict(result.usage), "steps": steps, "step_count": len(result.steps),
        "started_at": result.started_at, "finished_at": result.finished_at,
    }
    for name in ("result", "error", "stop_reason"):
        value = getattr(result, name)
        if value is not None:
            entry[name] = value
    return entry
