"""Progress events: a run says what it is doing from its first second.

:func:`with_progress` wraps a run's event stream. It emits a ``progress`` event at once and
then again whenever the stream has been quiet for ``interval`` seconds, so a consumer is never
left with a bare "running" badge while a small local model reads a long prompt. Each carries::

    {"phase": "reading_prompt" | "generating" | "running_tool",
     "label": "reading the prompt",   # the same, for people
     "elapsed": 12.3,                 # seconds since the run started
     "tokens": 40,                    # output tokens seen so far in this run
     "tool": "bash"}                  # while a tool runs

The phase follows the stream: a model call reads its prompt until its first token (a model may
report that moment, and its token count, with a ``model_progress`` custom event, as the embedded
model does), generates until it ends, and a tool call runs until its result arrives.
``progress`` events are not journaled: they describe the moment, not the conversation.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from typing import Any

from deerflow_nb.runtime.events import StreamEvent

__all__ = ["MODEL_PROGRESS", "PHASE_LABELS", "ProgressTracker", "with_progress"]

#: ``custom`` event type a model writes (through LangGraph's stream writer) to report its first token.
MODEL_PROGRESS = "model_progress"
PHASE_LABELS = {"reading_prompt": "reading the prompt", "generating": "generating", "running_tool": "running a tool"}
_DONE = object()


class ProgressTracker:
    """Derives the run's phase and token count from the events that pass."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.phase = "reading_prompt"
        self.tokens = 0
        self.model_tokens = 0  # reported by the model for its current call
        self.tool: str | None = None

    def observe(self, event: StreamEvent) -> bool:
        """Update from ``event``; whether it is a model report (consumed, not forwarded)."""
        data = event.data if isinstance(event.data, dict) else {}
        if event.type == "custom" and data.get("type") == MODEL_PROGRESS:
            self.phase = "generating"
            reported = int(data.get("tokens") or 0)
            self.tokens += max(0, reported - self.model_tokens)
            self.model_tokens = reported
            return True
        if event.type == "messages-tuple":
            kind = data.get("type")
            if kind == "ai":
                if data.get("tool_calls"):
                    self._tool(data["tool_calls"])
                elif data.get("content") and self.model_tokens == 0:
                    self.phase = "generating"
                    self.tokens += 1
            elif kind == "tool":
                self.phase, self.tool, self.model_tokens = "reading_prompt", None, 0
        elif event.type == "values":
            messages = data.get("messages") or []
            last = messages[-1] if messages else None
            calls = last.get("tool_calls") if isinstance(last, dict) else getattr(last, "tool_calls", None)
            if calls:
                self._tool(calls)
        return False

    def _tool(self, calls: list[Any]) -> None:
        first = calls[0]
        name = first.get("name") if isinstance(first, dict) else getattr(first, "name", None)
        self.phase, self.tool, self.model_tokens = "running_tool", name or None, 0

    def event(self) -> StreamEvent:
        """The ``progress`` event for now."""
        data: dict[str, Any] = {"phase": self.phase, "label": PHASE_LABELS[self.phase],
                                "elapsed": round(time.monotonic() - self.started, 1), "tokens": self.tokens}
        if self.tool:
            data["tool"] = self.tool
        return StreamEvent("progress", data)


async def with_progress(source: AsyncIterator[StreamEvent], interval: float = 2.0) -> AsyncIterator[StreamEvent]:
    """``source``'s events with ``progress`` events: one at once, then one per quiet ``interval``.

    ``source`` runs in one producer task (its context copied once, as a task's is), so the
    quiet-time wait never cancels or re-enters the run's own generator.
    """
    tracker = ProgressTracker()
    queue: asyncio.Queue[Any] = asyncio.Queue(maxsize=1)

    async def produce() -> None:
        try:
            async for item in source:
                await queue.put(item)
        except asyncio.CancelledError:
            raise  # the consumer cancelled us (it is gone or going): nobody to tell
        except BaseException as exc:  # delivered to the consumer, which re-raises it
            await queue.put(exc)
            return
        finally:
            closer = getattr(source, "aclose", None)
            if closer is not None:
                await closer()
        await queue.put(_DONE)

    producer = asyncio.ensure_future(produce())
    getter: asyncio.Future[Any] | None = None
    yield tracker.event()
    try:
        while True:
            # asyncio.wait, not wait_for: on Python 3.11 wait_for can swallow a cancellation that
            # arrives as the item does, and a cancelled run would then carry on
            if getter is None:
                getter = asyncio.ensure_future(queue.get())
            done, _ = await asyncio.wait({getter, producer}, timeout=interval, return_when=asyncio.FIRST_COMPLETED)
            if not done:
                yield tracker.event()
                continue
            if getter not in done:  # the producer ended: it handed over _DONE or its error, unless cancelled
                if producer.cancelled():
                    raise asyncio.CancelledError
                continue
            item, getter = getter.result(), None
            if item is _DONE:
                return
            if isinstance(item, BaseException):
                raise item
            phase = tracker.phase
            if not tracker.observe(item):
                yield item
            elif tracker.phase != phase:  # the model's first token: say so now, not at the next tick
                yield tracker.event()
    finally:
        if getter is not None:
            getter.cancel()
        if not producer.done():
            producer.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await producer
