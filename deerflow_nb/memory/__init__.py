"""Long-term memory: per-user summaries and facts, learnt from conversations and injected into new ones.

``memory.json`` holds the summaries; facts are Markdown files per agent bucket
(:class:`MemoryStorage`). After a run the conversation is queued
(:class:`MemoryQueue`) and a model turns it into updates (:func:`run_update`); the
next thread's first human message carries the ``<memory>`` block
(:func:`build_injection`). ``agent.memory`` is :class:`deerflow_nb.client.features.Memory`
(the old name ``MemoryClient`` still imports, with a ``DeprecationWarning``).
"""

from typing import Any

from deerflow_nb.memory.client import FactList
from deerflow_nb.memory.errors import MemoryConflictError, MemoryCorruptError, MemoryStoreError
from deerflow_nb.memory.facts import CATEGORIES, Fact
from deerflow_nb.memory.index import FactIndex, substring_search
from deerflow_nb.memory.injection import build_injection, estimate_tokens
from deerflow_nb.memory.plugin import MemoryPlugin
from deerflow_nb.memory.queue import MemoryQueue, PendingUpdate
from deerflow_nb.memory.service import MemoryService, conversation_of
from deerflow_nb.memory.storage import DEFAULT_AGENT, MemoryStorage
from deerflow_nb.memory.tools import MEMORY_TOOL_NAMES, build_memory_tools
from deerflow_nb.memory.updater import MemoryUpdate, apply_update, parse_update, run_update

__all__ = [
    "CATEGORIES",
    "DEFAULT_AGENT",
    "MEMORY_TOOL_NAMES",
    "Fact",
    "FactIndex",
    "FactList",
    "MemoryConflictError",
    "MemoryCorruptError",
    "MemoryPlugin",
    "MemoryQueue",
    "MemoryService",
    "MemoryStorage",
    "MemoryStoreError",
    "MemoryUpdate",
    "PendingUpdate",
    "apply_update",
    "build_injection",
    "build_memory_tools",
    "conversation_of",
    "estimate_tokens",
    "parse_update",
    "run_update",
    "substring_search",
]


def __getattr__(name: str) -> Any:
    if name == "MemoryClient":  # the embedded-only class before agent.memory worked over HTTP too
        import warnings

        from deerflow_nb.client.features import Memory

        warnings.warn("deerflow_nb.memory.MemoryClient is deerflow_nb.client.features.Memory (agent.memory)",
                      DeprecationWarning, stacklevel=2)
        return Memory
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
