"""``ask_clarification``: ask the user a question (or a small form) before continuing.

The clarification middleware intercepts this tool call, turns it into a human-input
request and interrupts the run; the tool body below only runs without that
middleware, and then just echoes the question.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from langchain_core.tools import BaseTool
from pydantic import BaseModel, ConfigDict, Field

from deerflow_nb.tools.common import Runtime, ToolOutput, make_tool, reply

__all__ = [
    "CLARIFICATION_TYPES",
    "FIELD_TYPES",
    "AskClarificationInput",
    "ClarificationField",
    "ask_clarification_tool",
    "format_clarification",
]

ClarificationType = Literal[
    "missing_info", "ambiguous_requirement", "approach_choice", "risk_confirmation", "suggestion"
]
CLARIFICATION_TYPES: tuple[str, ...] = (
    "missing_info",
    "ambiguous_requirement",
    "approach_choice",
    "risk_confirmation",
    "suggestion",
)
#: Field types of form (v2) requests; the middleware degrades unknown types to ``text``.
FIELD_TYPES: tuple[str, ...] = ("text", "textarea", "number", "select", "multi_select", "checkbox", "date")


class ClarificationField(BaseModel):
    """One input of a form-style clarification (several values collected at once)."""

    model_config = ConfigDict(extra="ignore")

    name: str = Field(description="Machine name of the value, e.g. 'dataset'.")
    label: str | None = Field(default=None, description="Label shown to the user.")
    type: str = Field(default="text", description="One of: " + ", ".join(FIELD_TYPES) + ".")
    required: bool = Field(default=False, description="Whether the user must fill it in.")
    options: list[str] | None = Field(default=None, description="Choices for select / multi_select.")
    placeholder: str | None = None
    default: Any = None
    description: str | None = Field(default=None, description="Help text under the input.")


class AskClarificationInput(BaseModel):
    """Arguments of ``ask_clarification`` (the model-facing schema, for validation by middlewares)."""

    question: str = Field(description="The question to ask, or the form's title.")
    clarification_type: ClarificationType = Field(
        description=(
            "missing_info: required information is missing; ambiguous_requirement: the request can be "
            "read several ways; approach_choice: the user should pick an approach; risk_confirmation: "
            "confirm before a destructive or risky action; suggestion: propose an improvement."
        )
    )
    context: str | None = Field(default=None, description="Why you are asking (shown with the question).")
    options: list[str] | None = Field(default=None, description="Choices for a single-choice question.")
    fields: list[ClarificationField] | None = Field(
        default=None, description="Form inputs to collect several values at once (instead of options)."
    )


def format_clarification(
    question: str,
    clarification_type: str,
    context: str | None = None,
    options: list[str] | None = None,
    fields: list[Any] | None = None,
) -> str:
    """The plain-text rendering of a clarification request (the text fallback)."""
    lines = [question.strip()]
    if context:
        lines.insert(0, context.strip())
    for number, option in enumerate(options or [], start=1):
        lines.append(f"{number}. {option}")
    for item in fields or []:
        entry = item if isinstance(item, ClarificationField) else ClarificationField.model_validate(item)
        mark = " (required)" if entry.required else ""
        lines.append(f"- {entry.label or entry.name}{mark}")
    return "\n".join(lines)


def _doc(name: str) -> Any:
    """The Field of ``AskClarificationInput.name``, so the tool schema shares its descriptions."""
    return Field(description=AskClarificationInput.model_fields[name].description)


def _ask_clarification(
    question: Annotated[str, _doc("question")],
    clarification_type: Annotated[ClarificationType, _doc("clarification_type")],
    context: Annotated[str | None, _doc("context")] = None,
    options: Annotated[list[str] | None, _doc("options")] = None,
    fields: Annotated[list[ClarificationField] | None, _doc("fields")] = None,
    *,
    runtime: Runtime = None,  # type: ignore[assignment]  # None when invoked directly
) -> ToolOutput:
    text = format_clarification(question, clarification_type, context, options, fields)
    return reply(runtime, "ask_clarification", text)


def ask_clarification_tool() -> BaseTool:
    """The ``ask_clarification`` tool (``return_direct``: without the middleware the run stops)."""
    return make_tool(
        _ask_clarification,
        name="ask_clarification",
        description=(
            "Ask the user for clarification when information is missing, the request is ambiguous, "
            "several approaches are possible or an action is risky. Use options for a single choice, "
            "or fields for a small form. Do not guess when the answer matters: ask."
        ),
        return_direct=True,
    )
