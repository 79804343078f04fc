"""JSON-ready forms of LangChain messages and thread state."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

__all__ = ["MessageCache", "message_text", "serialize_message", "serialize_state"]


def message_text(message: BaseMessage) -> str:
    """The plain text of a message (content blocks joined)."""
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") if isinstance(b, dict) else str(b) for b in content)


def _kind(message: BaseMessage) -> str:
    if isinstance(message, AIMessage):
        return "ai"
    if isinstance(message, HumanMessage):
        return "human"
    if isinstance(message, ToolMessage):
        return "tool"
    if isinstance(message, SystemMessage):
        return "system"
    return message.type


def serialize_message(message: BaseMessage, *, omit_text: bool = False) -> dict[str, Any]:
    """A message as a dict; ``omit_text`` drops AI text already delivered as deltas."""
    data: dict[str, Any] = {"type": _kind(message), "id": message.id, "content": message.content}
    if message.additional_kwargs:
        data["additional_kwargs"] = {k: v for k, v in message.additional_kwargs.items() if k != "tool_calls"}
    if isinstance(message, AIMessage):
        if message.tool_calls:
            data["tool_calls"] = [{"id": c.get("id"), "name": c["name"], "args": c.get("args", {})}
                                  for c in message.tool_calls]
        if message.usage_metadata:
            data["usage_metadata"] = dict(message.usage_metadata)
        if omit_text:
            data["content"] = None
            data["streamed"] = True
    if isinstance(message, ToolMessage):
        data.update(tool_call_id=message.tool_call_id, name=message.name, status=message.status)
        if message.artifact is not None:
            data["artifact"] = message.artifact
    if isinstance(message, HumanMessage) and message.additional_kwargs.get("hide_from_ui"):
        data["hidden"] = True
    return data


def serialize_state(values: dict[str, Any], *, streamed_ids: set[str] | None = None,
                    cache: MessageCache | None = None) -> dict[str, Any]:
    """A state snapshot; AI messages whose ids are in ``streamed_ids`` carry no text.

    ``cache`` reuses the forms of messages serialized for an earlier snapshot of the same
    run (state snapshots share their message objects), so a run's snapshots cost time in
    proportion to the new messages, not the whole history. Treat the result as read-only.
    """
    streamed_ids = streamed_ids or set()
    out: dict[str, Any] = {}
    for key, value in values.items():
        if key == "messages":
            if cache is None:
                out[key] = [serialize_message(m, omit_text=bool(m.id and m.id in streamed_ids)) for m in value]
            else:
                out[key] = [cache.get(m, omit_text=bool(m.id and m.id in streamed_ids)) for m in value]
        elif key in {"viewed_images", "jump_to", "structured_response"}:
            continue  # base64 payloads and control fields are not part of the public snapshot
        else:
            out[key] = value
    return out


class MessageCache:
    """Serialized messages by object identity (the cache holds the message, so ids stay unique)."""

    def __init__(self) -> None:
        self._forms: dict[tuple[int, bool], tuple[BaseMessage, dict[str, Any]]] = {}

    def get(self, message: BaseMessage, *, omit_text: bool = False) -> dict[str, Any]:
        """``serialize_message(message, omit_text=...)``, computed once per message object."""
        key = (id(message), omit_text)
        hit = self._forms.get(key)
        if hit is not None and hit[0] is message:
            return hit[1]
        data = serialize_message(message, omit_text=omit_text)
        self._forms[key] = (message, data)
        return data
