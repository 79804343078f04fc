"""Turn LangGraph's ``values`` / ``messages`` / ``custom`` stream into :class:`StreamEvent`s.

Invariants (tested): AI text arrives as per-id deltas whose concatenation equals the
final text; each tool call and each tool result is emitted once; ``values``
snapshots carry the full state (as LangGraph sends them); ``end`` carries usage
counted once per message id. ``messages-tuple`` events of LangGraph's ``messages``
mode keep its metadata (:attr:`StreamEvent.meta`, JSON-safe keys only) for the HTTP
``[chunk, metadata]`` tuples.
"""

from __future__ import annotations

import operator
from collections.abc import Iterator
from itertools import compress
from operator import attrgetter
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from deerflow_nb.runtime.events import StreamEvent
from deerflow_nb.runtime.serialize import MessageCache, message_text, serialize_message, serialize_state
from deerflow_nb.utils.memo import changed_positions

__all__ = ["STREAM_SUBGRAPHS_KEY", "SUBGRAPH_FRAME", "StreamConverter", "final_text_of", "final_text_of_run",
           "pending_input_of", "stream_metadata", "subgraph_frame"]

#: ``RunContext.extra`` key, ``True`` for a run started with ``stream_subgraphs``
#: (:meth:`Runtime.start_run`): the ``task`` tool's subagents forward their frames
#: (:func:`subgraph_frame`) into the run's stream as namespaced events.
STREAM_SUBGRAPHS_KEY = "stream_subgraphs"
#: The ``custom`` chunk type that carries a subagent's frame through the parent's stream writer.
SUBGRAPH_FRAME = "__subgraph_frame__"


def subgraph_frame(event: StreamEvent, namespace: str) -> dict[str, Any]:
    """A subagent's event as the ``custom`` chunk that :class:`StreamConverter` turns back into it, namespaced."""
    return {"type": SUBGRAPH_FRAME, "namespace": namespace, "event": event.type, "data": event.data,
            "meta": event.meta}

_META_SCALARS = (str, int, float, bool, type(None))


def stream_metadata(meta: Any) -> dict[str, Any] | None:
    """The JSON-safe part of LangGraph's ``messages`` metadata (``langgraph_node``, ``ls_*``, ...)."""
    if not isinstance(meta, dict):
        return None
    out: dict[str, Any] = {}
    for key, value in meta.items():
        if not isinstance(key, str) or key.startswith("__"):
            continue
        if isinstance(value, _META_SCALARS):
            out[key] = value
        elif isinstance(value, list | tuple) and all(isinstance(v, _META_SCALARS) for v in value):
            out[key] = list(value)
    return out


