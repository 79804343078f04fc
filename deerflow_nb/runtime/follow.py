"""Follow a run that another process executes, from the shared database.

Servers sharing one database hold only their own runs' live channels. A client that joins a
run of another server gets the run's journal (``run_events``) as stream events instead: what
is stored already, then new entries as the owner writes them (polled at a modest pace), until
the run's row is terminal. AI text arrives in the journal as ``ai_partial`` snapshots (every
few seconds while an answer streams) and a final ``ai_message``; each becomes a
``messages-tuple`` delta with the text not sent yet. The last events are ``values`` (the
thread's final state, when asked for), then ``error`` (a run that did not succeed) and ``end``,
also for a run recovered after its owner died (whose journal has no end of its own).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from deerflow_nb.persistence.events import JournalEntry, RunEventStore
from deerflow_nb.persistence.runs import RunInfo, RunStore
from deerflow_nb.runtime.events import StreamEvent
from deerflow_nb.runtime.run_manager import TERMINAL_STATUSES

__all__ = ["follow_stored_run", "journal_events"]

_TERMINAL_TYPES = frozenset({"end", "error"})


def journal_events(entry: JournalEntry, texts: dict[str, str]) -> list[StreamEvent]:
    """The stream events one journal entry stands for; ``texts`` holds the AI text sent so far."""
    payload = entry.payload
    if entry.event_type in {"ai_partial", "ai_message"}:
        message_id = str(payload.get("id") or "")
        raw = payload.get("content")
        content = raw if isinstance(raw, str) else ""
        sent = texts.get(message_id, "")
        delta = content[len(sent):] if content.startswith(sent) else content
        texts[message_id] = content
        return [StreamEvent("messages-tuple", {"type": "ai", "id": message_id, "content": delta})] if delta else []
    if entry.event_type in {"tool_call", "tool_result"}:
        return [StreamEvent("messages-tuple", payload)]
    if entry.event_type == "custom":
        return [StreamEvent("custom", payload)]
    if entry.event_type == "run_error":
        return [StreamEvent("error", payload)]
    if entry.event_type == "run_end":
        return [StreamEvent("end", payload)]
    return []  # the human input, workspace changes: not stream events


def _outcome(info: RunInfo) -> list[StreamEvent]:
    """``error`` (unless it succeeded) and ``end`` of a run whose journal did not record them."""
    outcome = {"run_id": info.run_id, "status": info.status, "stop_reason": info.stop_reason, "usage": info.usage,
               "pending_input": None}
    events = []
    if info.status != "success":
        error = info.error or {}
        events.append(StreamEvent("error", {**error, "message": error.get("message", info.status),
                                            "type": error.get("type", "RunError"), **outcome}))
    events.append(StreamEvent("end", outcome))
    return events


async def follow_stored_run(runs: RunStore, events: RunEventStore, run_id: str, user_id: str, *,
                            after_seq: int = 0, poll_seconds: float = 0.5,
                            final_values: Callable[[], Awaitable[Any]] | None = None,
                            heartbeat_seconds: float | None = None,
                            ) -> AsyncIterator[tuple[int | None, StreamEvent | None]]:
    """``(journal seq, event)`` of the run, from after ``after_seq`` until its row is terminal.

    ``final_values`` returns the thread's final state, yielded as ``values`` before the run's
    last ``error``/``end``; events that are not in the journal come with seq ``None``. With
    ``heartbeat_seconds``, ``(None, None)`` comes after that long without an event (a stream
    sends a heartbeat). Ends at once for an unknown run (or another user's).
    """
    loop = asyncio.get_running_loop()
    quiet_since = loop.time()
    texts: dict[str, str] = {}
    read_seq = 0  # the whole journal is read (text sent before a reconnect is not sent twice)
    pending_terminal: list[tuple[int | None, StreamEvent]] = []
    while True:
        info = await runs.get(run_id, user_id)  # the status first: entries committed with it are read next
        done = info is None or info.status in TERMINAL_STATUSES
        for entry in await events.list(user_id, run_id=run_id, after_seq=read_seq):
            read_seq = entry.seq
            for event in journal_events(entry, texts):
                if entry.seq <= after_seq:
                    continue
                if event.type in _TERMINAL_TYPES:
                    pending_terminal.append((entry.seq, event))
                else:
                    quiet_since = loop.time()
                    yield entry.seq, event
        if done:
            break
        if heartbeat_seconds is not None and loop.time() - quiet_since >= heartbeat_seconds:
            quiet_since = loop.time()
            yield None, None
        await asyncio.sleep(poll_seconds)
    if info is None:
        return
    if final_values is not None:
        yield None, StreamEvent("values", await final_values())
    recorded = {event.type for _, event in pending_terminal}
    if "end" not in recorded:  # recovered after its owner died, or finished without a journal end
        pending_terminal += [(None, event) for event in _outcome(info) if event.type not in recorded]
    for item in pending_terminal:
        yield item
