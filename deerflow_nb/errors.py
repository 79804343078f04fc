"""Exceptions raised by deerflow-nb.

Two families: *usage* errors (you called the API wrong or the configuration is
invalid; fix your code or config) and *run-time* errors (something failed while
the agent was working; retry, or inspect the run).

Hierarchy::

    DeerFlowError
    ├── UsageError                     (API misuse; fix the calling code)
    │   ├── ConfigError                (invalid config.yaml / extensions_config.json)
    │   ├── ModelNotFoundError         (unknown model name)
    │   ├── NoModelConfiguredError     (no model configured and no embedded default)
    │   ├── SyncInAsyncError           (a sync twin called from the private loop)
    │   └── ThreadBusyError            (a second run on a busy thread)
    ├── NotFoundError                  (thread / run / file does not exist for this user)
    ├── SandboxError                   (sandbox failures)
    │   ├── SandboxPathError           (a path escapes the mapped roots)
    │   └── SandboxTimeoutError        (a command ran past its wall-clock limit)
    ├── HumanInputRequired             (headless run hit a human-input request)
    └── RunError                       (a run ended in error)
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "ConfigError",
    "DeerFlowError",
    "HumanInputRequired",
    "ModelNotFoundError",
    "NoModelConfiguredError",
    "NotFoundError",
    "RunError",
    "SandboxError",
    "SandboxPathError",
    "SandboxTimeoutError",
    "SyncInAsyncError",
    "ThreadBusyError",
    "UsageError",
]


class DeerFlowError(Exception):
    """Base class of every error raised by deerflow-nb."""


class UsageError(DeerFlowError):
    """The API was used wrongly; the message says how to fix the call."""


class ConfigError(UsageError):
    """Raised by the config loaders when a file is invalid.

    The message names the offending key path (e.g. ``models[0].use``) and the file.
    """

    def __init__(self, message: str, *, key: str | None = None, path: str | None = None) -> None:
        self.key = key
        self.path = path
        super().__init__(message)


class ModelNotFoundError(UsageError, KeyError):
    """Raised by the model factory for an unknown model name; lists the known names."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else ""


class NoModelConfiguredError(UsageError):
    """Raised when no model is configured and the embedded default is not installed."""


class SyncInAsyncError(UsageError):
    """A synchronous twin was called from the client's private event loop; ``await`` the async method."""


class ThreadBusyError(UsageError):
    """A run was started on a thread that already has an active run (multitask strategy ``reject``)."""


class NotFoundError(DeerFlowError, LookupError):
    """A thread, run, upload or artifact does not exist (or belongs to another user)."""


class SandboxError(DeerFlowError):
    """A sandbox operation failed."""


class SandboxPathError(SandboxError, PermissionError):
    """A path escapes the sandbox's mapped roots (``..``, symlinks, absolute host paths)."""


class SandboxTimeoutError(SandboxError, TimeoutError):
    """A sandbox command ran past its wall-clock limit and its process group was killed."""


class HumanInputRequired(DeerFlowError):
    """A headless run reached a human-input request and no answer was supplied.

    ``request`` holds the ``human_input`` payload; answer it with ``thread.respond(...)``
    or pass ``responses=`` to ``thread.chat``.
    """

    def __init__(self, request: dict[str, Any], *, thread_id: str | None = None) -> None:
        self.request = request
        self.thread_id = thread_id
        question = request.get("question") or request.get("title") or "the agent asked for input"
        super().__init__(
            f"Human input required on thread {thread_id!r}: {question}. "
            "Answer with thread.respond(...) or pass responses= to chat()."
        )


class RunError(DeerFlowError):
    """A run ended with status ``error``; ``run_id`` and ``detail`` describe it."""

    def __init__(self, message: str, *, run_id: str | None = None, detail: Any = None) -> None:
        self.run_id = run_id
        self.detail = detail
        super().__init__(message)
