"""Long-lived MCP client sessions, one per (user, thread, server) for stdio servers.

Why sessions per thread: a stdio server is a subprocess whose working directory is
fixed when it starts, and the agent must find the files it writes in *that thread's*
workspace. One persistent subprocess per (user, thread, server) gives every thread
its own working directory without paying a process start per tool call. Remote
(SSE/HTTP) servers have no local working directory: one session per server.

The MCP SDK's sessions live inside anyio task groups that must be entered and left
by the same task, so each session is owned by a small holder task that opens it,
signals readiness and waits to be told to close. The pool is loop-affine: use it on
the event loop that runs the agent.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections import OrderedDict
from collections.abc import Callable
from datetime import timedelta
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the mcp package is optional and slow to import: load it on first use
    from mcp import ClientSession
    from mcp.types import CallToolResult

__all__ = ["MAX_SESSIONS", "McpSessionPool", "SessionKey", "open_session"]

logger = logging.getLogger(__name__)

SessionKey = tuple[str, ...]
#: Sessions kept open at once; the least recently used one is closed first.
MAX_SESSIONS = 16
_START_TIMEOUT = 60.0
_CLOSE_TIMEOUT = 5.0


def open_session(connection: dict[str, Any]) -> Any:
    """An async context manager yielding a (not yet initialised) MCP ``ClientSession``."""
    from langchain_mcp_adapters.sessions import create_session

    return create_session(connection)  # type: ignore[arg-type]


class _Holder:
    """Owns one session inside its own task."""

    def __init__(self, connection: dict[str, Any]) -> None:
        self.connection = connection
        self.session: ClientSession | None = None
        self.error: BaseException | None = None
        self.ready = asyncio.Event()
        self.closing = asyncio.Event()
        # An empty context: the long-lived task must not pin the run that happened to start it.
        self.task = asyncio.create_task(self._own(), context=contextvars.Context())

    async def _own(self) -> None:
        try:
            async with open_session(self.connection) as session:
                await session.initialize()
                self.session = session
                self.ready.set()
                await self.closing.wait()
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # anyio wraps failures in exception groups
            self.error = exc
        finally:
            self.session = None
            self.ready.set()

    async def wait_ready(self) -> ClientSession:
        await asyncio.wait_for(self.ready.wait(), _START_TIMEOUT)
        if self.session is None:
            raise RuntimeError(f"MCP server did not start: {self.error!r}") from self.error
        return self.session

    async def close(self) -> None:
        self.closing.set()
        try:
            await asyncio.wait_for(asyncio.shield(self.task), _CLOSE_TIMEOUT)
        except (TimeoutError, asyncio.CancelledError, Exception):
            self.task.cancel()
            await asyncio.gather(self.task, return_exceptions=True)


class McpSessionPool:
    """Opens sessions on demand, reuses them, and closes them (LRU, on reload, on shutdown)."""

    def __init__(self, max_sessions: int = MAX_SESSIONS) -> None:
        self.max_sessions = max_sessions
        self._holders: OrderedDict[SessionKey, _Holder] = OrderedDict()
        self._lock: asyncio.Lock | None = None

    def __len__(self) -> int:
        return len(self._holders)

    async def _get(self, key: SessionKey, connection: Callable[[], dict[str, Any]]) -> ClientSession:
        if self._lock is None:
            self._lock = asyncio.Lock()
        evicted: list[_Holder] = []
        async with self._lock:
            holder = self._holders.get(key)
            if holder is not None and holder.ready.is_set() and holder.session is None:
                del self._holders[key]  # it died; start a new one
                holder = None
            if holder is None:
                holder = _Holder(connection())
                self._holders[key] = holder
                while len(self._holders) > self.max_sessions:
                    evicted.append(self._holders.popitem(last=False)[1])
            self._holders.move_to_end(key)
        for old in evicted:
            await old.close()
        try:
            return await holder.wait_ready()
        except BaseException:
            await self._drop(key, holder)
            raise

    async def _drop(self, key: SessionKey, holder: _Holder) -> None:
        if self._holders.get(key) is holder:
            del self._holders[key]
        await holder.close()

    async def call_tool(self, key: SessionKey, connection: Callable[[], dict[str, Any]], name: str,
                        arguments: dict[str, Any], timeout: float | None = None) -> CallToolResult:
        """Call ``name`` on the session for ``key`` (started with ``connection()`` if needed).

        A session whose server died is replaced once before the error reaches the caller.
        """
        read_timeout = timedelta(seconds=timeout) if timeout else None
        for attempt in (1, 2):
            session = await self._get(key, connection)
            try:
                return await session.call_tool(name, arguments, read_timeout_seconds=read_timeout)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                holder = self._holders.get(key)
                alive = holder is not None and holder.session is not None and not holder.task.done()
                if attempt == 2 or alive:
                    raise
                logger.info("MCP session %s was lost (%s); reconnecting", key, exc)
                if holder is not None:
                    await self._drop(key, holder)
        raise AssertionError("unreachable")

    async def close(self, predicate: Callable[[SessionKey], bool] | None = None) -> None:
        """Close every session, or those whose key matches ``predicate``."""
        keys = [k for k in self._holders if predicate is None or predicate(k)]
        holders = [self._holders.pop(k) for k in keys]
        await asyncio.gather(*(h.close() for h in holders), return_exceptions=True)
