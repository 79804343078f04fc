"""The fallback title of a thread whose first run was cut short before the title middleware ran."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from langchain_core.messages import BaseMessage, HumanMessage

from deerflow_nb.runtime.serialize import message_text

if TYPE_CHECKING:
    from deerflow_nb.config.schema import TitleConfig

__all__ = ["write_fallback_title"]

logger = logging.getLogger(__name__)


async def write_fallback_title(graph: Any, thread_id: str, config: TitleConfig,
                               run_input: BaseMessage | None = None) -> str | None:
    """Give an untitled thread a local title (no model call); the title written, or ``None``.

    The title comes from the first user message in the thread's latest checkpoint, else
    from ``run_input`` (the interrupted run's own message, when the run stopped before its
    input was checkpointed). A thread that has a title, or titles turned off, is left alone.
    ``graph`` is any graph over the thread state with a ``model`` node (see
    :func:`~deerflow_nb.runtime.worker.marker_graph`). Failures are logged, never raised.
    """
    from deerflow_nb.agent.middlewares.title import fallback_title

    if not config.enabled:
        return None
    state: Any = {"configurable": {"thread_id": thread_id}}
    try:
        snapshot = await graph.aget_state(state)
        values = snapshot.values or {}
        if values.get("title"):
            return None
        first = next((message_text(m) for m in values.get("messages", []) if isinstance(m, HumanMessage)
                      and not (m.additional_kwargs or {}).get("deerflow_internal")
                      and not (m.additional_kwargs or {}).get("hide_from_ui")), None)
        if not first and run_input is not None:
            first = message_text(run_input)
        if not first or not first.strip():
            return None
        title = fallback_title(first, config.max_words, config.max_chars)
        await graph.aupdate_state(state, {"title": title}, as_node="model")
        flush = getattr(getattr(graph, "checkpointer", None), "aflush", None)
        if flush is not None:
            await flush()
        return title
    except Exception as exc:  # the outcome is decided; a title is a courtesy
        logger.warning("could not write the fallback title of thread %s: %s", thread_id, exc)
        return None
