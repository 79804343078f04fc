"""``Run``: a handle on a background run."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING, Any

from deerflow_nb.errors import RunError, run_error
from deerflow_nb.runtime import BridgeEvent, StreamEvent

if TYPE_CHECKING:
    from deerflow_nb.client.loop import BackgroundLoop
    from deerflow_nb.runtime import RunManager, RunRecord

__all__ = ["Run", "failure_of", "run_result"]


class Run:
    """A run executing in the background; the cell that started it has already returned.

    ``events()`` replays what the stream bridge still holds (the whole run unless it
    produced more than ``stream_bridge.queue_maxsize`` events and finished a while ago),
    so several consumers (a widget, a script) see the run.
    """

    def __init__(self, record: RunRecord, manager: RunManager, loop: BackgroundLoop) -> None:
        self._record = record
        self._manager = manager
        self._loop = loop

    def __repr__(self) -> str:
        return f"<Run {self.run_id} thread={self.thread_id} status={self.status}>"

    @property
    def run_id(self) -> str:
        """The run's id (also on its input message and in its runtime context)."""
        return self._record.run_id

    @property
    def thread_id(self) -> str:
        """The thread the run belongs to."""
        return self._record.thread_id

    @property
    def status(self) -> str:
        """``pending``, ``running``, ``success``, ``error``, ``timeout`` or ``interrupted``."""
        return self._record.status

    @property
    def done(self) -> bool:
        """Whether the run has finished."""
        return self._record.done

    async def _batches(self, start: int) -> AsyncIterator[list[StreamEvent]]:
        bridge = self._manager.bridge
        if not bridge.has(self.run_id):
            return  # finished long ago: its events are in the journal (thread.run_events)
        async for batch in bridge.subscribe_batches(self.run_id, str(start) if start else None):
            events = [item.event for item in batch if isinstance(item, BridgeEvent)]
            if events:
                yield events

    def events(self, start: int = 0) -> Iterator[StreamEvent]:
        """Iterate the run's events (blocking), after the first ``start`` events."""
        # one hop to the private loop per burst of events, not per event
        for batch in self._loop.iterate(lambda: self._batches(start), method="Run.events"):
            yield from batch

    async def aevents(self, start: int = 0) -> AsyncIterator[StreamEvent]:
        """Async twin of :meth:`events`."""
        async for batch in self._loop.aiterate(lambda: self._batches(start)):
            for event in batch:
                yield event

    def wait(self) -> str:
        """Block until the run ends; return the final answer text.

        Raises :class:`~deerflow_nb.errors.RunError` (a subclass: ``ModelCallError``,
        ``ToolBudgetError``, ``RunTimeoutError``, ``RunInterruptedError``) when the run did
        not succeed. Ctrl-C (a kernel interrupt) while waiting cancels the run.
        """
        try:
            self._loop.run(self._record.wait(), method="Run.wait")
        except KeyboardInterrupt:
            self._loop.run(self._manager.cancel(self.run_id), method="Run.cancel")
            raise
        return run_result(self._record)

    async def await_result(self) -> str:
        """Async twin of :meth:`wait` (cancelling the awaiting task cancels the run)."""
        try:
            await self._loop.arun(self._record.wait())
        except asyncio.CancelledError:
            await asyncio.shield(self._loop.arun(self._manager.cancel(self.run_id)))
            raise
        return run_result(self._record)

    def __await__(self) -> Any:
        return self.await_result().__await__()

    def cancel(self, action: str = "interrupt") -> str:
        """Cancel the run: ``cancelled``, ``not_cancellable`` or ``unknown``.

        ``action="rollback"`` also restores the thread's state from before the run.
        """
        return self._loop.run(self._manager.cancel(self.run_id, action=action), method="Run.cancel")

    async def acancel(self, action: str = "interrupt") -> str:
        """Async twin of :meth:`cancel`."""
        return await self._loop.arun(self._manager.cancel(self.run_id, action=action))

    @property
    def pending_input(self) -> dict[str, Any] | None:
        """The human-input request the run ended with, if any."""
        end = self._record.end_data
        return end.get("pending_input") if end else None

    @property
    def usage(self) -> dict[str, int] | None:
        """Token usage of the run (once it has ended)."""
        return self._record.usage


def run_result(record: RunRecord) -> str:
    """The final answer text of a finished run, or :class:`RunError` (a subclass naming the failure)."""
    if record.status != "success" or record.end_data is None:
        raise failure_of(record.run_id, record.status, record.stop_reason, record.error)
    return record.final_text


def failure_of(run_id: str | None, status: str, stop_reason: str | None, detail: Any) -> RunError:
    """The :class:`RunError` of a run that ended with ``status`` (not ``success``)."""
    message = detail.get("message") if isinstance(detail, dict) else None
    if isinstance(detail, dict):
        stop_reason = stop_reason or detail.get("stop_reason")
    return run_error(run_id=run_id, status=status, stop_reason=stop_reason, cause=message or status, detail=detail)
