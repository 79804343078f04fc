"""deerflow-nb: the DeerFlow super agent as a notebook SDK.

Start with :class:`DeerFlow`::

    import deerflow_nb as df
    agent = df.DeerFlow()
    print(agent.thread().chat("Summarise data.csv"))
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from deerflow_nb.errors import (
    AnswerError,
    ConfigError,
    DeerFlowError,
    HumanInputRequired,
    ModelCallError,
    ModelNotFoundError,
    NoModelConfiguredError,
    NotFoundError,
    RunError,
    RunInterruptedError,
    RunTimeoutError,
    SandboxError,
    SandboxPathError,
    SandboxTimeoutError,
    SyncInAsyncError,
    ThreadBusyError,
    ToolBudgetError,
    UsageError,
)

if TYPE_CHECKING:
    from deerflow_nb.client import DeerFlow, Run, StreamEvent, Thread

__version__ = "0.1.0"

__all__ = [
    "AnswerError",
    "ConfigError",
    "DeerFlow",
    "DeerFlowError",
    "HumanInputRequired",
    "ModelCallError",
    "ModelNotFoundError",
    "NoModelConfiguredError",
    "NotFoundError",
    "Run",
    "RunError",
    "RunInterruptedError",
    "RunTimeoutError",
    "SandboxError",
    "SandboxPathError",
    "SandboxTimeoutError",
    "StreamEvent",
    "SyncInAsyncError",
    "Thread",
    "ThreadBusyError",
    "ToolBudgetError",
    "UsageError",
    "__version__",
    "load_ipython_extension",
]

_LAZY = {"DeerFlow", "Run", "StreamEvent", "Thread"}


def __getattr__(name: str) -> Any:
    # The client pulls in LangChain/LangGraph; import it on first use so that
    # `import deerflow_nb` (and `%load_ext`) stays cheap.
    if name in _LAZY:
        from deerflow_nb import client

        return getattr(client, name)
    raise AttributeError(f"module 'deerflow_nb' has no attribute {name!r}")


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext deerflow_nb``: register the ``%deerflow`` / ``%%deerflow`` magics."""
    from deerflow_nb.magics import register

    register(ipython)
