"""Answer tool calls that never got a result, so strict providers accept the history."""

from __future__ import annotations

import json
import re
from typing import Any

from langchain.agents.middleware import ModelRequest
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from deerflow_nb.agent.middlewares._base import ModelCallMiddleware

__all__ = ["PLACEHOLDER", "DanglingToolCallMiddleware", "patch_dangling"]

PLACEHOLDER = "[This tool call was interrupted and did not return a result.]"
_NAME_RE = re.compile(r"[^A-Za-z0-9_-]")


def _clean_call(call: Any) -> Any:
    name = _NAME_RE.sub("_", str(call.get("name") or "unknown_tool"))[:64] or "unknown_tool"
    args = call.get("args")
    if not isinstance(args, dict):
        try:
            args = json.loads(args) if isinstance(args, str) else {}
        except ValueError:
            args = {}
        args = args if isinstance(args, dict) else {}
    return {**call, "name": name, "args": args}


def patch_dangling(messages: list[BaseMessage]) -> list[BaseMessage]:
    """Insert placeholder ``ToolMessage``s after AI tool calls that lack one; sanitize call names."""
    answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    out: list[BaseMessage] = []
    for message in messages:
        if isinstance(message, AIMessage) and message.tool_calls:
            calls = [_clean_call(c) for c in message.tool_calls]
            if calls != message.tool_calls:
                message = message.model_copy(update={"tool_calls": calls})
            out.append(message)
            for call in calls:
                if call.get("id") and call["id"] not in answered:
                    out.append(ToolMessage(content=PLACEHOLDER, tool_call_id=call["id"], name=call["name"],
                                           status="error"))
            continue
        out.append(message)
    return out


class DanglingToolCallMiddleware(ModelCallMiddleware):
    """Patches the model request only; the checkpointed history is left as it was."""

    def prepare(self, request: ModelRequest) -> ModelRequest:
        """Patch dangling calls in the request messages."""
        patched = patch_dangling(list(request.messages))
        if patched == list(request.messages):
            return request
        return request.override(messages=patched)  # type: ignore[arg-type]
