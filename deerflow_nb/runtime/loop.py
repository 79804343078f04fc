"""A private event loop in a daemon thread: how sync twins work inside a running kernel.

Sync methods submit coroutines with ``asyncio.run_coroutine_threadsafe(...).result()``;
async methods called from another loop (a Jupyter kernel's) are bridged with
``asyncio.wrap_future``. Loop-affine resources (the SQLite connection, the
checkpointer) live on this loop only. Never ``run_until_complete``, never ``nest_asyncio``.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Iterator
from typing import Any, TypeVar

from deerflow_nb.errors import SyncInAsyncError

__all__ = ["BackgroundLoop"]

T = TypeVar("T")
_DONE = object()
#: Seconds a sync call interrupted by Ctrl-C waits for its work to handle the cancellation.
CANCEL_WAIT = 30.0


class BackgroundLoop:
    """Owns one event loop running forever in a daemon thread (started lazily)."""

    def __init__(self, name: str = "deerflow-loop") -> None:
        self._name = name
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The private loop, started on first use."""
        with self._lock:
            if self._loop is None or self._loop.is_closed():
                loop = asyncio.new_event_loop()
                ready = threading.Event()

                def run() -> None:
                    asyncio.set_event_loop(loop)
                    loop.call_soon(ready.set)
                    loop.run_forever()

                self._thread = threading.Thread(target=run, name=self._name, daemon=True)
                self._thread.start()
                ready.wait()
                self._loop = loop
            return self._loop

    def in_loop(self) -> bool:
        """Whether the caller runs on the private loop's thread."""
        return self._thread is not None and threading.current_thread() is self._thread

    def run(self, coro: Coroutine[Any, Any, T], *, method: str = "this method") -> T:
        """Run ``coro`` on the private loop and block for its result (the sync twin path).

        A ``KeyboardInterrupt`` while blocked (Ctrl-C, "interrupt kernel") cancels ``coro``
        and waits (up to ``CANCEL_WAIT`` seconds) until it has handled the cancellation
        (a chat cancels its run), then propagates.
        """
        if self.in_loop():
            coro.close()
            raise SyncInAsyncError(
                f"{method} was called synchronously from deerflow's own event loop; "
                f"use the async twin (await a{method.rsplit('.', 1)[-1]}(...)) instead"
            )
        tasks: list[asyncio.Task[Any]] = []
        loop = self.loop
        future = asyncio.run_coroutine_threadsafe(_tracked(coro, tasks), loop)
        try:
            return future.result()
        except KeyboardInterrupt:
            if tasks:
                with contextlib.suppress(Exception):
                    asyncio.run_coroutine_threadsafe(_cancel_and_wait(tasks[0]), loop).result(CANCEL_WAIT)
            else:
                future.cancel()
            raise

    async def arun(self, coro: Coroutine[Any, Any, T]) -> T:
        """Await ``coro`` from any loop; it executes on the private loop (cancellation reaches it)."""
        if self.in_loop():
            return await coro
        tasks: list[asyncio.Task[Any]] = []
        future = asyncio.run_coroutine_threadsafe(_tracked(coro, tasks), self.loop)
        try:
            return await asyncio.wrap_future(future)
        except asyncio.CancelledError:
            if tasks:
                with contextlib.suppress(Exception):
                    await asyncio.shield(asyncio.wrap_future(
                        asyncio.run_coroutine_threadsafe(_cancel_and_wait(tasks[0]), self.loop)))
            raise

    def submit(self, coro: Coroutine[Any, Any, T]) -> Any:
        """Schedule ``coro`` on the private loop; returns a ``concurrent.futures.Future``."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def iterate(self, factory: Callable[[], AsyncIterator[T]], *, method: str = "stream") -> Iterator[T]:
        """Drive an async iterator on the private loop and yield its items synchronously."""
        if self.in_loop():
            raise SyncInAsyncError(f"{method} was called synchronously from deerflow's own event loop; "
                                   f"use a{method} instead")
        agen = factory()
        try:
            while True:
                item = asyncio.run_coroutine_threadsafe(_next(agen), self.loop).result()
                if item is _DONE:
                    return
                yield item
        finally:
            asyncio.run_coroutine_threadsafe(_aclose(agen), self.loop).result()

    async def aiterate(self, factory: Callable[[], AsyncIterator[T]]) -> AsyncIterator[T]:
        """Drive an async iterator on the private loop from another loop."""
        if self.in_loop():
            async for item in factory():
                yield item
            return
        agen = factory()
        try:
            while True:
                item = await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(_next(agen), self.loop))
                if item is _DONE:
                    return
                yield item
        finally:
            await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(_aclose(agen), self.loop))

    def stop(self, cleanup: Callable[[], Awaitable[Any]] | None = None, timeout: float = 10) -> None:
        """Run ``cleanup`` on the loop, then stop it and join the thread."""
        with self._lock:
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
        if loop is None or loop.is_closed():
            return
        if cleanup is not None:
            try:
                asyncio.run_coroutine_threadsafe(cleanup(), loop).result(timeout)  # type: ignore[arg-type]
            except Exception:  # shutting down: best effort
                pass
        try:  # what cleanup left (a debounced memory update past its flush bound) is dropped, quietly
            asyncio.run_coroutine_threadsafe(_cancel_pending(), loop).result(timeout)
        except Exception:
            pass
        loop.call_soon_threadsafe(loop.stop)
        if thread is not None:
            thread.join(timeout)
        if not loop.is_running():
            loop.close()


async def _tracked(coro: Coroutine[Any, Any, T], tasks: list[asyncio.Task[Any]]) -> T:
    """Await ``coro``, leaving the running task in ``tasks`` (so another thread can cancel it)."""
    task = asyncio.current_task()
    if task is not None:
        tasks.append(task)
    return await coro


async def _cancel_pending() -> None:
    """Cancel every other task on this loop and let each finish (no "Task was destroyed" at exit)."""
    others = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
    for task in others:
        task.cancel()
    if others:
        await asyncio.wait(others, timeout=5)


async def _cancel_and_wait(task: asyncio.Task[Any]) -> None:
    task.cancel()
    await asyncio.wait([task])


async def _next(agen: AsyncIterator[Any]) -> Any:
    try:
        return await agen.__anext__()
    except StopAsyncIteration:
        return _DONE


async def _aclose(agen: Any) -> None:
    close = getattr(agen, "aclose", None)
    if close is not None:
        await close()
