from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

import pytest
from langchain_core.messages import ToolMessage
from langgraph.types import Command

from deerflow_nb.sandbox.local import LocalSandbox
from deerflow_nb.tools import TOOL_META_KEY, ask_clarification_tool, present_files_tool, view_image_tool
from deerflow_nb.tools.clarification import AskClarificationInput, format_clarification

Call = Callable[..., Any]
OUT = "/mnt/user-data/outputs"
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16


def _error_type(message: Any) -> str:
    assert isinstance(message, ToolMessage)
    assert message.status == "error"
    return message.additional_kwargs[TOOL_META_KEY]["error_type"]


# -- present_files ----------------------------------------------------------------------------


def test_present_files_updates_artifacts(call: Call, sandbox: LocalSandbox) -> None:
    sandbox.write_file(f"{OUT}/report.md", "# r")
    sandbox.write_file(f"{OUT}/charts/c.png", PNG)
    result = call(
        present_files_tool(), filepaths=[f"{OUT}/report.md", f"{OUT}/charts/c.png", f"{OUT}/report.md"]
    )
    assert isinstance(result, Command) and isinstance(result.update, dict)
    assert result.update["artifacts"] == [f"{OUT}/report.md", f"{OUT}/charts/c.png"]
    (message,) = result.update["messages"]
    assert isinstance(message, ToolMessage) and message.tool_call_id == "call-1"
    assert message.additional_kwargs[TOOL_META_KEY]["status"] == "success"


@pytest.mark.parametrize(
    "path",
    ["/mnt/user-data/workspace/a.md", f"{OUT}/../workspace/a.md", "/etc/passwd", "outputs/a.md", OUT],
)
def test_present_files_rejects_paths_outside_outputs(call: Call, sandbox: LocalSandbox, path: str) -> None:
    sandbox.write_file("/mnt/user-data/workspace/a.md", "x")
    result = call(present_files_tool(), filepaths=[path])
    assert _error_type(result) == "invalid_input"
    assert "only files under /mnt/user-data/outputs/" in result.content


def test_present_files_rejects_missing_files(call: Call) -> None:
    result = call(present_files_tool(), filepaths=[f"{OUT}/ghost.md"])
    assert _error_type(result) == "not_found"
    assert f"{OUT}/ghost.md" in result.content


def test_present_files_rejects_empty_list(call: Call) -> None:
    assert _error_type(call(present_files_tool(), filepaths=[])) == "invalid_input"


# -- view_image -------------------------------------------------------------------------------


def test_view_image_updates_viewed_images(call: Call, sandbox: LocalSandbox) -> None:
    sandbox.write_file("/mnt/user-data/uploads/pic.png", PNG)
    result = call(view_image_tool(), image_path="/mnt/user-data/uploads/pic.png")
    assert isinstance(result, Command) and isinstance(result.update, dict)
    image = result.update["viewed_images"]["/mnt/user-data/uploads/pic.png"]
    assert image == {"base64": base64.b64encode(PNG).decode(), "mime_type": "image/png"}
    (message,) = result.update["messages"]
    assert message.additional_kwargs[TOOL_META_KEY]["tool_name"] == "view_image"


def test_view_image_errors(call: Call, sandbox: LocalSandbox) -> None:
    sandbox.write_file("/mnt/user-data/uploads/notes.txt", "x")
    assert (
        _error_type(call(view_image_tool(), image_path="/mnt/user-data/uploads/notes.txt")) == "invalid_input"
    )
    assert _error_type(call(view_image_tool(), image_path="/mnt/user-data/uploads/none.png")) == "not_found"
    assert _error_type(call(view_image_tool(), image_path="/etc/x.png")) == "permission"


# -- ask_clarification ------------------------------------------------------------------------


def test_clarification_schema_matches_reference_contract() -> None:
    schema = ask_clarification_tool().tool_call_schema.model_json_schema()  # type: ignore[union-attr]
    assert set(schema["properties"]) == {"question", "clarification_type", "context", "options", "fields"}
    assert schema["required"] == ["question", "clarification_type"]
    assert schema["properties"]["clarification_type"]["enum"] == [
        "missing_info",
        "ambiguous_requirement",
        "approach_choice",
        "risk_confirmation",
        "suggestion",
    ]
    field_props = schema["$defs"]["ClarificationField"]["properties"]
    assert set(field_props) == {
        "name",
        "label",
        "type",
        "required",
        "options",
        "placeholder",
        "default",
        "description",
    }
    assert set(AskClarificationInput.model_fields) == set(schema["properties"])


def test_clarification_returns_the_question(call: Call) -> None:
    result = call(
        ask_clarification_tool(),
        question="Which dataset?",
        clarification_type="approach_choice",
        context="Two files were uploaded.",
        options=["sales.csv", "costs.csv"],
    )
    assert result.content == "Two files were uploaded.\nWhich dataset?\n1. sales.csv\n2. costs.csv"
    assert result.additional_kwargs[TOOL_META_KEY]["status"] == "success"
    assert ask_clarification_tool().return_direct


def test_clarification_rejects_unknown_type() -> None:
    with pytest.raises(ValueError):
        ask_clarification_tool().invoke({"question": "q", "clarification_type": "whatever"})


def test_clarification_form_fields_are_rendered() -> None:
    text = format_clarification(
        "Settings?", "missing_info", fields=[{"name": "n", "label": "Rows", "required": True}]
    )
    assert text == "Settings?\n- Rows (required)"
