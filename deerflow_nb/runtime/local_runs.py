"""In-process runs: a background task per run, buffered events, many subscribers.

Each run's events are kept for its lifetime so a late subscriber replays from the
start. One active run per thread (multitask strategy ``reject``).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from deerflow_nb.errors import ThreadBusyError
from deerflow_nb.runtime.events import StreamEvent

__all__ = ["LocalRunManager", "RunRecord"]

RunBody = Callable[["RunRecord"], AsyncIterator[StreamEvent]]


@dataclass
class RunRecord:
    """A run's status and its event buffer. Lives on the loop that started it."""

    run_id: str
    thread_id: str
    status: str = "pending"  # pending -> running -> success | error | interrupted
    created_at: float = field(default_factory=time.time)
    events: list[StreamEvent] = field(default_factory=list)
    error: dict[str, Any] | None = None
    task: asyncio.Task[None] | None = None
    _changed: asyncio.Condition = field(default_factory=asyncio.Condition)

    @property
    def done(self) -> bool:
        """Whether the run reached a final status."""
        return self.status in {"success", "error", "interrupted", "timeout"}

    async def _publish(self, event: StreamEvent) -> None:
        async with self._changed:
            self.events.append(event)
            self._changed.notify_all()

    async def _finish(self, status: str) -> None:
        async with self._changed:
            self.status = status
            self._changed.notify_all()

    async def subscribe(self, start: int = 0) -> AsyncIterator[StreamEvent]:
        """Yield events from index ``start`` until the run ends (replaying what is buffered)."""
        index = start
        while True:
            async with self._changed:
                while index >= len(self.events) and not self.done:
                    await self._changed.wait()
                batch = self.events[index:]
                finished = self.done
            for event in batch:
                yield event
            index += len(batch)
            if finished and index >= len(self.events):
                return

    async def wait(self) -> RunRecord:
        """Wait until the run has finished."""
        async for _ in self.subscribe(len(self.events)):
            pass
        return self


class LocalRunManager:
    """Starts runs as tasks on the current loop; keeps the last ``max_finished`` finished runs."""

    def __init__(self, max_finished: int = 256) -> None:
        self._active: dict[str, RunRecord] = {}
        self._runs: OrderedDict[str, RunRecord] = OrderedDict()
        self._max_finished = max_finished

    def active_run(self, thread_id: str) -> RunRecord | None:
        """The thread's active run, if any."""
        return self._active.get(thread_id)

    def get(self, run_id: str) -> RunRecord | None:
        """A known run by id."""
        return self._runs.get(run_id)

    def start(self, thread_id: str, body: RunBody, *, run_id: str | None = None) -> RunRecord:
        """Start ``body(record)`` as a background task; a busy thread raises :class:`ThreadBusyError`."""
        busy = self._active.get(thread_id)
        if busy is not None and not busy.done:
            raise ThreadBusyError(f"thread {thread_id!r} already has an active run ({busy.run_id}); "
                                  "wait for it or cancel it first")
        record = RunRecord(run_id=run_id or str(uuid.uuid4()), thread_id=thread_id)
        self._active[thread_id] = record
        self._runs[record.run_id] = record
        while len(self._runs) > self._max_finished:
            oldest = next(iter(self._runs))
            if not self._runs[oldest].done:
                break
            self._runs.pop(oldest)
        record.task = asyncio.get_running_loop().create_task(self._drive(record, body))
        return record

    async def _drive(self, record: RunRecord, body: RunBody) -> None:
        record.status = "running"
        status = "success"
        try:
            async for event in body(record):
                if event.type == "error":
                    status = "error"
                    record.error = event.data
                await record._publish(event)
        except asyncio.CancelledError:
            status = "interrupted"
            await record._publish(StreamEvent("error", {"message": "run cancelled", "type": "Cancelled",
                                                        "run_id": record.run_id}))
        except Exception as exc:  # the body failed outside the graph
            status = "error"
            record.error = {"message": str(exc), "type": type(exc).__name__, "run_id": record.run_id}
            await record._publish(StreamEvent("error", record.error))
        finally:
            if self._active.get(record.thread_id) is record:
                del self._active[record.thread_id]
            await record._finish(status)

    async def cancel(self, run_id: str) -> str:
        """Cancel a run: ``cancelled``, ``not_cancellable`` (already finished) or ``unknown``."""
        record = self._runs.get(run_id)
        if record is None:
            return "unknown"
        if record.done or record.task is None:
            return "not_cancellable"
        record.task.cancel()
        try:
            await record.task
        except asyncio.CancelledError:
            pass
        return "cancelled"
