"""Request trace ids: one correlation id per HTTP request (``X-Trace-Id``) or per run.

The gateway binds the id of a request with :func:`bind_trace_id`; a run started while it
is bound carries it in its journal (``run_end`` / ``run_error``), its Langfuse/LangSmith
metadata (``deerflow_trace_id``) and its OpenTelemetry run span. With none bound, a run
gets one of its own. It is a correlation key, not a provider's native trace id.
"""

from __future__ import annotations

import contextvars
import re
import uuid

from deerflow_nb.errors import UsageError

__all__ = ["MAX_TRACE_ID_LENGTH", "TRACE_ID_HEADER", "bind_trace_id", "current_trace_id", "new_trace_id",
           "reset_trace_id", "validate_trace_id"]

#: The request and response header.
TRACE_ID_HEADER = "X-Trace-Id"
#: Longest accepted inbound trace id.
MAX_TRACE_ID_LENGTH = 128
_SAFE = re.compile(r"[A-Za-z0-9._:\-]+")
_CURRENT: contextvars.ContextVar[str | None] = contextvars.ContextVar("deerflow_trace_id", default=None)


def new_trace_id() -> str:
    """A fresh id: 32 lowercase hex digits (also a valid W3C / OpenTelemetry trace id)."""
    return uuid.uuid4().hex


def validate_trace_id(value: str, where: str = TRACE_ID_HEADER) -> str:
    """``value`` when it is 1 to :data:`MAX_TRACE_ID_LENGTH` characters of ``A-Z a-z 0-9 . _ : -``.

    Raises :class:`~deerflow_nb.errors.UsageError` naming ``where`` otherwise (logs and
    headers must never carry what a caller smuggles in).
    """
    if not isinstance(value, str) or not value:
        raise UsageError(f"{where}: must be a non-empty string")
    if len(value) > MAX_TRACE_ID_LENGTH:
        raise UsageError(f"{where}: longer than {MAX_TRACE_ID_LENGTH} characters")
    if not _SAFE.fullmatch(value):
        raise UsageError(f"{where}: only letters, digits and . _ : - are allowed")
    return value


def bind_trace_id(value: str) -> contextvars.Token[str | None]:
    """Make ``value`` (validated) the current trace id; pass the token to :func:`reset_trace_id`."""
    return _CURRENT.set(validate_trace_id(value))


def reset_trace_id(token: contextvars.Token[str | None]) -> None:
    """Undo :func:`bind_trace_id`."""
    _CURRENT.reset(token)


def current_trace_id() -> str | None:
    """The bound trace id (``None``: none bound)."""
    return _CURRENT.get()
