"""Validation of a state update (``thread.update_state`` / ``POST /threads/{id}/state``).

An update may write the conversation's channels of :class:`~deerflow_nb.agent.state.ThreadState`
(:data:`WRITABLE`): ``messages``, coerced as LangGraph coerces them (``{"role": "user",
"content": ...}``, ``{"type": "ai", ...}``, LangChain messages; ``{"type": "remove", "id": ...}``
removes one), ``title``, ``artifacts``, ``todos`` (each ``{"content", "status"}``, at most one in
progress) and ``summary_text``, each strictly of its type (no ``"yes"`` for a list). The channels
DeerFlow maintains itself (sandbox, thread folders, uploads seen, images, subagent ledger, skills in
use, the goal) are refused: a wrong value there would break the thread's next run. Anything else is
refused with :class:`~deerflow_nb.errors.UsageError` naming the field, before a checkpoint is written.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Annotated, Any, get_args, get_origin, get_type_hints

from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from deerflow_nb.errors import UsageError
from deerflow_nb.messages import check_content, check_message_dict

__all__ = ["WRITABLE", "state_values", "validate_state_update"]

#: The channels an update may write (the rest are DeerFlow's own bookkeeping).
WRITABLE = ("messages", "title", "artifacts", "todos", "summary_text")


def _unwrap(hint: Any) -> tuple[Any, tuple[Any, ...]]:
    """``(type, annotations)`` of a ``NotRequired[Annotated[type, ...]]`` channel hint."""
    while get_origin(hint) is not None and getattr(get_origin(hint), "_name", "") in {"Required", "NotRequired"}:
        hint = get_args(hint)[0]
    if get_origin(hint) is Annotated:
        base, *extras = get_args(hint)
        return base, tuple(extras)
    return hint, ()


@functools.cache
def _channels() -> frozenset[str]:
    from deerflow_nb.agent.state import ThreadState

    return frozenset(get_type_hints(ThreadState))


def state_values(channel_values: Mapping[str, Any]) -> dict[str, Any]:
    """A checkpoint's state channels (LangGraph's trigger channels, such as ``branch:to:model``, left out)."""
    channels = _channels()
    return {k: v for k, v in channel_values.items() if k in channels}


@functools.cache
def _model() -> type[BaseModel]:
    """A strict pydantic model of the writable channels other than ``messages``."""
    from deerflow_nb.agent.middlewares.todo_list import TodoItem
    from deerflow_nb.agent.state import ThreadState

    class Todo(TodoItem):
        model_config = ConfigDict(extra="forbid", strict=True)

    fields: dict[str, Any] = {}
    for name, hint in get_type_hints(ThreadState, include_extras=True).items():
        if name in WRITABLE and name != "messages":
            fields[name] = (list[Todo] if name == "todos" else _unwrap(hint)[0], None)
    return create_model("StateUpdate", __config__=ConfigDict(extra="forbid", strict=True), **fields)


def _messages(value: Any) -> list[Any]:
    from langchain_core.messages import BaseMessage, RemoveMessage, convert_to_messages

    items = value if isinstance(value, list) else [value]
    out: list[BaseMessage] = []
    for i, item in enumerate(items):
        if not isinstance(item, dict | BaseMessage):
            raise UsageError(f"values.messages[{i}]: a message must be an object, got {type(item).__name__}")
        if isinstance(item, dict) and item.get("type") == "remove":
            if not isinstance(item.get("id"), str) or not item["id"]:
                raise UsageError(f"values.messages[{i}].id: a remove needs the id of the message to remove")
            out.append(RemoveMessage(id=item["id"]))
            continue
        try:
            if isinstance(item, dict):
                check_message_dict(item, f"values.messages[{i}]")  # what LangChain would coerce or keep unchecked
            else:
                check_content(item.content, f"values.messages[{i}].content")
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        try:
            out.extend(convert_to_messages([item]))
        except (ValueError, TypeError, KeyError, NotImplementedError) as exc:
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise UsageError(f"values.messages[{i}]: {first}") from None
    return out


def validate_state_update(values: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """``values`` checked against the state schema, messages as LangChain messages (``None``: a plain fork)."""
    if values is None:
        return None
    if not isinstance(values, Mapping):
        raise UsageError(f"values: must be an object of state channels, got {type(values).__name__}")
    own = sorted(k for k in values if k in _channels() and k not in WRITABLE)
    if own:
        raise UsageError(f"values.{own[0]}: maintained by DeerFlow, not writable with update_state "
                         f"(writable: {', '.join(WRITABLE)})")
    rest = {k: v for k, v in values.items() if k != "messages"}
    try:
        checked = _model().model_validate(rest).model_dump(exclude_unset=True)
        if checked.get("todos"):
            from deerflow_nb.agent.middlewares.todo_list import validate_todos

            checked["todos"] = validate_todos(checked["todos"])
    except ValidationError as exc:
        error = exc.errors()[0]
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.get("loc", ())).lstrip(".")
        raise UsageError(f"values.{where}: {error.get('msg', 'invalid')}") from None
    except ValueError as exc:  # the todo list's own rule
        raise UsageError(f"values.todos: {exc}") from None
    if "messages" in values:
        checked["messages"] = _messages(values["messages"])
    return checked
