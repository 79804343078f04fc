"""Plan mode: the ``write_todos`` tool and its rules (at most one task in progress)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from langchain.agents.middleware import ModelRequest
from langchain_core.messages import SystemMessage, ToolMessage
from langchain_core.tools import InjectedToolCallId, tool
from langgraph.types import Command
from pydantic import BaseModel, Field

from deerflow_nb.agent.middlewares._base import ModelCallMiddleware

__all__ = ["PLAN_MODE_PROMPT", "TodoItem", "TodoListMiddleware", "validate_todos", "write_todos"]

PLAN_MODE_PROMPT = (
    "Plan mode is on. For a task with several steps, first call write_todos with the plan, keep exactly one "
    "task in_progress while you work on it, and call write_todos again to mark tasks completed as you go."
)


class TodoItem(BaseModel):
    """One task of the plan."""

    content: str = Field(min_length=1, description="What to do.")
    status: Literal["pending", "in_progress", "completed"] = "pending"


def validate_todos(todos: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Validate a todo list; raise ``ValueError`` if more than one task is in progress."""
    items = [TodoItem.model_validate(t).model_dump() for t in todos]
    active = sum(1 for t in items if t["status"] == "in_progress")
    if active > 1:
        raise ValueError(f"{active} tasks are in_progress; keep exactly one task in_progress at a time")
    return items


@tool("write_todos")
def write_todos(todos: list[TodoItem], tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
    """Create or replace the task list for the current work. Keep exactly one task in_progress.

    Args:
        todos: The full list of tasks, each with content and status (pending, in_progress, completed).
        tool_call_id: Injected by the runtime.
    """
    raw = [t.model_dump() if isinstance(t, BaseModel) else dict(t) for t in todos]
    try:
        items = validate_todos(raw)
    except ValueError as exc:
        return Command(update={"messages": [ToolMessage(content=f"Error: {exc}", tool_call_id=tool_call_id,
                                                        name="write_todos", status="error")]})
    done = sum(1 for t in items if t["status"] == "completed")
    text = f"Todo list updated: {done}/{len(items)} completed."
    return Command(update={"todos": items,
                           "messages": [ToolMessage(content=text, tool_call_id=tool_call_id, name="write_todos")]})


class TodoListMiddleware(ModelCallMiddleware):
    """Adds ``write_todos`` and the plan-mode instructions (only in plan mode)."""

    tools = [write_todos]

    def prepare(self, request: ModelRequest) -> ModelRequest:
        """Append the plan-mode instructions (and current todos) as a system message."""
        todos: list[dict[str, Any]] = list(request.state.get("todos") or [])  # type: ignore[call-overload]
        text = PLAN_MODE_PROMPT
        if todos:
            lines = "\n".join(f"- [{t['status']}] {t['content']}" for t in todos)
            text += f"\n\nCurrent todo list:\n{lines}"
        return request.override(messages=[*request.messages, SystemMessage(content=text)])
