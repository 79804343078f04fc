"""Server-sent events of a run, on the wire as LangGraph Platform sends them.

Stream events become LangGraph frames: ``values`` (the full
state), ``messages`` carrying ``[message_chunk, metadata]`` for the ``messages-tuple`` mode,
``updates``, ``custom``, ``error``. DeerFlow's ``end`` and ``progress`` events are sent only to
streams that asked for those modes (DeerFlow's own client does). Every frame has an ``id``
(``Last-Event-ID`` replay), ``gap`` reports events that are no longer available (a resume from
further back than the bridge retains, a resume after a finished run's channel was cleaned up, or
a reader that fell more than ``stream_bridge.reader_queue_maxsize`` events behind), heartbeats
are SSE comments.
"""

from __future__ import annotations

import contextlib
import json
import re
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from tornado.iostream import StreamClosedError

from deerflow_nb.runtime import HEARTBEAT, BridgeEvent, StreamEvent, StreamGap
from deerflow_nb.runtime.stream_modes import LANGGRAPH_STREAM_MODES
from jupyter_ext.handlers.base import dumps

if TYPE_CHECKING:
    from jupyter_ext.handlers.base import DeerFlowHandler

__all__ = ["message_chunk", "sse_event", "stream_run", "wire_frame"]

_ALWAYS = frozenset({"error"})
#: A ``Last-Event-ID`` that can name an event of a run (ids are 1, 2, ...); anything else replays from the start.
_EVENT_ID = re.compile(r"0*[1-9][0-9]*")


def message_chunk(data: dict[str, Any]) -> dict[str, Any]:
    """A ``messages-tuple`` event's message as LangGraph's message chunk (an ``AIMessageChunk`` for AI text)."""
    if data.get("type") != "ai":
        return data
    calls = list(data.get("tool_calls") or [])
    return {"content": data.get("content") or "", "additional_kwargs": data.get("additional_kwargs") or {},
            "response_metadata": data.get("response_metadata") or {}, "type": "AIMessageChunk",
            "name": data.get("name"), "id": data.get("id"), "tool_calls": calls,
            "invalid_tool_calls": list(data.get("invalid_tool_calls") or []),
            "usage_metadata": data.get("usage_metadata"),
            "tool_call_chunks": [{"name": c.get("name"), "args": json.dumps(c.get("args") or {}), "id": c.get("id"),
                                  "index": i, "type": "tool_call_chunk"} for i, c in enumerate(calls)],
            "chunk_position": None}


def wire_frame(event: StreamEvent, run_id: str, thread_id: str | None) -> tuple[str, Any]:
    """``(SSE event name, data)`` of a stream event, as LangGraph Platform names and shapes it.

    A subagent's frame (``stream_subgraphs``) is named ``<mode>|<namespace>``, as LangGraph names a
    subgraph's stream parts (``values|tools:<task_id>``).
    """
    if event.namespace is not None:
        name, data = wire_frame(replace(event, namespace=None), run_id, thread_id)
        return f"{name}|{event.namespace}", data
    if event.type == "messages-tuple":
        data = event.data if isinstance(event.data, dict) else {}
        meta = dict(event.meta or {"langgraph_node": "tools" if data.get("type") == "tool" else "model"})
        meta.update(run_id=run_id, thread_id=thread_id)
        return "messages", [message_chunk(data), meta]
    if event.type == "error" and isinstance(event.data, dict):
        return "error", {"error": event.data.get("type") or "Error", **event.data}
    return event.type, event.data


def sse_event(event: str, data: Any, event_id: str | None = None) -> str:
    """One SSE frame (``id`` omitted for control events such as ``gap`` and ``metadata``)."""
    head = f"event: {event}\n" + (f"id: {event_id}\n" if event_id is not None else "")
    return f"{head}data: {dumps(data)}\n\n"


