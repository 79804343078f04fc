"""``RunManager``: admission, execution, cancellation and recovery of runs.

Statuses: ``pending`` → ``running`` → ``success`` | ``error`` | ``timeout`` | ``interrupted``.
A run is admitted by inserting its row ``pending`` (its thread ``running``): the partial unique
index on ``runs`` lets at most one active run per thread win, across processes. Its task moves it
to ``running`` when it starts (:meth:`RunStore.try_start`, as the reference's ``try_start``); a run
cancelled before that ends ``interrupted`` without ever showing ``running``. Multitask
strategies: ``reject`` (default; a busy thread raises
:class:`~deerflow_nb.errors.ThreadBusyError`), ``interrupt`` (cancel the active run
first, also one that another process executes: through the database, see :meth:`RunManager.cancel`) and
``rollback`` (cancel it and restore the state from before it started) and ``enqueue`` (wait in the
thread's queue: see :meth:`RunManager.enqueue`).
Events go to the :class:`~deerflow_nb.runtime.stream_bridge.StreamBridge`; the END
marker is published after the terminal status is stored.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
import uuid
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from deerflow_nb.errors import ThreadBusyError, UsageError
from deerflow_nb.persistence.events import JournalEntry
from deerflow_nb.persistence.runs import QUEUED, RunInfo, RunStore
from deerflow_nb.persistence.threads import ThreadStore
from deerflow_nb.runtime.events import StreamEvent
from deerflow_nb.runtime.progress import ProgressTicker
from deerflow_nb.runtime.stream_bridge import StreamBridge
from deerflow_nb.utils.owner import owner_alive, process_owner_id

__all__ = ["MULTITASK_STRATEGIES", "TERMINAL_STATUSES", "CancelOutcome", "RunManager", "RunRecord", "process_owner"]

logger = logging.getLogger(__name__)

TERMINAL_STATUSES = frozenset({"success", "error", "timeout", "interrupted"})
MULTITASK_STRATEGIES = ("reject", "interrupt", "rollback", "enqueue")


def process_owner() -> str:
    """The owner id of this process (``{pid}-{start}-{host}``, see :mod:`deerflow_nb.utils.owner`)."""
    return process_owner_id()


class CancelOutcome(StrEnum):
    """What :meth:`RunManager.cancel` did."""

    CANCELLED = "cancelled"  # cancelled here
    NOT_CANCELLABLE = "not_cancellable"  # already finished
    NOT_ACTIVE_LOCALLY = "not_active_locally"  # active, but executed by another process
    REQUESTED = "requested"  # executed by another process: asked it, through the database, to cancel
    TAKEN_OVER = "taken_over"  # its owner's lease had expired: recovered here (``error``, ``orphan_recovered``)
    UNKNOWN = "unknown"  # no such run (for this user)


@dataclass(eq=False)
class RunRecord(RunInfo):
    """A run executing (or recently executed) in this process; lives on its manager's loop."""

    task: asyncio.Task[None] | None = field(default=None, repr=False)
    end_data: dict[str, Any] | None = None
    #: The thread title the run produced (stored with the terminal status).
    title: str | None = None
    rollback_requested: bool = False
    on_rollback: Callable[[RunRecord], Awaitable[None]] | None = field(default=None, repr=False)
    #: Called when the run ends without its body ever starting (cancelled while pending): undoes its preparation.
    on_abandon: Callable[[RunRecord], Awaitable[None]] | None = field(default=None, repr=False)
    body_started: bool = False
    finalized: bool = False
    #: Another process recovered the run after its lease expired: its outcome is no longer ours to store.
    lease_lost: bool = False
    #: Journal entries handed over by the run (see :meth:`defer_journal`), stored with the outcome.
    journal_tail: list[JournalEntry] = field(default_factory=list, repr=False)
    _finished: asyncio.Event = field(default_factory=asyncio.Event, repr=False)
    _texts: dict[str, str] = field(default_factory=dict, repr=False)

    @property
    def done(self) -> bool:
        """Whether the run reached a terminal status."""
        return self.status in TERMINAL_STATUSES

    def observe(self, event: StreamEvent) -> None:
        """Track what the client needs after the stream is gone: final text, usage, errors."""
        if event.namespace is not None:  # a subagent's frame: not the run's text
            return
        data = event.data
        if event.type == "messages-tuple":
            if data.get("type") == "ai" and data.get("content"):
                message_id = data.get("id") or ""
                # re-inserting keeps dict order = order in which messages last received text
                text = self._texts.pop(message_id, "") + data["content"]
                self._texts[message_id] = text
        elif event.type == "end":
            self.end_data = data
            self.usage = data.get("usage")
            self.stop_reason = data.get("stop_reason") or self.stop_reason
        elif event.type == "error":
            self.error = data
            if isinstance(data, dict):
                self.stop_reason = data.get("stop_reason") or self.stop_reason

    @property
    def final_text(self) -> str:
        """Text of the last AI message that carried text."""
        return next(reversed(self._texts.values()), "")

    @property
    def streamed_texts(self) -> dict[str, str]:
        """AI text streamed so far, per message id (in order of their last delta)."""
        return dict(self._texts)

    def defer_journal(self, entries: list[JournalEntry]) -> None:
        """Keep the run's last journal entries for the transaction that stores its outcome."""
        self.journal_tail.extend(entries)

    async def wait(self) -> RunRecord:
        """Wait until the run is finalized (status stored, END published)."""
        await self._finished.wait()
        return self


