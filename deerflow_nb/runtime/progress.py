"""Progress events: a run says what it is doing from its first second.

The run manager drives a :class:`ProgressTicker` for each run. It publishes a ``progress`` event
at once and then again whenever the run has been quiet for ``interval`` seconds, so a consumer is
never left with a bare "running" badge while a small local model reads a long prompt. Each carries::

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
import time
from collections.abc import Callable
from typing import Any

from deerflow_nb.runtime.events import StreamEvent

__all__ = ["MODEL_PROGRESS", "PHASE_LABELS", "ProgressTicker", "ProgressTracker"]

#: ``custom`` event type a model writes (through LangGraph's stream writer) to report its first token.
MODEL_PROGRESS = "model_progress"
PHASE_LABELS = {"reading_prompt": "reading the prompt", "generating": "generating", "running_tool": "running a tool"}


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
        if event.namespace is not None:  # a subagent's frame (``stream_subgraphs``): not the run's phase
            return False
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


class ProgressTicker:
    """Publishes ``progress`` events for one run: at once, then whenever it has been quiet for ``interval``.

    Driven by a loop timer, not a task: the run's own loop calls :meth:`observe` with every event
    (a few dictionary look-ups), and the timer publishes only when nothing else was published for
    ``interval`` seconds, so a busy stream costs next to nothing. :meth:`observe` returns ``False``
    for a model report (a ``model_progress`` custom event), which the caller does not forward;
    the report's first token is published at once as a phase change.
    """

    def __init__(self, publish: Callable[[StreamEvent], object], interval: float = 2.0) -> None:
        self.tracker = ProgressTracker()
        self._publish = publish
        self._interval = interval
        self._loop = asyncio.get_running_loop()
        self._last = self._loop.time()
        self._handle: asyncio.TimerHandle | None = None

    def start(self) -> None:
        """Publish the first progress event and arm the timer."""
        self._emit()

    def observe(self, event: StreamEvent) -> bool:
        """Update from ``event``; whether the caller should forward it."""
        phase = self.tracker.phase
        if self.tracker.observe(event):
            if self.tracker.phase != phase:  # the model's first token: say so now, not at the next tick
                self._emit()
            return False
        self._last = self._loop.time()
        return True

    def stop(self) -> None:
        """Disarm the timer (the run ended)."""
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _emit(self) -> None:
        self._publish(self.tracker.event())
        self._last = self._loop.time()
        self._arm(self._interval)

    def _arm(self, delay: float) -> None:
        if self._handle is not None:
            self._handle.cancel()
        self._handle = self._loop.call_later(delay, self._tick)

    def _tick(self) -> None:
        self._handle = None
        quiet = self._loop.time() - self._last
        if quiet >= self._interval * 0.999:
            self._emit()
        else:
            self._arm(self._interval - quiet)
