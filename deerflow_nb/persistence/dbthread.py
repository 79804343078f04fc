"""The SQLite database thread: one thread runs a store's database work, in submission order.

App tables (:mod:`.engine`) and LangGraph checkpoints (:mod:`.checkpoint`) share one
:class:`DbWorker`; both import it from here, so neither imports the other.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import functools
import logging
import queue
import sqlite3
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["DbWorker", "sqlite_wal"]

T = TypeVar("T")
logger = logging.getLogger(__name__)


class DbWorker:
    """The one thread that runs a SQLite store's database work, in submission order.

    Everything of one store (app tables and checkpoints) goes through it, so writes
    are serialised in this process and each transaction costs a single hop off the
    event loop; work queued without waiting (:meth:`submit`) costs none. A cancelled
    caller does not cancel work already submitted.

    Group commit: a job submitted with ``deferred=True`` may leave its transaction open;
    the worker *settles* (runs every :meth:`add_settle_hook` hook, e.g. a commit) as soon
    as its queue is empty, and before any other job. A burst of checkpoint writes then
    costs one commit, and no other connection ever waits for a lock this thread holds.
    The thread is a daemon; pending work is finished at interpreter exit.
    """

    def __init__(self, name: str = "deerflow-db") -> None:
        self._queue: queue.SimpleQueue[tuple[Callable[[], Any], concurrent.futures.Future[Any], bool] | None] = (
            queue.SimpleQueue())
        self._settle_hooks: list[Callable[[], None]] = []
        self._unsettled = False
        self._closed = False
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()
        atexit.register(self._finish_at_exit)

    def on_thread(self) -> bool:
        """Whether the caller runs on the database thread."""
        return threading.current_thread() is self._thread

    def add_settle_hook(self, hook: Callable[[], None]) -> None:
        """Run ``hook`` (on the database thread) whenever deferred work must be settled."""
        self._settle_hooks.append(hook)

    def _settle(self) -> None:
        if not self._unsettled:
            return
        self._unsettled = False
        for hook in self._settle_hooks:
            try:
                hook()
            except Exception:  # a hook reports its own failures; the worker must go on
                logger.exception("database settle hook failed")

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                self._settle()
                return
            func, future, deferred = item
            if not deferred:
                self._settle()
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(func())
                except BaseException as exc:
                    future.set_exception(exc)
            if deferred:
                self._unsettled = True
                if self._queue.empty():
                    self._settle()

    def submit(self, func: Callable[..., T], *args: Any, deferred: bool = False, **kwargs: Any
               ) -> concurrent.futures.Future[T]:
        """Queue ``func(*args, **kwargs)`` without waiting (jobs run in submission order)."""
        if self._closed:
            raise RuntimeError("the database worker is shut down")
        future: concurrent.futures.Future[T] = concurrent.futures.Future()
        self._queue.put((functools.partial(func, *args, **kwargs), future, deferred))
        return future

    async def call(self, func: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run ``func(*args, **kwargs)`` on the database thread and await its result."""
        return await asyncio.wrap_future(self.submit(func, *args, **kwargs))

    def shutdown(self) -> None:
        """Stop accepting work; what was submitted still completes."""
        if not self._closed:
            self._closed = True
            self._queue.put(None)
            atexit.unregister(self._finish_at_exit)

    def _finish_at_exit(self) -> None:
        self.shutdown()
        self._thread.join(timeout=30)


def sqlite_wal(conn: sqlite3.Connection, *, attempts: int = 100) -> None:
    """Set WAL mode (readers in other processes work while we write) and a busy timeout.

    Switching a new database to WAL needs an exclusive lock, and SQLite answers "locked"
    at once (no busy wait) when another connection is opening the same file: retry.
    """
    conn.execute("PRAGMA busy_timeout=10000")  # lock contention with others becomes waiting
    for attempt in range(attempts):
        try:
            if str(conn.execute("PRAGMA journal_mode").fetchone()[0]).lower() != "wal":
                conn.execute("PRAGMA journal_mode=WAL")
            break
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or attempt == attempts - 1:
                raise
            time.sleep(0.01)
    conn.execute("PRAGMA synchronous=NORMAL")
