"""``Run``: a handle on a background run, the same in both modes."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING, Any

from deerflow_nb.client.backend import RunOutcome
from deerflow_nb.runtime.events import StreamEvent

if TYPE_CHECKING:
    from deerflow_nb.client.backend import Backend

__all__ = ["Run"]


class Run:
    """A run executing in the background (in this process or in the server).

    ``events()`` replays what the stream bridge still holds (the whole run unless it
    produced more than ``stream_bridge.queue_maxsize`` events and finished a while ago),
    so several consumers (a widget, a script) see the run; each call replays afresh.
    """

    def __init__(self, backend: Backend, thread_id: str, run_id: str) -> None:
        self._backend = backend
        self._loop = backend.loop
        self.thread_id = thread_id
        self.run_id = run_id
        self._outcome: RunOutcome | None = None
        self._end: dict[str, Any] | None = None  # the ``end`` event, once an events() loop saw it

    def __repr__(self) -> str:
        return f"<Run {self.run_id} thread={self.thread_id} status={self.status}>"

    @property
    def status(self) -> str:
        """``pending``, ``running``, ``success``, ``error``, ``timeout`` or ``interrupted``."""
        if self._outcome is not None:
            return self._outcome.status
        return self._loop.run(self._backend.run_status(self.thread_id, self.run_id), method="Run.status")

    @property
    def done(self) -> bool:
        """Whether the run has finished."""
        return self._outcome is not None or self.status not in {"pending", "running"}

    async def _batches(self, start: int) -> AsyncIterator[list[StreamEvent]]:
        async for batch in self._backend.run_batches(self.thread_id, self.run_id, start):
            for event in batch:
                if event.type == "end" and isinstance(event.data, dict):
                    self._end = event.data
            yield batch

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

    async def _await(self) -> str:
        if self._outcome is None:
            self._outcome = await self._backend.wait_run(self.thread_id, self.run_id)
        return self._outcome.result()

    def wait(self) -> str:
        """Block until the run ends; return the final answer text.

        Raises :class:`~deerflow_nb.errors.RunError` (a subclass: ``ModelCallError``,
        ``ToolBudgetError``, ``RunTimeoutError``, ``RunInterruptedError``) when the run did
        not succeed. Ctrl-C (a kernel interrupt) while waiting cancels the run.
        """
        try:
            return self._loop.run(self._await(), method="Run.wait")
        except KeyboardInterrupt:
            self.cancel()
            raise

    async def await_result(self) -> str:
        """Async twin of :meth:`wait` (cancelling the awaiting task cancels the run)."""
        try:
            return await self._loop.arun(self._await())
        except asyncio.CancelledError:
            await asyncio.shield(self._loop.arun(self._backend.cancel_run(self.thread_id, self.run_id, "interrupt")))
            raise

    def __await__(self) -> Any:
        return self.await_result().__await__()

    def cancel(self, action: str = "interrupt") -> str:
        """Cancel the run: ``cancelled``, ``not_cancellable`` or ``unknown``.

        ``action="rollback"`` also restores the thread's state from before the run.
        """
        return self._loop.run(self._backend.cancel_run(self.thread_id, self.run_id, action), method="Run.cancel")

    async def acancel(self, action: str = "interrupt") -> str:
        """Async twin of :meth:`cancel`."""
        return await self._loop.arun(self._backend.cancel_run(self.thread_id, self.run_id, action))

    @property
    def _end_data(self) -> dict[str, Any] | None:
        return self._outcome.end_data if self._outcome is not None else self._end

    @property
    def pending_input(self) -> dict[str, Any] | None:
        """The human-input request the run ended with, if any (once it ended and was waited or read)."""
        end = self._end_data
        return end.get("pending_input") if end else None

    @property
    def usage(self) -> dict[str, int] | None:
        """Token usage of the run (once it ended and was waited or read)."""
        end = self._end_data
        return end.get("usage") if end else None

