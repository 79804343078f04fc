"""Errors raised by the memory store.

::

    DeerFlowError
    └── MemoryStoreError
        ├── MemoryConflictError   (someone else changed memory since you read it; also a ConflictError: 409)
        └── MemoryCorruptError    (a memory file cannot be parsed; it is left untouched: 500)

Both are registered with :func:`deerflow_nb.errors.register_error`, so ``DeerFlow.connect()``
raises the same class as an embedded client.
"""

from __future__ import annotations

from deerflow_nb.errors import ConflictError, DeerFlowError, register_error

__all__ = ["MemoryConflictError", "MemoryCorruptError", "MemoryStoreError"]


class MemoryStoreError(DeerFlowError):
    """Base class of memory storage failures."""


@register_error
class MemoryConflictError(MemoryStoreError, ConflictError):
    """A write was based on a stale revision: another writer changed memory first.

    Call ``agent.memory.reload()`` and retry the change.
    """


@register_error
class MemoryCorruptError(MemoryStoreError):
    """A memory file (``memory.json`` or a fact) is unreadable.

    The message names the file. DeerFlow never overwrites it: fix or move the file,
    then call ``agent.memory.reload()``.
    """
