"""DeerFlow's custom stream events, sent to both of LangGraph's channels for them.

A run's ``custom`` stream (``stream_mode="custom"``) reads what nodes give LangGraph's stream writer;
``astream_events(version="v2")`` consumers read callback events instead. Built-in emitters use
:func:`emit_custom_event` (sync code) or :func:`aemit_custom_event` (async code), which give the
payload to the writer first (the authoritative path: the gateway, the widgets and the SDK read it) and
then dispatch one ``on_custom_event`` named by the payload's ``type``, with the payload unchanged as its
data. A payload without a string ``type`` goes to the writer only. Dispatch is best effort: a consumer
that cannot take it never breaks the run. Outside a graph run both are no-ops.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["aemit_custom_event", "emit_custom_event"]

logger = logging.getLogger(__name__)

Writer = Callable[[Any], None]
#: Dispatches scheduled from sync code on a running loop, kept until they finish.
_PENDING: set[asyncio.Task[None]] = set()


def _writer(writer: Writer | None) -> Writer | None:
    if writer is not None:
        return writer
    try:
        from langgraph.config import get_stream_writer

        return get_stream_writer()
    except Exception:  # not inside a LangGraph run
        return None


def _name(payload: Any) -> str | None:
    """The event name: the payload's ``type`` (``__...__`` types are stream plumbing, writer only)."""
    name = payload.get("type") if isinstance(payload, Mapping) else None
    return name if isinstance(name, str) and name and not name.startswith("__") else None


def emit_custom_event(payload: Any, writer: Writer | None = None) -> None:
    """Give ``payload`` to the stream writer, then dispatch it as ``on_custom_event`` (from sync code)."""
    target = _writer(writer)
    if target is not None:
        target(payload)
    name = _name(payload)
    if name is None:
        return
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        loop = None
    try:
        if loop is None:
            from langchain_core.callbacks.manager import dispatch_custom_event

            dispatch_custom_event(name, payload)
        else:  # sync code on a running loop: never block it; the task keeps this context (the run's config)
            task = loop.create_task(_adispatch(name, payload))
            _PENDING.add(task)
            task.add_done_callback(_PENDING.discard)
    except Exception:  # no parent run, or a consumer that failed: the writer already has it
        logger.debug("custom event %s not dispatched", name, exc_info=True)


async def aemit_custom_event(payload: Any, writer: Writer | None = None) -> None:
    """Async twin of :func:`emit_custom_event` (await it from async graph code)."""
    target = _writer(writer)
    if target is not None:
        target(payload)
    name = _name(payload)
    if name is not None:
        await _adispatch(name, payload)


async def _adispatch(name: str, payload: Any) -> None:
    try:
        from langchain_core.callbacks.manager import adispatch_custom_event

        await adispatch_custom_event(name, payload)
    except Exception:
        logger.debug("custom event %s not dispatched", name, exc_info=True)
