"""Refuse edits of existing files the agent has not read in their current version.

``read_file`` stamps ``deerflow_read_mark = {"path", "sha256"}`` on its result; a
``write_file`` over an existing file (overwrite or append) or a ``str_replace`` is
refused unless the newest mark for that path matches the file's current hash.
Marks live on messages, so a summarization that drops the read drops the mark.
"""

from __future__ import annotations

import asyncio
import posixpath
import threading
from collections.abc import Awaitable, Callable
from typing import Any

from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import ToolMessage

from deerflow_nb.agent.middlewares._base import context_of, tool_error
from deerflow_nb.utils.memo import PrefixMap

__all__ = ["GATED_TOOLS", "ReadBeforeWriteMiddleware", "latest_read_mark"]

GATED_TOOLS = frozenset({"write_file", "str_replace"})


def _norm(path: str) -> str:
    return posixpath.normpath(path) if path else path


def _read_mark(message: Any) -> tuple[str, str | None] | None:
    """``(normalised path, sha256)`` of a ``read_file`` result's mark, else ``None``."""
    if isinstance(message, ToolMessage):
        mark = message.additional_kwargs.get("deerflow_read_mark")
        if isinstance(mark, dict):
            return _norm(str(mark.get("path", ""))), mark.get("sha256")
    return None


def _newest(marks: list[tuple[str, str | None] | None], path: str) -> str | None:
    target = _norm(path)
    for mark_path, sha in filter(None, reversed(marks)):  # unmarked messages skipped at C speed
        if mark_path == target:
            return sha
    return None


def latest_read_mark(messages: list[Any], path: str) -> str | None:
    """The sha256 of the newest read of ``path`` in ``messages``, if any."""
    return _newest(list(map(_read_mark, messages)), path)


class ReadBeforeWriteMiddleware(AgentMiddleware):
    """The write gate; check and write are serialized per (thread, path)."""

    def __init__(self) -> None:
        super().__init__()
        self._locks: dict[tuple[str, str], threading.Lock] = {}
        self._alocks: dict[tuple[str, str], asyncio.Lock] = {}
        self._guard = threading.Lock()
        # each message's read mark, looked at once per message object (a long thread's history
        # comes back as the same objects on every write)
        self._marks: PrefixMap[Any, tuple[str, str | None] | None] = PrefixMap(_read_mark)

    def _key(self, request: Any) -> tuple[str, str]:
        return (context_of(request).thread_id or "", _norm(str(request.tool_call.get("args", {}).get("path", ""))))

    def _verdict(self, request: Any) -> ToolMessage | None:
        from deerflow_nb.tools import file_sha256, get_sandbox

        call = request.tool_call
        path = str((call.get("args") or {}).get("path", ""))
        if not path:
            return None
        try:
            current = file_sha256(get_sandbox(request.runtime), path)
        except Exception:  # an uninspectable target fails open; the tool reports the real error
            return None
        if current is None:
            if call["name"] == "str_replace":
                return None  # the tool itself reports the missing file
            return None  # creating a new file needs no read
        mark = _newest(self._marks(list(request.state.get("messages", []))), path)
        if mark == current:
            return None
        why = "has not been read" if mark is None else "changed since it was last read"
        return tool_error(
            request,
            f"Error: {path} {why}. Call read_file on it first, then retry the edit.",
            error_type="stale_read",
            recoverable_by_model=True,
            recommended_next_action="read_file",
        )

    def wrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        """Gate write tools; everything else passes through."""
        if request.tool_call["name"] not in GATED_TOOLS:
            return handler(request)
        key = self._key(request)
        with self._guard:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            return self._verdict(request) or handler(request)

    async def awrap_tool_call(self, request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        """Async twin of :meth:`wrap_tool_call`.

        The hash is computed off the loop: for DeerFlow's own tools, as a precondition inside
        the tool's worker call (no extra hop, and no gap between check and write); for any
        other tool of a gated name, in a thread of its own first.
        """
        from deerflow_nb.tools.common import clear_precondition, honours_preconditions, set_precondition

        if request.tool_call["name"] not in GATED_TOOLS:
            return await handler(request)
        key = self._key(request)
        lock = self._alocks.setdefault(key, asyncio.Lock())
        async with lock:
            call_id = request.tool_call.get("id")
            context = context_of(request)
            if call_id and honours_preconditions(getattr(request, "tool", None)) and hasattr(context, "extra"):
                set_precondition(context, call_id, lambda: self._verdict(request))
                try:
                    return await handler(request)
                finally:
                    clear_precondition(context, call_id)
            verdict = await asyncio.to_thread(self._verdict, request)
            return verdict or await handler(request)
