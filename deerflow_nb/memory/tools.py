"""Tool mode (``memory.mode: tool``): the model manages memory itself.

``memory_search``, ``memory_add``, ``memory_update`` and ``memory_delete`` act on
the memory of the run's user (``RunContext.user_id``), never another user's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from langchain_core.tools import BaseTool
from pydantic import Field

from deerflow_nb.errors import NotFoundError, UsageError
from deerflow_nb.memory.errors import MemoryStoreError
from deerflow_nb.memory.facts import CATEGORIES
from deerflow_nb.memory.storage import MemoryStorage
from deerflow_nb.tools.common import Reply, Runtime, ToolOutput, context_value, make_tool, reply

__all__ = ["MEMORY_TOOL_NAMES", "build_memory_tools"]

MEMORY_TOOL_NAMES = ("memory_search", "memory_add", "memory_update", "memory_delete")
_EXPECTED = (MemoryStoreError, NotFoundError, UsageError)
Category = Annotated[str, Field(description=f"One of {', '.join(CATEGORIES)}.")]


def build_memory_tools(storage_for: Callable[[str], MemoryStorage],
                       threshold: Callable[[], float]) -> list[BaseTool]:
    """The four memory tools; ``storage_for(user_id)`` gives the user's store."""

    def run(name: str, runtime: Runtime, body: Callable[[MemoryStorage], str]) -> ToolOutput:
        storage = storage_for(str(context_value(runtime, "user_id") or "default"))
        try:
            return reply(runtime, name, body(storage))
        except _EXPECTED as exc:
            return reply(runtime, name, Reply(f"Error: {exc}", status="error", error_type="invalid_input"))

    def memory_search(query: Annotated[str, Field(description="Words to look for in remembered facts.")],
                      limit: int = 5, *, runtime: Runtime) -> ToolOutput:
        def body(storage: MemoryStorage) -> str:
            found = storage.search(query, max(1, min(limit, 20)))
            if not found:
                return f"No remembered facts match {query!r}."
            return "\n".join(f"{f.id} [{f.category}, {f.confidence:.2f}] {f.content}" for f in found)

        return run("memory_search", runtime, body)

    def memory_add(content: Annotated[str, Field(description="One atomic, durable fact about the user.")],
                   category: Category = "context", confidence: float = 0.9, *, runtime: Runtime) -> ToolOutput:
        def body(storage: MemoryStorage) -> str:
            if confidence < threshold():
                return f"Not stored: confidence {confidence} is below the threshold {threshold()}."
            fact = storage.add_fact(content, category=category, confidence=confidence, source="tool")
            return f"Remembered {fact.id}: {fact.content}"

        return run("memory_add", runtime, body)

    def memory_update(fact_id: str, content: str | None = None, category: str | None = None,
                      confidence: float | None = None, *, runtime: Runtime) -> ToolOutput:
        def body(storage: MemoryStorage) -> str:
            fact = storage.update_fact(fact_id, content=content, category=category, confidence=confidence,
                                       expected_revision=None)
            return f"Updated {fact.id}: {fact.content}"

        return run("memory_update", runtime, body)

    def memory_delete(fact_id: str, *, runtime: Runtime) -> ToolOutput:
        def body(storage: MemoryStorage) -> str:
            storage.delete_fact(fact_id, expected_revision=None)
            return f"Forgot {fact_id}."

        return run("memory_delete", runtime, body)

    descriptions: dict[str, tuple[Callable[..., Any], str]] = {
        "memory_search": (memory_search, "Search what you remember about the user (long-term memory)."),
        "memory_add": (memory_add, "Remember a durable fact about the user for future conversations."),
        "memory_update": (memory_update, "Correct a remembered fact by its id (from memory_search)."),
        "memory_delete": (memory_delete, "Forget a remembered fact by its id."),
    }
    return [make_tool(func, name=name, description=text) for name, (func, text) in descriptions.items()]