async def stream_run(handler: DeerFlowHandler, *, run_id: str, thread_id: str | None, modes: list[str] | None,
                     last_event_id: str | None, on_disconnect: str = "continue", stateless: bool = False,
                     join: bool = False) -> None:
    """Write the run's events to ``handler`` until the run ends (or until the client goes away).

    ``modes`` filters event types (``None``: every LangGraph mode, not DeerFlow's opt-in
    ``end``/``progress``); ``error`` always passes. With ``on_disconnect="cancel"`` a
    client that disconnects cancels the run. A ``stateless`` run's headers name ``/runs/{run_id}``.
    A ``join`` without ``last_event_id`` streams what the run emits from now on, as LangGraph does
    (``Last-Event-ID: -1`` replays the run from its start).
    """
    service = handler.service
    handler.set_header("Content-Type", "text/event-stream; charset=utf-8")
    handler.set_header("Cache-Control", "no-store")
    handler.set_header("X-Accel-Buffering", "no")
    if thread_id is not None and not stateless:  # Location lets langgraph-sdk reconnect by itself with Last-Event-ID
        handler.set_header("Location", f"/threads/{thread_id}/runs/{run_id}/stream")
        handler.set_header("Content-Location", f"/threads/{thread_id}/runs/{run_id}")
    else:
        handler.set_header("Location", f"/runs/{run_id}/stream")
        handler.set_header("Content-Location", f"/runs/{run_id}")
    wanted = frozenset(LANGGRAPH_STREAM_MODES if modes is None else modes) | _ALWAYS
    bridge = service.engine.bridge
    disconnected = False
    try:
        await handler.flush()  # headers now: later writes cannot turn this into a JSON response
        if (last_event_id is None and not join) or (last_event_id is not None
                                                    and not _EVENT_ID.fullmatch(last_event_id)):
            # a new stream, or a replay from before the first event ("-1", as the JS SDK sends): LangGraph's
            # replay starts with the run's metadata event too; a live join does not get it
            handler.write(sse_event("metadata", {"run_id": run_id, "attempt": 1}))
            await handler.flush()
        if not bridge.has(run_id):  # finished long ago: report the stored outcome
            await _finished_run(handler, run_id, thread_id, last_event_id, wanted)
            return
        # a live join starts after the newest event (none yet: from the first one)
        cursor = bridge.latest_id(run_id) if join and last_event_id is None else last_event_id
        started = False
        try:
            async for batch in service.iterate(lambda: bridge.subscribe_batches(
                    run_id, cursor, heartbeat=True, max_lag=bridge.reader_queue_maxsize)):
                started = True
                await _write_batch(handler, batch, run_id, thread_id, wanted)
        except KeyError:  # the channel was cleaned up between the check and the subscription
            if started:
                raise
            await _finished_run(handler, run_id, thread_id, last_event_id, wanted)
    except StreamClosedError:
        disconnected = True
    if disconnected and on_disconnect == "cancel":
        await service.call(service.engine.runs.cancel(run_id))
    if not disconnected:
        with contextlib.suppress(StreamClosedError):
            handler.finish()


async def _finished_run(handler: DeerFlowHandler, run_id: str, thread_id: str | None, last_event_id: str | None,
                        wanted: frozenset[str]) -> None:
    """The stored outcome of a run whose channel is gone, after a ``gap`` if the client missed events.

    The journal keeps what the run said, not its stream frames (no ids, no ``values``), so the
    frames after ``Last-Event-ID`` cannot be replayed: the gap names the run's events route instead.
    """
    service = handler.service
    info = await service.call(service.engine.runs.get(run_id, handler.user_id))
    if info is None:
        return
    if last_event_id is not None:
        final = service.engine.bridge.final_id(run_id)
        if final is None or last_event_id != final:  # unknown (restart) or behind: events were not delivered
            path = f"/threads/{thread_id}/runs/{run_id}/events" if thread_id is not None else None
            handler.write(sse_event("gap", {"type": "stream_replay_gap", "last_event_id": last_event_id,
                                            "resumed_at": None, "reason": "run finished; its events expired",
                                            "journal": path}))
    outcome = {"run_id": run_id, "status": info.status, "stop_reason": info.stop_reason, "usage": info.usage}
    if info.status != "success":  # as streamed live: ``error``, then ``end``
        error = {**(info.error or {}), **outcome, "message": (info.error or {}).get("message", info.status)}
        handler.write(sse_event(*wire_frame(StreamEvent("error", error), run_id, thread_id)))
    if "end" in wanted:
        handler.write(sse_event("end", {**outcome, "error": info.error}))


async def _write_batch(handler: DeerFlowHandler, batch: list[Any], run_id: str, thread_id: str | None,
                       wanted: frozenset[str]) -> None:
    """Write one bridge batch as SSE frames (events of the wanted modes, gaps, heartbeats) and flush."""
    frames: list[str] = []
    for item in batch:
        if isinstance(item, BridgeEvent):
            if item.event.type in wanted:
                name, data = wire_frame(item.event, run_id, thread_id)
                frames.append(sse_event(name, data, item.id))
        elif isinstance(item, StreamGap):
            frames.append(sse_event("gap", item.to_dict()))
        elif item is HEARTBEAT:
            frames.append(": heartbeat\n\n")
    if frames:
        handler.write("".join(frames))
        await handler.flush()
