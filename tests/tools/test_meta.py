from __future__ import annotations

import pytest
from langchain_core.messages import ToolMessage

from deerflow_nb.errors import SandboxPathError, SandboxTimeoutError
from deerflow_nb.tools.meta import (
    TOOL_META_KEY,
    ToolInputError,
    classify_exception,
    get_tool_meta,
    normalize_tool_result,
)


@pytest.mark.parametrize(
    ("exc", "error_type", "recoverable"),
    [
        (FileNotFoundError("x"), "not_found", True),
        (SandboxPathError("x"), "permission", True),
        (PermissionError("x"), "permission", True),
        (SandboxTimeoutError("x"), "timeout", True),
        (ValueError("x"), "invalid_input", True),
        (ToolInputError("x"), "invalid_input", True),
        (IsADirectoryError("x"), "invalid_input", True),
        (RuntimeError("x"), "internal", False),
    ],
)
def test_classify_exception(exc: BaseException, error_type: str, recoverable: bool) -> None:
    meta = classify_exception(exc)
    assert meta["status"] == "error"
    assert meta["error_type"] == error_type
    assert meta["recoverable_by_model"] is recoverable
    assert meta["recommended_next_action"]


def test_normalize_success() -> None:
    message = normalize_tool_result(ToolMessage("ok", tool_call_id="c", name="ls"))
    assert message.additional_kwargs[TOOL_META_KEY] == {
        "status": "success",
        "error_type": None,
        "recoverable_by_model": True,
        "recommended_next_action": None,
        "source": "builtin",
        "tool_name": "ls",
    }
    assert message.status == "success"


def test_normalize_error_fills_defaults_and_status() -> None:
    message = normalize_tool_result(
        ToolMessage("Error: x", tool_call_id="c", name="bash"),
        status="error",
        error_type="internal",
        source="mcp",
    )
    meta = get_tool_meta(message)
    assert meta is not None
    assert meta["recoverable_by_model"] is False
    assert meta["recommended_next_action"] == "stop"
    assert meta["source"] == "mcp"
    assert message.status == "error"


def test_normalize_explicit_values_win() -> None:
    message = normalize_tool_result(
        ToolMessage("x", tool_call_id="c", name="t"),
        status="error",
        error_type="not_found",
        recoverable_by_model=False,
        recommended_next_action="ask_user",
    )
    meta = get_tool_meta(message)
    assert (
        meta is not None
        and meta["recoverable_by_model"] is False
        and meta["recommended_next_action"] == "ask_user"
    )


def test_normalize_rejects_unknown_status() -> None:
    with pytest.raises(ValueError):
        normalize_tool_result(ToolMessage("x", tool_call_id="c"), status="maybe")  # type: ignore[arg-type]


def test_get_tool_meta_absent() -> None:
    assert get_tool_meta(ToolMessage("x", tool_call_id="c")) is None
