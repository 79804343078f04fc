"""Answer tool calls that never got a result, so strict providers accept the history."""

from __future__ import annotations

import json
import operator
import re
import threading
from collections.abc import Callable, Sequence
from itertools import chain
from operator import itemgetter
from typing import Any

from langchain.agents.middleware import ModelRequest
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from deerflow_nb.agent.middlewares._base import ModelCallMiddleware
from deerflow_nb.utils.memo import ConversationSlots, PrefixMap, grow_into

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


def _cleaned(message: BaseMessage) -> BaseMessage:
    """An AI message with sanitized tool-call names and arguments (the same object when they are clean)."""
    if not isinstance(message, AIMessage) or not message.tool_calls:
        return message
    calls = [_clean_call(c) for c in message.tool_calls]
    return message.model_copy(update={"tool_calls": calls}) if calls != message.tool_calls else message


def patch_dangling(messages: Sequence[BaseMessage],
                   clean: Callable[[BaseMessage], BaseMessage] = _cleaned) -> list[BaseMessage]:
    """Insert placeholder ``ToolMessage``s after AI tool calls that lack one; sanitize call names.

    ``clean`` cleans one message's tool calls (a memoised :func:`_cleaned` by default in the middleware).
    """
    answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    out: list[BaseMessage] = []
    for message in messages:
        if isinstance(message, AIMessage) and message.tool_calls:
            cleaned = clean(message)
            out.append(cleaned)
            for call in cleaned.tool_calls if isinstance(cleaned, AIMessage) else []:
                if call.get("id") and call["id"] not in answered:
                    out.append(ToolMessage(content=PLACEHOLDER, tool_call_id=call["id"], name=call["name"],
                                           status="error"))
            continue
        out.append(message)
    return out


#: ``(ids of the tool calls a message makes, id of the call it answers)``
CallIds = tuple[tuple[str, ...], str | None]


def _call_ids(message: BaseMessage) -> CallIds:
    """``(ids of the tool calls it makes, id of the call it answers)`` for one message."""
    if isinstance(message, AIMessage):
        return tuple(str(c["id"]) for c in message.tool_calls if c.get("id")), None
    if isinstance(message, ToolMessage):
        return (), message.tool_call_id
    return (), None


def _all_answered(ids: Sequence[CallIds]) -> bool:
    """Whether every tool call has a result, from each message's :func:`_call_ids`."""
    asked = set(chain.from_iterable(map(itemgetter(0), ids)))  # C-speed passes
    return not asked or asked <= set(map(itemgetter(1), ids))


def _needs_cleaning(message: BaseMessage) -> bool:
    return _cleaned(message) is not message


class _AnsweredFold:
    """:func:`_all_answered`, folded forward while a conversation's list only grows (its next model call).

    The calls asked and answered so far are kept with the entries they came from, for the last few
    conversations (:class:`~deerflow_nb.utils.memo.ConversationSlots`); a list that does not start
    with one of those entry lists is folded afresh. Thread-safe.
    """

    def __init__(self, slots: int = 8) -> None:
        self._lock = threading.Lock()
        self._slots: ConversationSlots[CallIds, tuple[set[str], set[str | None]]] = ConversationSlots(slots)

    def __call__(self, ids: Sequence[CallIds]) -> bool:
        with self._lock:
            found = self._slots.extended(ids)
            shared = len(found[0]) if found is not None else 0
            if found is not None and grow_into(found[0], ids):  # the slot's list now equals ids: fold the rest
                slot, (asked, answered) = found
                self._slots.update(slot, (asked, answered))
            else:
                shared, asked, answered = 0, set(), set()
                self._slots.put(ids, (asked, answered), replacing=found[0] if found is not None else None)
            new = ids[shared:]
            asked.update(chain.from_iterable(map(itemgetter(0), new)))
            answered.update(map(itemgetter(1), new))
            return asked <= answered


class DanglingToolCallMiddleware(ModelCallMiddleware):
    """Patches the model request only; the checkpointed history is left as it was."""

    def __init__(self) -> None:
        super().__init__()
        # each AI message's calls are cleaned once, not on every model call of every later turn
        self._cleaned: PrefixMap[BaseMessage, BaseMessage] = PrefixMap(_cleaned)
        self._flags: PrefixMap[BaseMessage, bool] = PrefixMap(_needs_cleaning)  # see InputSanitizationMiddleware
        self._ids: PrefixMap[BaseMessage, CallIds] = PrefixMap(_call_ids)
        self._answered = _AnsweredFold()

    def prepare(self, request: ModelRequest) -> ModelRequest:
        """Patch dangling calls in the request messages."""
        messages = list(request.messages)
        if not any(self._flags(messages)) and self._answered(self._ids(messages)):
            return request  # the common case, without a Python-level pass per message
        patched = patch_dangling(self._cleaned(messages))
        if len(patched) == len(messages) and all(map(operator.is_, patched, messages)):
            return request
        return request.override(messages=patched)  # type: ignore[arg-type]
