"""JSON-ready forms of LangChain messages and thread state."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from itertools import chain, filterfalse
from operator import attrgetter
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from deerflow_nb.utils.memo import PrefixMap, changed_positions, grow_into

__all__ = ["MessageCache", "message_text", "serialize_message", "serialize_state", "thread_message_cache"]


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


def serialize_message(message: BaseMessage) -> dict[str, Any]:
    """A message as LangChain's (and LangGraph Platform's) JSON form, plus DeerFlow's ``hidden`` flag.

    ``type`` is ``human``, ``ai``, ``tool`` or ``system``; AI messages carry ``tool_calls``,
    ``invalid_tool_calls`` and ``usage_metadata``, tool messages ``tool_call_id``, ``artifact``
    and ``status`` — the fields ``langgraph dev`` sends for the same message.
    """
    data: dict[str, Any] = {"content": message.content,
                            "additional_kwargs": {k: v for k, v in message.additional_kwargs.items()
                                                  if k != "tool_calls"},
                            "response_metadata": dict(message.response_metadata or {}),
                            "type": _kind(message), "name": message.name, "id": message.id}
    if isinstance(message, AIMessage):
        data["tool_calls"] = [{"name": c["name"], "args": c.get("args", {}), "id": c.get("id"), "type": "tool_call"}
                              for c in message.tool_calls]
        data["invalid_tool_calls"] = [dict(c) for c in message.invalid_tool_calls]
        data["usage_metadata"] = dict(message.usage_metadata) if message.usage_metadata else None
    if isinstance(message, ToolMessage):
        data.update(tool_call_id=message.tool_call_id, artifact=message.artifact, status=message.status)
    if isinstance(message, HumanMessage) and message.additional_kwargs.get("hide_from_ui"):
        data["hidden"] = True
    return data


def serialize_state(values: dict[str, Any], *, cache: MessageCache | None = None) -> dict[str, Any]:
    """The full state snapshot (messages in :func:`serialize_message` form).

    ``cache`` reuses the forms of messages serialized for an earlier snapshot of the same
    run (state snapshots share their message objects), so a run's snapshots cost time in
    proportion to the new messages, not the whole history. Treat the result as read-only.
    """
    out: dict[str, Any] = {}
    for key, value in values.items():
        if key == "messages":
            if cache is None:
                out[key] = [serialize_message(m) for m in value]
            else:
                out[key] = cache.forms(value)
        elif key in {"viewed_images", "jump_to", "structured_response"}:
            continue  # base64 payloads and control fields are not part of the public snapshot
        else:
            out[key] = value
    return out


class MessageCache:
    """Serialized messages by object identity (the cache holds the message, so ids stay unique).

    :meth:`forms` also keeps the last list it serialized: a later state that holds the same
    objects (the previous step's list plus new messages) only serializes what is new
    (:class:`~deerflow_nb.utils.memo.PrefixMap`). At most ``max_size`` messages are kept (then
    the cache starts over).
    """

    def __init__(self, max_size: int = 50_000) -> None:
        self.max_size = max_size
        self._map: PrefixMap[BaseMessage, dict[str, Any]] = PrefixMap(serialize_message, max_size)
        # the last run's first snapshot: its messages, their ids, the id-less ones among them
        self._known: tuple[list[BaseMessage], frozenset[str], list[BaseMessage]] = ([], frozenset(), [])
        self._lock = threading.Lock()

    def known_ids(self, messages: Sequence[BaseMessage]) -> tuple[frozenset[str], list[BaseMessage]]:
        """The ids of ``messages`` and the id-less ones among them (a run's first snapshot: what it starts from).

        When ``messages`` is the previous call's list plus messages appended (the thread's next
        run), only the appended ones are looked at (and the few replaced by a copy with the same id).
        """
        with self._lock:  # the kept list grows in place: read and changed under the lock only
            last, ids, idless = self._known
            shared = len(last)
            if grow_into(last, messages):  # the usual case: the last run's list plus what it appended
                positions: list[int] = list(range(shared, len(messages)))
                kept = last  # grown to messages: kept for the next run
            else:
                positions = list(changed_positions(last, messages))
                kept = list(messages)
            # the fast way when messages were only appended, or replaced by copies with the same id
            # (the last run's input comes back from the checkpoint as another object)
            replaced = [i for i in positions if i < shared]
            if shared and len(messages) >= shared and len(replaced) <= 8 and all(
                    messages[i].id and messages[i].id == last[i].id for i in replaced):
                fresh = [messages[i] for i in positions if i >= shared]
                waiting = [m for m in idless if not m.id]  # the reducer gives an id-less message one in place
                ids = ids.union([m.id for m in chain(idless, fresh) if m.id])
                idless = waiting + [m for m in fresh if not m.id]
            else:
                ids = frozenset(map(attrgetter("id"), messages)) - {None, ""}  # C-speed passes
                idless = list(filterfalse(attrgetter("id"), messages))
            self._known = (kept, ids, idless)
        return ids, list(idless)

    def get(self, message: BaseMessage) -> dict[str, Any]:
        """``serialize_message(message)``, computed once per message object."""
        return self._map.func(message)

    def forms(self, messages: Sequence[BaseMessage]) -> list[dict[str, Any]]:
        """``[serialize_message(m) for m in messages]``, in time proportional to what is new."""
        return self._map(messages)


_THREAD_CACHES: OrderedDict[str, MessageCache] = OrderedDict()
_THREAD_CACHES_LOCK = threading.Lock()


def thread_message_cache(thread_id: str, *, max_threads: int = 32) -> MessageCache:
    """The :class:`MessageCache` of one thread, shared by its runs (the least recently used dropped).

    A thread's next run starts from the same message objects (the checkpointer hands them
    back), so its snapshots reuse the forms of the earlier runs.
    """
    with _THREAD_CACHES_LOCK:
        cache = _THREAD_CACHES.get(thread_id)
        if cache is None:
            cache = _THREAD_CACHES[thread_id] = MessageCache()
            while len(_THREAD_CACHES) > max_threads:
                _THREAD_CACHES.popitem(last=False)
        else:
            _THREAD_CACHES.move_to_end(thread_id)
        return cache
