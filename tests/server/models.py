"""Test chat models for server configs (``use: tests.server.models:FormThenReport``)."""

from __future__ import annotations

from typing import Any

from deerflow_nb.testing import ScriptedChatModel

FORM = {"content": "", "tool_calls": [{"name": "ask_clarification", "args": {
    "question": "Which dataset?", "clarification_type": "missing_info",
    "fields": [{"name": "dataset", "label": "Dataset", "type": "select", "options": ["a.csv", "b.csv"],
                "required": True}]}}]}


def _decide(messages: list[Any]) -> Any:
    last = messages[-1]
    if getattr(last, "type", "") == "tool":
        return "Waiting for your answer."
    if last.additional_kwargs.get("human_input_response"):
        return f"Report built from {last.content.split(': ', 1)[-1]}."
    text = str(last.content)
    if "report" in text.lower():
        return FORM
    return f"Answer to {text.split()[-1]}."


class FormThenReport(ScriptedChatModel):
    """Asks for a dataset when asked for a report; answers from the reply; stateless across rebuilds."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs["responses"] = [_decide] * 1000
        super().__init__(**kwargs)
