"""SSE of a run that another server (sharing this database) executes: its journal, then its outcome.

This server has no live channel for such a run; :func:`~deerflow_nb.runtime.follow.follow_stored_run`
turns the journal into stream events, and the frames are the ones :mod:`sse` sends. Their ids are
``j{seq}`` (journal sequence numbers), so a reconnect with ``Last-Event-ID`` resumes after that entry;
an id from another server's live channel cannot be mapped: the replay starts over after a ``gap``.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from tornado.iostream import StreamClosedError

from deerflow_nb.runtime.follow import follow_stored_run
from deerflow_nb.runtime.serialize import serialize_state
from deerflow_nb.runtime.stream_modes import LANGGRAPH_STREAM_MODES
from jupyter_ext.handlers.sse import sse_event, wire_frame

if TYPE_CHECKING:
    from jupyter_ext.handlers.base import DeerFlowHandler

__all__ = ["stream_stored_run"]


def _journal_cursor(last_event_id: str | None) -> int | None:
    """The journal seq a ``j{seq}`` id names (``None`` for any other id)."""
    seq = last_event_id[1:] if last_event_id and last_event_id.startswith("j") else ""
    if seq.isascii() and seq.isdigit() and len(seq) <= 18:  # int() refuses '²' and 5000-digit strings
        return int(seq)
    return None


async def stream_stored_run(handler: DeerFlowHandler, *, run_id: str, thread_id: str, modes: list[str] | None,
                            last_event_id: str | None, on_disconnect: str = "continue") -> None:
    """Write the journal of a run executed elsewhere until its row is terminal (or the client goes away)."""
    service = handler.service
    engine = service.engine
    user_id = handler.user_id
    handler.set_header("Content-Type", "text/event-stream; charset=utf-8")
    handler.set_header("Cache-Control", "no-store")
    handler.set_header("X-Accel-Buffering", "no")
    handler.set_header("Location", f"/threads/{thread_id}/runs/{run_id}/stream")
    handler.set_header("Content-Location", f"/threads/{thread_id}/runs/{run_id}")
    wanted = frozenset(LANGGRAPH_STREAM_MODES if modes is None else modes) | {"error"}
    store = await service.call(engine.store())
    after = _journal_cursor(last_event_id)

    async def final_values() -> Any:
        return serialize_state(await engine.get_state(thread_id, user_id))

    disconnected = False
    try:
        if last_event_id is None or last_event_id == "-1":  # "-1": a replay from the start (the SDKs' convention)
            handler.write(sse_event("metadata", {"run_id": run_id, "attempt": 1}))
        elif after is None:
            handler.write(sse_event("gap", {"type": "stream_replay_gap", "last_event_id": last_event_id,
                                            "resumed_at": None, "reason": "run executed by another server; "
                                            "replaying its journal"}))
        await handler.flush()
        events = service.iterate(lambda: follow_stored_run(
            store.runs, store.events, run_id, user_id, after_seq=after or 0, poll_seconds=engine.runs.poll_seconds,
            final_values=final_values if "values" in wanted else None,
            heartbeat_seconds=engine.bridge.heartbeat_seconds))
        async for seq, event in events:
            if event is None:  # nothing new for a while: keep proxies from closing the idle stream
                handler.write(": heartbeat\n\n")
                await handler.flush()
                continue
            if event.type not in wanted:
                continue
            handler.write(sse_event(*wire_frame(event, run_id, thread_id), f"j{seq}" if seq is not None else None))
            await handler.flush()
    except StreamClosedError:
        disconnected = True
    if disconnected and on_disconnect == "cancel":
        await service.call(engine.runs.cancel(run_id, user_id=user_id))
    if not disconnected:
        with contextlib.suppress(StreamClosedError):
            handler.finish()
