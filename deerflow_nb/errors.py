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
    │   ├── SkillInstallError          (a .skill archive was refused; the message names the entry)
    │   └── ConflictError              (the request conflicts with what exists)
    │       ├── ThreadBusyError        (a second run on a busy thread)
    │       └── CheckpointModeMismatchError (a full-mode process opened a delta-mode thread)
    ├── CheckpointModeReconfigurationError (a second checkpoint mode in one process)
    ├── NotFoundError                  (thread / run / file does not exist for this user)
    ├── AdminRequiredError             (a server-wide change by a non-admin under JupyterHub; 403)
    ├── SandboxError                   (sandbox failures)
    │   ├── SandboxPathError           (a path escapes the mapped roots)
    │   └── SandboxTimeoutError        (a command ran past its wall-clock limit)
    ├── HumanInputRequired             (headless run hit a human-input request)
    └── RunError                       (a run did not succeed: status error / timeout / interrupted)
        ├── ModelCallError             (the model failed: model_error, model_timeout, rate_limited,
        │                               model_unavailable, model_auth, context_overflow)
        ├── ToolBudgetError            (the run ran out of steps: recursion_limit)
        ├── RunTimeoutError            (the run passed its ``timeout``; also a ``TimeoutError``)
        ├── RunInterruptedError        (cancelled, kernel interrupt, orphan_recovered)
        └── AnswerError                (no trustworthy answer: empty_answer, raw_tool_call, instruction_echo,
                                        ungrounded_answer, unanswered_part, undelivered_outputs)

Every :class:`RunError` carries ``run_id``, ``status``, ``stop_reason`` and ``cause`` (the
message of what went wrong); :func:`run_error` picks the subclass. In IPython a
``RunError`` prints as one line (no traceback); ``%tb`` or ``err.detail`` give the rest.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "HTTP_STATUSES",
    "ANSWER_STOP_REASONS",
    "AdminRequiredError",
    "AnswerError",
    "CheckpointModeMismatchError",
    "CheckpointModeReconfigurationError",
    "ConfigError",
    "ConflictError",
    "DeerFlowError",
    "HumanInputRequired",
    "ModelNotFoundError",
    "NoModelConfiguredError",
    "NotFoundError",
    "ModelCallError",
    "PayloadTooLargeError",
    "RunError",
    "RunInterruptedError",
    "RunTimeoutError",
    "ToolBudgetError",
    "run_error",
    "SandboxError",
    "SandboxPathError",
    "SandboxTimeoutError",
    "SkillInstallError",
    "SyncInAsyncError",
    "error_for",
    "register_error",
    "status_for",
    "ThreadBusyError",
    "UsageError",
]

#: ``stop_reason`` values of runs whose answer could not be trusted (see :class:`AnswerError`).
ANSWER_STOP_REASONS = frozenset({"empty_answer", "raw_tool_call", "instruction_echo", "ungrounded_answer",
                                 "unanswered_part", "undelivered_outputs"})
#: ``stop_reason`` values of failed model calls (see :class:`ModelCallError`).
MODEL_STOP_REASONS = frozenset({"model_error", "model_timeout", "rate_limited", "model_unavailable", "model_auth",
                                "context_overflow"})


class DeerFlowError(Exception):
    """Base class of every error raised by deerflow-nb."""


class UsageError(DeerFlowError):
    """The API was used wrongly; the message says how to fix the call."""


class SkillInstallError(UsageError):
    """A ``.skill`` archive was refused; the message says why, naming the entry (nothing was written)."""


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


class ConflictError(UsageError):
    """The request conflicts with what exists (e.g. creating a thread whose id is taken): HTTP 409."""


class PayloadTooLargeError(UsageError):
    """A request body, metadata value or upload is over its configured size limit: HTTP 413."""


class ThreadBusyError(ConflictError):
    """A run was started on a thread that already has an active run (multitask strategy ``reject``)."""


class CheckpointModeMismatchError(ConflictError):
    """A ``checkpoint_channel_mode: full`` process was asked to read or write a thread written in delta mode.

    Full mode cannot read delta checkpoints (their ``messages`` are per-step writes, not a
    list). Set ``checkpoint_channel_mode: delta`` and restart. HTTP 409.
    """


class CheckpointModeReconfigurationError(DeerFlowError):
    """A second, different checkpoint mode (or delta snapshot frequency) was asked for in one process.

    The mode is frozen by the first runtime or agent graph of a process; restart to change it. HTTP 503.
    """


class NotFoundError(DeerFlowError, LookupError):
    """A thread, run, upload or artifact does not exist (or belongs to another user)."""


