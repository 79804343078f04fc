"""Structured metadata stamped on every tool result (``deerflow_tool_meta``).

Middlewares read it instead of parsing result text: the tool-progress guard uses
``recoverable_by_model`` and ``recommended_next_action`` to tell "the model can fix
this" from "stop", and the run journal records ``status`` and ``error_type``.
"""

from __future__ import annotations

from typing import Any, Literal

from langchain_core.messages import ToolMessage

from deerflow_nb.errors import SandboxPathError, SandboxTimeoutError

__all__ = [
    "NEXT_ACTIONS",
    "TOOL_META_KEY",
    "ToolInputError",
    "classify_exception",
    "get_tool_meta",
    "normalize_tool_result",
]

TOOL_META_KEY = "deerflow_tool_meta"

#: ``error_type`` -> (recoverable_by_model, recommended_next_action).
NEXT_ACTIONS: dict[str, tuple[bool, str]] = {
    "not_found": (True, "check_path"),
    "permission": (True, "use_allowed_path"),
    "timeout": (True, "run_in_background"),
    "invalid_input": (True, "fix_arguments"),
    "command_failed": (True, "read_output_and_fix"),
    "internal": (False, "stop"),
}


class ToolInputError(ValueError):
    """A tool was called with arguments it cannot act on; the message says what to change."""


def classify_exception(exc: BaseException) -> dict[str, Any]:
    """The meta fields (``status``, ``error_type``, ...) describing a tool failure.

    ``FileNotFoundError`` -> ``not_found``; ``SandboxPathError`` / ``PermissionError``
    -> ``permission``; ``SandboxTimeoutError`` / ``TimeoutError`` -> ``timeout``;
    ``ValueError`` (incl. :class:`ToolInputError`), ``IsADirectoryError`` and
    ``NotADirectoryError`` -> ``invalid_input``; anything else -> ``internal``
    (not recoverable by the model).
    """
    if isinstance(exc, FileNotFoundError):
        error_type = "not_found"
    elif isinstance(exc, SandboxTimeoutError | TimeoutError):
        error_type = "timeout"
    elif isinstance(exc, SandboxPathError | PermissionError):
        error_type = "permission"
    elif isinstance(exc, ValueError | IsADirectoryError | NotADirectoryError):
        error_type = "invalid_input"
    else:
        error_type = "internal"
    recoverable, action = NEXT_ACTIONS[error_type]
    return {
        "status": "error",
        "error_type": error_type,
        "recoverable_by_model": recoverable,
        "recommended_next_action": action,
    }


def normalize_tool_result(
    message: ToolMessage,
    *,
    status: Literal["success", "error"] = "success",
    error_type: str | None = None,
    recoverable_by_model: bool | None = None,
    recommended_next_action: str | None = None,
    source: str = "builtin",
) -> ToolMessage:
    """Stamp ``message.additional_kwargs["deerflow_tool_meta"]`` and return the message.

    ``recoverable_by_model`` and ``recommended_next_action`` default from
    :data:`NEXT_ACTIONS` for a known ``error_type`` (a success is recoverable). An
    error also sets ``message.status = "error"``. The message is updated in place.
    """
    if status not in ("success", "error"):
        raise ValueError(f"status must be 'success' or 'error', got {status!r}")
    known = NEXT_ACTIONS.get(error_type or "")
    if recoverable_by_model is None:
        recoverable_by_model = known[0] if known else status == "success"
    if recommended_next_action is None and known and status == "error":
        recommended_next_action = known[1]
    message.additional_kwargs[TOOL_META_KEY] = {
        "status": status,
        "error_type": error_type,
        "recoverable_by_model": recoverable_by_model,
        "recommended_next_action": recommended_next_action,
        "source": source,
        "tool_name": message.name,
    }
    if status == "error":
        message.status = "error"
    return message


def get_tool_meta(message: ToolMessage) -> dict[str, Any] | None:
    """The meta dict stamped on ``message``, or ``None``."""
    meta = message.additional_kwargs.get(TOOL_META_KEY)
    return meta if isinstance(meta, dict) else None
