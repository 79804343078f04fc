"""``RunJournal``: what a run did, as ``run_events`` rows.

Event types (category): ``human_message`` / ``human_input_response`` (message),
``ai_message`` (message; text assembled from the streamed deltas), ``tool_call`` and
``tool_result`` (tool), ``human_input_request`` (human_input), ``custom`` (custom),
``workspace_changes`` (workspace), ``guardrail`` (guardrail: a tool call denied, held for approval or
approved), ``run_end`` / ``run_error`` (run; with the run's ``trace_id``). Entries are
buffered and written in batches, so the journal costs one transaction per
``flush_every`` entries rather than one per token.

While an answer streams for longer than ``partial_every`` seconds, an ``ai_partial``
entry (message) with the text so far is written at that pace: if the process dies mid-answer
(a kernel restart, a crash), orphan recovery puts that text in the thread, marked interrupted.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from langchain_core.messages import BaseMessage

from deerflow_nb.persistence.events import JournalEntry, RunEventStore
from deerflow_nb.runtime.events import StreamEvent
from deerflow_nb.runtime.serialize import serialize_message

__all__ = ["RunJournal"]


class RunJournal:
    """Collects one run's journal entries and writes them to a :class:`RunEventStore`."""

    def __init__(self, store: RunEventStore | None, *, run_id: str, thread_id: str, user_id: str,
                 flush_every: int = 200, sink: Callable[[list[JournalEntry]], None] | None = None,
                 partial_every: float = 5.0, trace_id: str | None = None) -> None:
        self._store = store
        # ``sink`` takes the last batch instead of the store: the run manager writes it in the
        # transaction that stores the run's terminal status (one commit less per run)
        self._sink = sink
        self.run_id, self.thread_id, self.user_id = run_id, thread_id, user_id
        self._flush_every = flush_every
        self._seq = 0
        self._buffer: list[JournalEntry] = []
        self._ai_text: dict[str, str] = {}
        self._partial_every = partial_every
        self._partial_at = time.monotonic()
        self._flush_due = False
        #: The run's trace id (``X-Trace-Id``), written into its ``run_end`` / ``run_error`` entry.
        self.trace_id = trace_id

    def add(self, event_type: str, category: str, payload: dict[str, Any]) -> None:
        """Append an entry (buffered)."""
        self._seq += 1
        self._buffer.append(JournalEntry(self.run_id, self.thread_id, self.user_id, self._seq, event_type,
                                         category, payload, time.time()))

    def record_input(self, message: BaseMessage) -> None:
        """The message that started the run (a human-input answer has its own type)."""
        data = serialize_message(message)
        if message.additional_kwargs.get("human_input_response"):
            self.add("human_input_response", "human_input", data)
        else:
            self.add("human_message", "message", data)

    def close_messages(self) -> None:
        """Write out AI text assembled so far (before an entry that must follow it)."""
        for message_id, text in self._ai_text.items():
            self.add("ai_message", "message", {"type": "ai", "id": message_id, "content": text})
        self._ai_text.clear()

    def observe(self, event: StreamEvent) -> None:
        """Turn a streamed event into journal entries (``values`` snapshots are not journaled)."""
        data = event.data
        if event.type == "messages-tuple":
            if data.get("type") == "ai" and "tool_calls" not in data:
                if data.get("content"):
                    message_id = data.get("id") or ""
                    self._ai_text[message_id] = self._ai_text.get(message_id, "") + data["content"]
                    now = time.monotonic()
                    if now - self._partial_at >= self._partial_every:
                        self._partial_at = now
                        self.add("ai_partial", "message",
                                 {"type": "ai", "id": message_id, "content": self._ai_text[message_id]})
                        self._flush_due = True
                return
            self.close_messages()
            if data.get("type") == "ai":
                self.add("tool_call", "tool", data)
            elif data.get("type") == "tool":
                artifact = data.get("artifact")
                if isinstance(artifact, dict) and "human_input" in artifact:
                    self.add("human_input_request", "human_input", dict(artifact["human_input"]))
                self.add("tool_result", "tool", data)
        elif event.type == "custom":
            self.close_messages()
            if isinstance(data, dict) and data.get("type") == "guardrail":
                self.add("guardrail", "guardrail", data)
            else:
                self.add("custom", "custom", data if isinstance(data, dict) else {"value": data})
        elif event.type in {"end", "error"}:
            self.close_messages()
            payload = dict(data or {})
            if self.trace_id is not None:
                payload["trace_id"] = self.trace_id
            self.add("run_end" if event.type == "end" else "run_error", "run", payload)

    @property
    def should_flush(self) -> bool:
        """Whether enough entries are buffered to write a batch."""
        return self._flush_due or len(self._buffer) >= self._flush_every

    async def flush(self) -> None:
        """Write buffered entries (AI text still streaming stays buffered)."""
        self._flush_due = False
        if self._store is None or not self._buffer:
            self._buffer.clear()
            return
        batch, self._buffer = self._buffer, []
        await self._store.append(batch)

    async def close(self) -> None:
        """Flush everything, including partial AI text (a cancelled run keeps what it said)."""
        self.close_messages()
        if self._sink is not None and self._buffer:
            batch, self._buffer = self._buffer, []
            self._sink(batch)
            return
        await self.flush()
