"""Errors raised by the memory store.

::

    DeerFlowError
    └── MemoryStoreError
        ├── MemoryConflictError   (someone else changed memory since you read it)
        └── MemoryCorruptError    (a memory file cannot be parsed; it is left untouched)
"""

from __future__ import annotations

from deerflow_nb.errors import DeerFlowError

__all__ = ["MemoryConflictError", "MemoryCorruptError", "MemoryStoreError"]


class MemoryStoreError(DeerFlowError):
    """Base class of memory storage failures."""


class MemoryConflictError(MemoryStoreError):
    """A write was based on a stale revision: another writer changed memory first.

    Call ``agent.memory.reload()`` and retry the change.
    """


class MemoryCorruptError(MemoryStoreError):
    """A memory file (``memory.json`` or a fact) is unreadable.

    The message names the file. DeerFlow never overwrites it: fix or move the file,
    then call ``agent.memory.reload()``.
    """
