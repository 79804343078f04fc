"""The one run path: execute the lead agent graph and stream :class:`StreamEvent`s.

The embedded client, the Jupyter server extension and scheduled work all call
:func:`execute_run`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Any

from deerflow_nb.context import RunContext
from deerflow_nb.runtime.events import StreamEvent
from deerflow_nb.runtime.streaming import StreamConverter

__all__ = ["STREAM_MODES", "execute_run"]

logger = logging.getLogger(__name__)
STREAM_MODES = ["values", "messages", "custom"]


async def execute_run(
    graph: Any,
    graph_input: Any,
    *,
    context: RunContext,
    config: dict[str, Any],
    durability: str = "async",
    converter: StreamConverter | None = None,
    stream_tokens: bool = True,
) -> AsyncIterator[StreamEvent]:
    """Run ``graph`` on ``graph_input`` and yield events, ending with ``end`` or ``error``.

    With ``stream_tokens=False`` (a blocking ``chat``), LangGraph's ``messages`` mode is
    skipped: each AI message's text then arrives as one delta when its step completes,
    which saves the per-token callback cost nobody would consume.

    Cancellation (``asyncio.CancelledError``) propagates to the caller after the
    graph stops; the checkpoint keeps what was completed.
    """
    converter = converter or StreamConverter()
    try:
        async for mode, chunk in graph.astream(
            graph_input,
            config=config,
            context=context,
            stream_mode=STREAM_MODES if stream_tokens else ["values", "custom"],
            durability=durability,
        ):
            for event in converter.feed(mode, chunk):
                yield event
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        logger.warning("run %s failed: %s", context.run_id, exc, exc_info=True)
        yield StreamEvent("error", {"message": str(exc), "type": type(exc).__name__, "run_id": context.run_id})
        return
    yield StreamEvent(
        "end",
        {
            "run_id": context.run_id,
            "usage": converter.usage(),
            "usage_by_model": context.extra.get("token_usage", {}),
            "stop_reason": context.extra.get("stop_reason"),
            "pending_input": converter.pending_input(),
        },
    )
