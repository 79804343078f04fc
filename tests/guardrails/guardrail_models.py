"""The guardrail test model (``use: tests.guardrails.guardrail_models:GuardrailModel``): answers depend on the input only.

A user message ``{"calls": [{"name": ..., "args": {...}}, ...]}`` becomes those tool calls; after tool
results the answer is ``Tool said: <each result>``; anything else is ``Noted.``.
"""

from __future__ import annotations

import json
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from deerflow_nb.testing import ScriptedChatModel


def _batch(messages: list[Any], end: int) -> list[ToolMessage]:
    """The tool results just before ``messages[end]`` (exclusive)."""
    batch: list[ToolMessage] = []
    for message in reversed(messages[:end]):
        if not isinstance(message, ToolMessage):
            break
        batch.insert(0, message)
    return batch


def _decide(messages: list[Any]) -> Any:
    last = messages[-1]
    if isinstance(last, ToolMessage):
        batch = _batch(messages, len(messages))
        if [m.name for m in batch] == ["present_files"]:  # answer with what the tools before it said
            batch = _batch(messages, len(messages) - 2)
        else:  # a run that wrote output files presents them
            args = {c["id"]: c["args"] for m in messages if isinstance(m, AIMessage) for c in m.tool_calls}
            written = [args[m.tool_call_id]["path"] for m in batch if m.name == "write_file" and m.status != "error"
                       and str(args.get(m.tool_call_id, {}).get("path", "")).startswith("/mnt/user-data/outputs/")]
            if written:
                return AIMessage(content="", tool_calls=[{"name": "present_files", "args": {"filepaths": written},
                                                          "id": f"present-{len(messages)}"}])
        return "Tool said: " + " | ".join(str(m.content) for m in batch)
    text = last.text if isinstance(last, HumanMessage) else ""
    if '{"calls"' in text:
        calls = json.JSONDecoder().raw_decode(text[text.index('{"calls"'):])[0]["calls"]
        return AIMessage(content="", tool_calls=[{"name": c["name"], "args": c["args"], "id": c.get("id", f"call-{i}-{c['name']}")}
                                                 for i, c in enumerate(calls)])
    return "Noted."


class GuardrailModel(ScriptedChatModel):
    """Stateless across graph rebuilds, so both backends see the same answers."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs["responses"] = [_decide] * 10000
        super().__init__(**kwargs)


def calls(*pairs: tuple[str, dict[str, Any]], call_id: str | None = None) -> str:
    """The user message that makes the model call these tools (the first with ``call_id``, when given)."""
    entries: list[dict[str, Any]] = [{"name": name, "args": args} for name, args in pairs]
    if call_id is not None:
        entries[0]["id"] = call_id
    return json.dumps({"calls": entries})