class AdminRequiredError(DeerFlowError, PermissionError):
    """A route that changes the server for every user (``PUT /mcp/config``) was called by a non-admin.

    Raised (as 403) by the server extension under a multi-user identity provider such as
    JupyterHub's, where only Hub admins may make such changes. Ask an admin, or change
    your own settings (skills and memory are per user).
    """


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
    """A run did not succeed (status ``error``, ``timeout`` or ``interrupted``).

    Attributes: ``run_id``, ``status``, ``stop_reason`` (e.g. ``model_timeout``,
    ``cancelled``), ``cause`` (the failure's message, one line) and ``detail`` (the
    run's error record, a dict).
    """

    def __init__(self, message: str, *, run_id: str | None = None, detail: Any = None, status: str = "error",
                 stop_reason: str | None = None, cause: str | None = None) -> None:
        self.run_id = run_id
        self.detail = detail
        self.status = status
        self.stop_reason = stop_reason
        self.cause = cause if cause is not None else message
        super().__init__(message)

    def _render_traceback_(self) -> list[str]:
        """IPython shows this instead of the traceback: one readable line."""
        return [f"{type(self).__name__}: {self}"]


class ModelCallError(RunError):
    """The model call failed (after retries, for transient failures)."""


class ToolBudgetError(RunError):
    """The run used up its step budget (``recursion_limit``) before answering."""


class RunTimeoutError(RunError, TimeoutError):
    """The run passed its ``timeout`` and was stopped."""


class RunInterruptedError(RunError):
    """The run was cut short (cancelled, kernel interrupt, or its process stopped); the partial answer is kept."""


class AnswerError(RunError):
    """The run produced no answer that may be presented as one, even after a repair turn.

    Raised inside a run by the answer checks (``stop_reason`` in :data:`ANSWER_STOP_REASONS`): an
    empty reply, a tool call written as text, the prompt's instructions echoed, placeholders or
    numbers no tool computed, a part of the question left unanswered (or a program that kept
    failing), or a file the user asked for that was not written. ``cause`` says what could not be
    done. The run ends with status ``error``; nothing is stored as its answer.
    """


def run_error(*, run_id: str | None, status: str, stop_reason: str | None, cause: str | None,
              detail: Any = None) -> RunError:
    """The :class:`RunError` (subclass) describing a run that did not succeed."""
    cls: type[RunError] = RunError
    if status == "timeout":
        cls = RunTimeoutError
    elif status == "interrupted" or stop_reason in {"cancelled", "orphan_recovered"}:
        cls = RunInterruptedError
    elif stop_reason in MODEL_STOP_REASONS:
        cls = ModelCallError
    elif stop_reason == "recursion_limit":
        cls = ToolBudgetError
    elif stop_reason in ANSWER_STOP_REASONS:
        cls = AnswerError
    reason = f" ({stop_reason})" if stop_reason else ""
    text = (cause or status).strip().splitlines()[0] if (cause or status).strip() else status
    message = f"run {run_id} ended with status {status}{reason}: {text}"
    return cls(message, run_id=run_id, detail=detail, status=status, stop_reason=stop_reason, cause=cause)


# -- HTTP: one status <-> exception table, shared by the server's handlers and the HTTP client --------
#: Most specific first: a handler answers an exception with the first matching status; the
#: HTTP client raises the class named in the body (``error_type``) or, failing that, the
#: class of the status. So the same call raises the same exception in both modes.
HTTP_STATUSES: tuple[tuple[type[DeerFlowError], int], ...] = (
    (NotFoundError, 404),
    (SandboxPathError, 403),
    (AdminRequiredError, 403),
    (ThreadBusyError, 409),
    (ConflictError, 409),
    (CheckpointModeReconfigurationError, 503),
    (PayloadTooLargeError, 413),
    (UsageError, 422),
    (DeerFlowError, 500),
)
_BY_NAME: dict[str, type[DeerFlowError]] = {}


def status_for(exc: DeerFlowError) -> int:
    """The HTTP status a handler answers ``exc`` with."""
    return next(status for cls, status in HTTP_STATUSES if isinstance(exc, cls))


def register_error(cls: type[DeerFlowError]) -> type[DeerFlowError]:
    """Let the HTTP client raise ``cls`` itself when a route names it (``error_type``); a class decorator."""
    _BY_NAME[cls.__name__] = cls
    return cls


def error_for(status: int, message: str, error_type: str | None = None) -> DeerFlowError:
    """The exception the HTTP client raises for an error answer (``{"message", "error_type"}``)."""
    cls = _BY_NAME.get(error_type or "")
    if cls is None:
        if status in {400, 422}:
            cls = UsageError
        else:
            cls = next((c for c, s in HTTP_STATUSES if s == status), DeerFlowError)
    try:
        return cls(message)
    except TypeError:  # a class with a richer constructor: fall back to its status family
        return next(c for c, _ in HTTP_STATUSES if issubclass(cls, c))(message)


for _cls in (DeerFlowError, UsageError, ConfigError, ModelNotFoundError, NoModelConfiguredError, ThreadBusyError,
             ConflictError, PayloadTooLargeError, CheckpointModeMismatchError, CheckpointModeReconfigurationError,
             NotFoundError, SandboxError, SandboxPathError, SandboxTimeoutError, AdminRequiredError, SkillInstallError):
    register_error(_cls)
