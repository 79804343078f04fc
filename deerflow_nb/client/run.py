"""``Run``: a handle on a background run."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING, Any

from deerflow_nb.errors import RunError
from deerflow_nb.runtime import StreamEvent

if TYPE_CHECKING:
    from deerflow_nb.client.loop import BackgroundLoop
    from deerflow_nb.runtime.local_runs import LocalRunManager, RunRecord

__all__ = ["Run"]


class Run:
    """A run executing in the background; the cell that started it has already returned.

    ``events()`` replays from the start, so several consumers (a widget, a script)
    see the whole run.
    """

    def __init__(self, record: RunRecord, manager: LocalRunManager, loop: BackgroundLoop) -> None:
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
        """``pending``, ``running``, ``success``, ``error`` or ``interrupted``."""
        return self._record.status

    @property
    def done(self) -> bool:
        """Whether the run has finished."""
        return self._record.done

    def events(self, start: int = 0) -> Iterator[StreamEvent]:
        """Iterate the run's events (blocking), from index ``start``."""
        return self._loop.iterate(lambda: self._record.subscribe(start), method="Run.events")

    def aevents(self, start: int = 0) -> AsyncIterator[StreamEvent]:
        """Async twin of :meth:`events`."""
        return self._loop.aiterate(lambda: self._record.subscribe(start))

    def _result(self) -> str:
        end = next((e for e in reversed(self._record.events) if e.type in {"end", "error"}), None)
        if self._record.status != "success" or end is None or end.type == "error":
            detail = self._record.error or (end.data if end else None)
            message = (detail or {}).get("message", self._record.status) if isinstance(detail, dict) else detail
            raise RunError(f"run {self.run_id} ended with status {self._record.status}: {message}",
                           run_id=self.run_id, detail=detail)
        return final_text(self._record.events)

    def wait(self) -> str:
        """Block until the run ends; return the final answer text (``RunError`` if it failed)."""
        self._loop.run(self._record.wait(), method="Run.wait")
        return self._result()

    async def await_result(self) -> str:
        """Async twin of :meth:`wait`."""
        await self._loop.arun(self._record.wait())
        return self._result()

    def __await__(self) -> Any:
        return self.await_result().__await__()

    def cancel(self) -> str:
        """Cancel the run: ``cancelled``, ``not_cancellable`` or ``unknown``."""
        return self._loop.run(self._manager.cancel(self.run_id), method="Run.cancel")

    async def acancel(self) -> str:
        """Async twin of :meth:`cancel`."""
        return await self._loop.arun(self._manager.cancel(self.run_id))

    @property
    def pending_input(self) -> dict[str, Any] | None:
        """The human-input request the run ended with, if any."""
        end = next((e for e in reversed(self._record.events) if e.type == "end"), None)
        return end.data.get("pending_input") if end else None

    @property
    def usage(self) -> dict[str, int] | None:
        """Token usage of the run (once it has ended)."""
        end = next((e for e in reversed(self._record.events) if e.type == "end"), None)
        return end.data.get("usage") if end else None


def final_text(events: list[StreamEvent]) -> str:
    """The final AI message text rebuilt from ``messages-tuple`` deltas."""
    texts: dict[str, str] = {}
    order: list[str] = []
    for event in events:
        data = event.data
        if event.type == "messages-tuple" and data.get("type") == "ai" and data.get("content"):
            if data["id"] not in texts:
                order.append(data["id"])
                texts[data["id"]] = ""
            texts[data["id"]] += data["content"]
    # the last AI message that carries text; tool-call-only messages carry none
    for message_id in reversed(order):
        return texts[message_id]
    return ""