class StreamConverter:
    """Stateful converter for one run."""

    def __init__(self, forms: MessageCache | None = None) -> None:
        self.known_ids: frozenset[str] | None = None  # messages that existed before the run
        self._snapshot: list[BaseMessage] = []  # the messages of the last values snapshot
        self._before: tuple[list[BaseMessage], list[BaseMessage]] = ([], [])  # the first snapshot, its id-less
        self.streamed: dict[str, str] = {}  # AI message id -> text delivered so far
        self.tool_calls_sent: set[str] = set()
        self.tool_results_sent: set[str] = set()
        self.final_state: dict[str, Any] = {}
        # each values snapshot serializes only the new messages (``forms``: a thread's cache, shared by its runs)
        self._forms = forms if forms is not None else MessageCache()

    # -- messages mode -------------------------------------------------------------
    def _text_delta(self, message_id: str, full_or_delta: str, *, is_delta: bool,
                    meta: dict[str, Any] | None = None) -> StreamEvent | None:
        sent = self.streamed.get(message_id, "")
        if is_delta:
            delta = full_or_delta
        elif full_or_delta.startswith(sent):
            delta = full_or_delta[len(sent):]
        else:  # the final text was rewritten by a middleware; deliver only what extends it
            return None
        if not delta:
            return None
        self.streamed[message_id] = sent + delta
        return StreamEvent("messages-tuple", {"type": "ai", "id": message_id, "content": delta}, meta)

    def _tool_call_event(self, message: AIMessage) -> StreamEvent | None:
        if not message.tool_calls or not message.id or message.id in self.tool_calls_sent:
            return None
        self.tool_calls_sent.add(message.id)
        data = serialize_message(message)
        data["content"] = ""
        return StreamEvent("messages-tuple", data)

    def _tool_result_event(self, message: ToolMessage, meta: dict[str, Any] | None = None) -> StreamEvent | None:
        key = message.tool_call_id or message.id or ""
        if key in self.tool_results_sent:
            return None
        self.tool_results_sent.add(key)
        return StreamEvent("messages-tuple", serialize_message(message), meta)

    def _on_message(self, message: BaseMessage, meta: Any = None) -> Iterator[StreamEvent]:
        if self.known_ids is not None and message.id in self.known_ids:
            return
        if isinstance(message, AIMessage) and message.id:
            is_delta = message.__class__.__name__ == "AIMessageChunk"
            event = self._text_delta(message.id, message_text(message), is_delta=is_delta,
                                     meta=stream_metadata(meta))
            if event:
                yield event
        elif isinstance(message, ToolMessage):
            event = self._tool_result_event(message, stream_metadata(meta))
            if event:
                yield event

    # -- values mode ---------------------------------------------------------------
    def _on_values(self, state: dict[str, Any]) -> Iterator[StreamEvent]:
        messages: list[BaseMessage] = list(state.get("messages", []))
        if self.known_ids is None:  # the first snapshot: what the thread held before the run
            # only an id-less one can be new; the thread's cache looks only at what its last run added
            self.known_ids, changed = self._forms.known_ids(messages)
            self._before = (messages, changed)
        else:  # only messages that are new since the last snapshot (or replaced in it) can bring new events
            changed = [messages[i] for i in changed_positions(self._snapshot, messages)]
        self._snapshot = messages
        for message in changed:
            if message.id in self.known_ids:
                continue
            if isinstance(message, AIMessage) and message.id:
                event = self._text_delta(message.id, message_text(message), is_delta=False)
                if event:
                    yield event
                event = self._tool_call_event(message)
                if event:
                    yield event
            elif isinstance(message, ToolMessage):
                event = self._tool_result_event(message)
                if event:
                    yield event
        self.final_state = state
        yield StreamEvent("values", serialize_state(state, cache=self._forms))

    def _on_updates(self, chunk: Any) -> Iterator[StreamEvent]:
        if not isinstance(chunk, dict):
            return
        out: dict[str, Any] = {}
        for node, update in chunk.items():
            if isinstance(update, dict):
                out[str(node)] = serialize_state(update, cache=self._forms)
            elif isinstance(update, list | tuple):  # interrupts and multi-writes
                out[str(node)] = [serialize_state(u, cache=self._forms) if isinstance(u, dict) else u
                                  for u in update]
            else:
                out[str(node)] = update
        yield StreamEvent("updates", out)

    def feed(self, mode: str, chunk: Any) -> Iterator[StreamEvent]:
        """Events for one ``(mode, chunk)`` item of ``graph.astream``."""
        if mode == "messages":
            message, meta = chunk
            yield from self._on_message(message, meta)
        elif mode == "updates":
            yield from self._on_updates(chunk)
        elif mode == "values":
            yield from self._on_values(chunk)
        elif mode == "custom":
            if isinstance(chunk, dict) and chunk.get("type") == SUBGRAPH_FRAME:  # a subagent's frame
                yield StreamEvent(chunk["event"], chunk["data"], chunk.get("meta"), namespace=chunk["namespace"])
            else:
                yield StreamEvent("custom", chunk)

    # -- results -------------------------------------------------------------------
    def run_messages(self) -> list[BaseMessage]:
        """Messages added by this run."""
        messages = list(self.final_state.get("messages", []))
        before, before_new = self._before
        start = len(before)
        if start and len(messages) >= start and messages[:start] == before:  # the usual case: run's messages appended
            messages, head = messages[start:], before_new
        else:
            head = []
        old = map((self.known_ids or set()).__contains__, map(attrgetter("id"), messages))
        return head + list(compress(messages, map(operator.not_, old)))  # C speed: a long thread's list is long

    def usage(self) -> dict[str, int]:
        """Token usage of this run's AI messages, once per message id."""
        total = {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0}
        seen: set[str] = set()
        for m in self.run_messages():
            if isinstance(m, AIMessage) and m.usage_metadata and m.id not in seen:
                seen.add(m.id or "")
                total["input_tokens"] += m.usage_metadata.get("input_tokens", 0)
                total["output_tokens"] += m.usage_metadata.get("output_tokens", 0)
                total["total_tokens"] += m.usage_metadata.get("total_tokens", 0)
        return total

    def final_text(self) -> str:
        """Text of the last AI message of the run (empty if none)."""
        for m in reversed(self.run_messages()):
            if isinstance(m, AIMessage):
                return message_text(m)
        return ""

    def pending_input(self) -> dict[str, Any] | None:
        """The ``human_input`` request that ended the run, if any."""
        messages = self.final_state.get("messages", [])
        return pending_input_of(messages)


def pending_input_of(messages: list[BaseMessage]) -> dict[str, Any] | None:
    """The open human-input request at the end of ``messages``, or ``None``."""
    if not messages:
        return None
    last = messages[-1]
    if isinstance(last, ToolMessage) and isinstance(last.artifact, dict) and "human_input" in last.artifact:
        return dict(last.artifact["human_input"])
    return None


def final_text_of(messages: list[BaseMessage]) -> str:
    """Text of the last AI message of ``messages`` (empty if none)."""
    for m in reversed(messages):
        if isinstance(m, AIMessage):
            return message_text(m)
    return ""


def final_text_of_run(messages: list[BaseMessage], run_id: str) -> str:
    """Text of the last AI message ``run_id`` produced: after its human message, before the next run's.

    Runs tag the human message that starts them (``additional_kwargs["run_id"]``); a run whose
    message is not in ``messages`` (another branch, compacted away) gives ``""``.
    """
    start = next((i for i, m in enumerate(messages)
                  if isinstance(m, HumanMessage) and m.additional_kwargs.get("run_id") == run_id), None)
    if start is None:
        return ""
    end = next((i for i in range(start + 1, len(messages)) if isinstance(messages[i], HumanMessage)
                and messages[i].additional_kwargs.get("run_id") not in (None, run_id)), len(messages))
    return final_text_of(messages[start + 1:end])
