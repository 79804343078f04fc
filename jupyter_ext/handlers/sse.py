"""Server-sent events of a run: ids, ``Last-Event-ID`` replay, ``gap``, heartbeats, END."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from tornado.iostream import StreamClosedError

from deerflow_nb.runtime import HEARTBEAT, BridgeEvent, StreamGap
from jupyter_ext.handlers.base import dumps

if TYPE_CHECKING:
    from jupyter_ext.handlers.base import DeerFlowHandler

__all__ = ["sse_event", "stream_run"]

_ALWAYS = frozenset({"end", "error"})


def sse_event(event: str, data: Any, event_id: str | None = None) -> str:
    """One SSE frame (``id`` omitted for control events such as ``gap`` and ``metadata``)."""
    head = f"event: {event}\n" + (f"id: {event_id}\n" if event_id is not None else "")
    return f"{head}data: {dumps(data)}\n\n"


async def stream_run(handler: DeerFlowHandler, *, run_id: str, thread_id: str | None, modes: list[str] | None,
                     last_event_id: str | None, on_disconnect: str = "continue") -> None:
    """Write the run's events to ``handler`` until END (or until the client goes away).

    ``modes`` filters event types (``None``: all); ``end`` and ``error`` always pass.
    With ``on_disconnect="cancel"`` a client that disconnects cancels the run.
    """
    service = handler.service
    handler.set_header("Content-Type", "text/event-stream; charset=utf-8")
    handler.set_header("Cache-Control", "no-store")
    handler.set_header("X-Accel-Buffering", "no")
    if thread_id is not None:  # lets langgraph-sdk reconnect by itself with Last-Event-ID
        handler.set_header("Location", f"/threads/{thread_id}/runs/{run_id}/stream")
        handler.set_header("Content-Location", f"/threads/{thread_id}/runs/{run_id}/stream")
    wanted = None if modes is None else frozenset(modes) | _ALWAYS
    bridge = service.engine.bridge
    disconnected = False
    try:
        await handler.flush()  # headers now: later writes cannot turn this into a JSON response
        if last_event_id is None:
            handler.write(sse_event("metadata", {"run_id": run_id, "thread_id": thread_id, "attempt": 1}))
            await handler.flush()
        if not bridge.has(run_id):  # finished long ago: report the stored outcome
            info = await service.call(service.engine.runs.get(run_id, handler.user_id))
            if info is not None:
                outcome = {"run_id": run_id, "status": info.status, "stop_reason": info.stop_reason,
                           "usage": info.usage}
                if info.status != "success":  # as streamed live: ``error``, then ``end``
                    handler.write(sse_event("error", {**(info.error or {}), **outcome,
                                                      "message": (info.error or {}).get("message", info.status)}))
                handler.write(sse_event("end", {**outcome, "error": info.error}))
            return
        async for batch in service.iterate(lambda: bridge.subscribe_batches(run_id, last_event_id, heartbeat=True)):
            frames: list[str] = []
            for item in batch:
                if isinstance(item, BridgeEvent):
                    if wanted is None or item.event.type in wanted:
                        frames.append(sse_event(item.event.type, item.event.data, item.id))
                elif isinstance(item, StreamGap):
                    frames.append(sse_event("gap", item.to_dict()))
                elif item is HEARTBEAT:
                    frames.append(": heartbeat\n\n")
            if frames:
                handler.write("".join(frames))
                await handler.flush()
    except StreamClosedError:
        disconnected = True
    except KeyError:  # the channel vanished between the check and the subscription
        pass
    if disconnected and on_disconnect == "cancel":
        await service.call(service.engine.runs.cancel(run_id))
    if not disconnected:
        with contextlib.suppress(StreamClosedError):
            handler.finish()