RunBody = Callable[[RunRecord], AsyncIterator[StreamEvent]]


class RunManager:
    """Starts runs as tasks on the current loop and keeps them consistent with the store."""

    def __init__(self, bridge: StreamBridge, *, runs: RunStore | None = None, threads: ThreadStore | None = None,
                 max_finished: int = 256, lease_seconds: float = 30, lease_renew_seconds: float = 10,
                 recover_interval_seconds: float = 30,
                 on_recovered: Callable[[list[str]], Awaitable[None]] | None = None,
                 on_thread_free: Callable[[str], Coroutine[Any, Any, None]] | None = None) -> None:
        if lease_renew_seconds >= lease_seconds:
            raise UsageError(f"lease_renew_seconds ({lease_renew_seconds}) must be less than "
                             f"lease_seconds ({lease_seconds})")
        self.bridge = bridge
        self.owner = f"{process_owner()}:{uuid.uuid4().hex[:8]}"  # unique per manager of one process
        #: Leases: how long one lasts, how often this process renews its own and scans for expired ones.
        self.lease_seconds = lease_seconds
        self.lease_renew_seconds = lease_renew_seconds
        self.recover_interval_seconds = recover_interval_seconds
        #: Called with the run ids each periodic recovery pass recovered (their threads get their marker).
        self.on_recovered = on_recovered
        #: Called (as a task) when a thread's active run ended here or was recovered: starts its queue.
        self.on_thread_free = on_thread_free
        self._dispatching: set[asyncio.Task[None]] = set()
        self._maintenance: asyncio.Task[None] | None = None
        self._recovering: asyncio.Task[None] | None = None
        #: run id -> thread id of the runs :meth:`recover_orphans` recovered.
        self.recovered: dict[str, str] = {}
        self._runs = runs
        self._threads = threads
        self._records: OrderedDict[str, RunRecord] = OrderedDict()
        self._active: dict[str, RunRecord] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._max_finished = max_finished
        #: How often a run executed by another process is re-read while this one waits on it.
        self.poll_seconds = 0.5
        #: Cancellations other processes asked for, in progress here (run id -> task).
        self._requested: dict[str, asyncio.Task[None]] = {}

    def attach(self, runs: RunStore | None, threads: ThreadStore | None) -> None:
        """Connect the durable stores (once persistence is open)."""
        self._runs, self._threads = runs, threads

    def active_run(self, thread_id: str) -> RunRecord | None:
        """The thread's active run in this process, if any."""
        return self._active.get(thread_id)

    def active_runs(self) -> list[RunRecord]:
        """Every active run of this process."""
        return list(self._active.values())

    # -- admission -------------------------------------------------------------------
    async def create(self, *, thread_id: str, user_id: str, body: RunBody, run_id: str | None = None,
                     assistant_id: str = "lead_agent", multitask_strategy: str = "reject",
                     metadata: dict[str, Any] | None = None, kwargs: dict[str, Any] | None = None,
                     on_rollback: Callable[[RunRecord], Awaitable[None]] | None = None,
                     timeout: float | None = None, admitted: bool = False,
                     on_abandon: Callable[[RunRecord], Awaitable[None]] | None = None) -> RunRecord:
        """Admit and start a run; returns its record at once (status ``pending``).

        ``admitted``: the run's row already holds the thread (a queued run :meth:`promote` admitted).
        """
        if multitask_strategy not in MULTITASK_STRATEGIES:
            raise UsageError(f"multitask_strategy {multitask_strategy!r} is not supported; "
                             f"use one of {', '.join(MULTITASK_STRATEGIES)}")
        lock = self._locks.setdefault(thread_id, asyncio.Lock())
        async with lock:
            busy = self._active.get(thread_id)
            if busy is not None and not busy.done:
                if multitask_strategy in {"reject", "enqueue"}:
                    raise ThreadBusyError(f"thread {thread_id!r} already has an active run ({busy.run_id}); "
                                          "wait for it, cancel it, or use multitask_strategy='interrupt'")
                await self._cancel(busy, "rollback" if multitask_strategy == "rollback" else "interrupt")
            record = RunRecord(run_id=run_id or str(uuid.uuid4()), thread_id=thread_id, user_id=user_id,
                               assistant_id=assistant_id, multitask_strategy=multitask_strategy,
                               metadata=dict(metadata or {}), kwargs=dict(kwargs or {}), on_rollback=on_rollback)
            placeholder = self._records.get(record.run_id)
            if admitted and placeholder is not None and not placeholder.done:  # its waiters get the run
                placeholder.kwargs, placeholder.on_rollback = dict(kwargs or placeholder.kwargs), on_rollback
                record = placeholder
            record.on_abandon = on_abandon
            record.owner = self.owner
            if self._runs is not None and not admitted:
                # stored pending (its thread running) in the admitting transaction; the unique
                # index decides races between processes
                try:
                    await self._runs.create(record, status="pending", thread_status="running",
                                            lease_seconds=self.lease_seconds)
                except ThreadBusyError:  # the thread's active run is another process's
                    if await self._recover_dead_holder(thread_id, user_id):
                        pass  # its process died on this host: recovered, the thread is free
                    elif multitask_strategy in {"reject", "enqueue"}:
                        raise
                    else:
                        await self._stop_elsewhere(thread_id, user_id, multitask_strategy)
                    await self._runs.create(record, status="pending", thread_status="running",
                                            lease_seconds=self.lease_seconds)
                if self._threads is not None:
                    self._threads.mark_saved(thread_id)  # a new thread's row came with the admission
            self._active[thread_id] = record
            self._remember(record)
            self.bridge.open(record.run_id)
            record.task = asyncio.get_running_loop().create_task(self._drive(record, body, timeout),
                                                                 name=f"deerflow-run-{record.run_id}")
        return record

    async def _stop_elsewhere(self, thread_id: str, user_id: str, strategy: str) -> None:
        """Cancel the thread's active run that another process executes, and wait until it has ended.

        The owner carries the request out at its next lease renewal; an owner that is gone has
        its run taken over once the lease expires. Raises :class:`ThreadBusyError` when the run
        has not ended within two lease periods.
        """
        assert self._runs is not None
        action = "rollback" if strategy == "rollback" else "interrupt"
        active = await self._runs.active_on_thread(thread_id, user_id)  # not its queue: that waits its turn
        budget = 2 * self.lease_seconds + self.lease_renew_seconds
        deadline = time.monotonic() + budget
        for info in active:
            while True:
                outcome = await self.cancel(info.run_id, action=action, user_id=user_id)
                if outcome in (CancelOutcome.UNKNOWN, CancelOutcome.NOT_CANCELLABLE, CancelOutcome.TAKEN_OVER):
                    break  # gone, ended meanwhile, or recovered from a dead owner: nothing left to wait for
                left = deadline - time.monotonic()
                if left <= 0:
                    raise ThreadBusyError(f"thread {thread_id!r}: its active run {info.run_id} on another server "
                                          f"did not stop within {budget:g} s")
                # requested: the owner stops it at its next renewal (re-asked after a renewal period,
                # which also takes the run over if its owner died meanwhile)
                with contextlib.suppress(TimeoutError):
                    done = await asyncio.wait_for(self.wait_stored(info.run_id, user_id),
                                                  min(left, self.lease_renew_seconds + self.poll_seconds))
                    if done is None or done.status in TERMINAL_STATUSES:
                        break
        logger.info("thread %s: stopped its active run on another server (%s) for a new run", thread_id, action)

    async def enqueue(self, *, thread_id: str, user_id: str, run_id: str, assistant_id: str = "lead_agent",
                      metadata: dict[str, Any] | None = None, kwargs: dict[str, Any] | None = None) -> RunRecord:
        """Store a run in its thread's queue (``multitask_strategy="enqueue"`` on a busy thread).

        The row (``queued``, outside the one-active-run index) holds what the run needs
        (``kwargs``), so any process on the database can start it once the thread is free: the
        process whose run ends, a process recovering a dead one's run, or any process's periodic
        pass (after a restart too). The record handed back is ``pending``; in this process it is
        the record the run executes with, so waiting on it waits for the run.
        """
        if self._runs is None:
            raise UsageError("multitask_strategy='enqueue' needs persistence (runs are queued in the database)")
        record = RunRecord(run_id=run_id, thread_id=thread_id, user_id=user_id, assistant_id=assistant_id,
                           multitask_strategy="enqueue", metadata=dict(metadata or {}), kwargs=dict(kwargs or {}))
        await self._runs.create(record, status=QUEUED)
        self._remember(record)
        self.bridge.open(record.run_id)
        self.notify_thread_free(thread_id)  # the thread may have become free meanwhile
        return record

    async def promote(self, thread_id: str) -> RunInfo | None:
        """Admit the thread's oldest queued run for this process, if the thread is free."""
        if self._runs is None or (thread_id in self._active and not self._active[thread_id].done):
            return None
        return await self._runs.promote(thread_id, self.owner, self.lease_seconds)

    def notify_thread_free(self, thread_id: str) -> None:
        """Let the queue of a thread whose run ended start its next run (a task: never blocks the caller)."""
        if self.on_thread_free is not None:
            self._spawn(self.on_thread_free(thread_id), f"deerflow-dispatch-{thread_id}")

    def schedule_dispatch(self) -> None:
        """Run :meth:`dispatch_queued` soon, as a task (at startup: queued runs that outlived a restart)."""
        self._spawn(self.dispatch_queued(), "deerflow-dispatch")

    def _spawn(self, work: Coroutine[Any, Any, None], name: str) -> None:
        """Run ``work`` as a task this manager keeps (and cancels at shutdown)."""
        try:
            task = asyncio.get_running_loop().create_task(work, name=name)
        except RuntimeError:  # no loop (shut down)
            work.close()
            return
        self._dispatching.add(task)
        task.add_done_callback(self._dispatching.discard)

    async def dispatch_queued(self) -> None:
        """Start the queues of free threads (all users) and settle this process's queued records run elsewhere."""
        if self._runs is None:
            return
        for thread_id in await self._runs.queued_threads():
            if thread_id not in self._active and self.on_thread_free is not None:
                await self.on_thread_free(thread_id)
        for record in [r for r in self._records.values() if r.task is None and not r.done]:
            info = await self._runs.get(record.run_id, None)
            if info is None or info.status in TERMINAL_STATUSES:  # run (or deleted) by another process
                self._settle(record, info)

    def _settle(self, record: RunRecord, info: RunInfo | None) -> None:
        """End a queued record this process will not execute with the outcome stored for it."""
        status = info.status if info is not None else "error"
        record.error = info.error if info is not None else {"message": "the queued run was deleted"}
        record.stop_reason = info.stop_reason if info is not None else "deleted"
        record.status, record.finalized = status, True
        self.bridge.publish(record.run_id, StreamEvent("end", {"run_id": record.run_id, "status": status,
                                                               "stop_reason": record.stop_reason,
                                                               "usage": None, "pending_input": None}))
        self.bridge.publish_end(record.run_id)
        record._finished.set()

    async def fail_admitted(self, info: RunInfo, exc: BaseException) -> None:
        """A promoted queued run that could not start (its model is gone, ...): stored ``error``, queue goes on."""
        error = {"message": str(exc) or type(exc).__name__, "type": type(exc).__name__, "run_id": info.run_id,
                 "stop_reason": "run_error", "status": "error"}
        if self._runs is not None:
            await self._runs.set_status(info.run_id, "error", error=error, stop_reason="run_error",
                                        thread=(info.thread_id, "error"))
        record = self._records.get(info.run_id)
        if record is not None and not record.done:
            self._settle(record, RunInfo(info.run_id, info.thread_id, info.user_id, status="error",
                                               error=error, stop_reason="run_error"))

    async def _recover_dead_holder(self, thread_id: str, user_id: str) -> bool:
        """Recover the thread's active runs whose process provably died (same host); whether any was."""
        assert self._runs is not None
        recovered = [info.run_id for info in await self._runs.active_on_thread(thread_id, user_id)
                     if info.run_id not in self._records and _holder_dead(info) and await self._take_over(info)]
        if recovered and self.on_recovered is not None:
            await self.on_recovered(recovered)
        return bool(recovered)

    def _remember(self, record: RunRecord) -> None:
        self._records[record.run_id] = record
        while len(self._records) > self._max_finished:
            oldest = next(iter(self._records.values()))
            if not oldest.done:
                break
            self._records.popitem(last=False)

    # -- execution -------------------------------------------------------------------
    async def _drive(self, record: RunRecord, body: RunBody, timeout: float | None) -> None:
        status = "error"
        ticker = ProgressTicker(lambda event: self.bridge.publish(record.run_id, event))
        try:
            if self._runs is not None and not await self._runs.try_start(record.run_id):
                # its row left ``pending`` meanwhile (recovered by another process, or deleted with
                # its thread): the outcome is no longer ours to store
                record.lease_lost = True
                raise asyncio.CancelledError
            record.status = "running"
            ticker.start()
            async with asyncio.timeout(timeout):
                record.body_started = True  # from its first step on, the body's own cleanup runs
                async for event in body(record):
                    if not ticker.observe(event):
                        continue  # a model's progress report: published as progress by the ticker
                    record.observe(event)
                    self.bridge.publish(record.run_id, event)
            status = "error" if record.error else "success"
        except asyncio.CancelledError:
            status = "interrupted"
            record.stop_reason = "cancelled"
            self._publish_error(record, "run cancelled", "Cancelled", status)
        except TimeoutError:
            status = "timeout"
            record.stop_reason = "timeout"
            self._publish_error(record, f"run exceeded its {timeout} s timeout", "Timeout", status)
        except Exception as exc:  # the body failed outside the graph
            logger.warning("run %s failed: %s: %s", record.run_id, type(exc).__name__, exc)
            logger.debug("run %s failure", record.run_id, exc_info=exc)
            record.stop_reason = getattr(exc, "stop_reason", None) or "run_error"
            self._publish_error(record, str(exc) or type(exc).__name__, type(exc).__name__, status)
        finally:
            ticker.stop()
            await self._finalize(record, status)

    def _publish_error(self, record: RunRecord, message: str, kind: str, status: str) -> None:
        """Publish ``error`` and then ``end`` (``status``) for a run its body could not finish."""
        record.error = {"message": message, "type": kind, "stop_reason": record.stop_reason, "status": status,
                        "run_id": record.run_id}
        self.bridge.publish(record.run_id, StreamEvent("error", record.error))
        self.bridge.publish(record.run_id, StreamEvent("end", {"run_id": record.run_id, "status": status,
                                                               "stop_reason": record.stop_reason,
                                                               "usage": record.usage, "pending_input": None}))

    async def _finalize(self, record: RunRecord, status: str) -> None:
        if record.finalized:
            return
        record.finalized = True
        if not record.body_started and record.on_abandon is not None:
            try:
                await record.on_abandon(record)
            except Exception as exc:
                logger.warning("cleanup of run %s (ended before it started) failed: %s", record.run_id, exc)
        try:
            if record.rollback_requested and record.on_rollback is not None:
                try:
                    await record.on_rollback(record)
                except Exception as exc:  # fail closed: keep the state, report it
                    logger.warning("rollback of run %s failed: %s", record.run_id, exc)
            record.status = status
            record.updated_at = time.time()
            if self._runs is not None and record.lease_lost:
                logger.warning("run %s lost its lease (another process recovered it); its outcome %s is not "
                               "stored", record.run_id, status)
            elif self._runs is not None:
                thread_status = "error" if status in {"error", "timeout"} else "idle"
                tail, record.journal_tail = record.journal_tail, []
                await self._runs.set_status(record.run_id, status, error=record.error,
                                            stop_reason=record.stop_reason, usage=record.usage,
                                            thread=(record.thread_id, thread_status), title=record.title,
                                            events=tail)
        except Exception as exc:  # storage failures must not keep the thread locked
            logger.warning("could not store the outcome of run %s: %s", record.run_id, exc)
        finally:
            record.status = status
            if self._active.get(record.thread_id) is record:
                del self._active[record.thread_id]
            self.bridge.publish_end(record.run_id)
            record._finished.set()
            if not record.lease_lost:
                self.notify_thread_free(record.thread_id)

    # -- queries ---------------------------------------------------------------------
    async def get(self, run_id: str, user_id: str | None = None) -> RunInfo | None:
        """The run (a live record, or the stored row); another user's run is ``None``."""
        record = self._records.get(run_id)
        if record is not None:
            return record if user_id is None or record.user_id == user_id else None
        if self._runs is not None:
            return await self._runs.get(run_id, user_id)
        return None

    def forget(self, run_id: str) -> None:
        """Drop a finished run from this process's memory (after its rows were deleted)."""
        record = self._records.get(run_id)
        if record is not None and record.done:
            del self._records[run_id]

    def local(self, run_id: str) -> RunRecord | None:
        """The in-process record of a run, if this process executed it recently."""
        return self._records.get(run_id)

    async def list_by_thread(self, thread_id: str, user_id: str, *, limit: int = 10, offset: int = 0,
                             status: str | None = None) -> list[RunInfo]:
        """The thread's runs, newest first; live records win over stored rows."""
        stored: list[RunInfo] = []
        if self._runs is not None:
            stored = await self._runs.list_by_thread(thread_id, user_id, limit=limit + offset + 1, status=status)
        merged: dict[str, RunInfo] = {r.run_id: r for r in stored}
        for record in self._records.values():
            if record.thread_id == thread_id and record.user_id == user_id and (not status or record.status == status):
                merged[record.run_id] = record
        ordered = sorted(merged.values(), key=lambda r: r.created_at, reverse=True)
        return ordered[offset:offset + limit]

    # -- cancellation ----------------------------------------------------------------
    async def cancel(self, run_id: str, *, action: str = "interrupt", user_id: str | None = None) -> CancelOutcome:
        """Cancel a run; ``action="rollback"`` also restores the state from before it."""
        if action not in {"interrupt", "rollback"}:
            raise UsageError(f"cancel action must be 'interrupt' or 'rollback', got {action!r}")
        record = self._records.get(run_id)
        if record is not None and record.task is None and not record.done and (user_id in (None, record.user_id)):
            record = None  # queued: cancelled through its row below
        if record is None or (user_id is not None and record.user_id != user_id):
            stored = await self._runs.get(run_id, user_id) if self._runs is not None else None
            if stored is None:
                return CancelOutcome.UNKNOWN
            if stored.status in TERMINAL_STATUSES:
                return CancelOutcome.NOT_CANCELLABLE
            if stored.status == QUEUED and self._runs is not None:
                if not await self._runs.cancel_queued(run_id):
                    return await self.cancel(run_id, action=action, user_id=user_id)  # promoted meanwhile
                placeholder = self._records.get(run_id)
                if placeholder is not None and not placeholder.done:
                    self._settle(placeholder, await self._runs.get(run_id, None))
                return CancelOutcome.CANCELLED
            if await self._take_over(stored):  # its owner is gone: recovered now, not at the next scan
                if self.on_recovered is not None:
                    await self.on_recovered([run_id])
                return CancelOutcome.TAKEN_OVER
            # executed by another process: its lease renewal reads the request and cancels the run
            if self._runs is not None and await self._runs.request_cancel(run_id, action):
                return CancelOutcome.REQUESTED
            return CancelOutcome.NOT_CANCELLABLE  # it finished meanwhile
        if record.done or record.finalized:
            return CancelOutcome.NOT_CANCELLABLE
        await self._cancel(record, action)
        return CancelOutcome.CANCELLED

    async def _cancel(self, record: RunRecord, action: str) -> None:
        record.rollback_requested = action == "rollback"
        task = record.task
        if task is not None and not task.done():
            task.cancel()
            await asyncio.wait([task])
        if not record.finalized:  # cancelled before its coroutine ever ran
            record.stop_reason = "cancelled"
            self._publish_error(record, "run cancelled", "Cancelled", "interrupted")
            await self._finalize(record, "interrupted")

    async def wait_stored(self, run_id: str, user_id: str | None = None) -> RunInfo | None:
        """Wait until the run is terminal, also when another process executes it (its row is polled).

        Returns the finished run (``None`` if it does not exist or belongs to another user).
        A dead owner's run ends when its lease expires and a process recovers it.
        """
        while True:
            record = self._records.get(run_id)
            if record is not None:
                return await record.wait() if user_id is None or record.user_id == user_id else None
            info = await self._runs.get(run_id, user_id) if self._runs is not None else None
            if info is None or info.status in TERMINAL_STATUSES:
                return info
            await asyncio.sleep(self.poll_seconds)

    # -- recovery and shutdown ---------------------------------------------------------
    async def recover_orphans(self) -> list[str]:
        """Mark runs whose holder is gone as ``error`` (``stop_reason=orphan_recovered``).

        The process executing a run renews its lease every ``lease_renew_seconds``; a lease
        that ran out (on the database's clock) means that process is gone, whichever host it
        ran on. A run held by a process of this host that provably died (its pid is gone, or
        belongs to a process started later) is recovered at once, lease or not: a restarted
        server frees its threads at start. A run of a live process, or of another host with a
        fresh lease, is never touched, and neither is a run of this manager. The claim re-checks
        the lease (or the holder) atomically, so a renewal racing the scan wins.
        """
        if self._runs is None:
            return []
        candidates = {info.run_id: info for info in await self._runs.expired()}
        candidates.update((info.run_id, info) for info in await self._runs.active() if _holder_dead(info))
        recovered: list[str] = []
        for info in candidates.values():
            if info.run_id not in self._records and await self._take_over(info):
                recovered.append(info.run_id)
        if recovered:
            logger.warning("recovered %d orphaned run(s): %s", len(recovered), ", ".join(recovered))
        return recovered

    async def _take_over(self, info: RunInfo) -> bool:
        """Recover one run if its holder died or its lease expired (re-checked atomically).

        Its thread is marked ``error``.
        """
        if self._runs is None:
            return False
        dead = _holder_dead(info)
        why = "its process died" if dead else "its lease expired"
        error = {"message": f"the process executing this run stopped ({why}); the run was recovered",
                 "type": "OrphanRecovered", "run_id": info.run_id, "owner": info.owner}
        if not await self._runs.claim_orphan(info.run_id, error=error, dead_owner=info.owner if dead else None):
            return False
        self.recovered[info.run_id] = info.thread_id
        if self._threads is not None:
            await self._threads.update(info.thread_id, status="error")
        return True

    def start_maintenance(self) -> None:
        """Renew this process's leases and recover expired ones periodically (a task on this loop)."""
        if self._runs is None or (self._maintenance is not None and not self._maintenance.done()):
            return
        self._maintenance = asyncio.get_running_loop().create_task(self._maintain(), name="deerflow-run-leases")

    async def renew_leases(self) -> None:
        """Renew the leases of this process's active runs; a run recovered elsewhere is cancelled."""
        if self._runs is None:
            return
        active = [r for r in self._active.values() if not r.finalized]
        if not active:
            return
        renewed = await self._runs.renew([r.run_id for r in active], self.owner, self.lease_seconds)
        requests = await self._runs.cancel_requests(sorted(renewed))
        for record in active:
            action = requests.get(record.run_id)
            if action is not None and record.run_id not in self._requested and not record.finalized:
                logger.info("run %s: cancel (%s) requested by another process", record.run_id, action)
                task = asyncio.get_running_loop().create_task(self._cancel(record, action),
                                                              name=f"deerflow-cancel-{record.run_id}")
                self._requested[record.run_id] = task
                task.add_done_callback(functools.partial(self._forget_request, record.run_id))
            if record.run_id not in renewed and not record.finalized and self._active.get(record.thread_id) is record:
                logger.warning("run %s lost its lease to another process; cancelling it here", record.run_id)
                record.lease_lost = True
                if record.task is not None and not record.task.done():
                    record.task.cancel()

    def _forget_request(self, run_id: str, _task: asyncio.Task[None]) -> None:
        self._requested.pop(run_id, None)

    async def _maintain(self) -> None:
        loop = asyncio.get_running_loop()
        next_recovery = loop.time() + self.recover_interval_seconds
        while True:
            await asyncio.sleep(self.lease_renew_seconds)
            try:
                await self.renew_leases()
            except Exception as exc:  # transient database trouble: retry at the next tick
                logger.warning("could not renew run leases: %s", exc)
            if self.recover_interval_seconds > 0 and loop.time() >= next_recovery:
                next_recovery = loop.time() + self.recover_interval_seconds
                if self._recovering is None or self._recovering.done():  # single flight: renewal never waits
                    self._recovering = loop.create_task(self._recover_periodically(), name="deerflow-recover")

    async def _recover_periodically(self) -> None:
        try:
            recovered = await self.recover_orphans()
            if recovered and self.on_recovered is not None:
                await self.on_recovered(recovered)
            await self.dispatch_queued()
        except Exception as exc:  # the next pass tries again
            logger.warning("orphan recovery failed: %s", exc)

    async def shutdown(self) -> None:
        """Stop lease upkeep and cancel every active run of this process (each is stored as ``interrupted``)."""
        for task in (self._maintenance, self._recovering):
            if task is not None and not task.done():
                task.cancel()
                await asyncio.wait([task])
        self._maintenance = self._recovering = None
        self.on_thread_free = None  # queued runs stay queued, for the next process
        for task in list(self._dispatching):
            task.cancel()
        if self._dispatching:
            await asyncio.wait(list(self._dispatching))
        for record in list(self._active.values()):
            with contextlib.suppress(Exception):
                await self._cancel(record, "interrupt")


def _holder_dead(info: RunInfo) -> bool:
    """Whether the process holding ``info`` provably died (same host; pid gone or reused)."""
    return info.owner is not None and owner_alive(info.owner) is False
