"""``Thread``: one conversation, its state, runs, human-input requests, files and usage."""

from __future__ import annotations

import asyncio
import hashlib
import os
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langchain_core.messages import BaseMessage, HumanMessage

from deerflow_nb.agent.human_input import (
    MAX_HEADLESS_ROUNDS,
    Responses,
    build_response_message,
    headless_answer,
)
from deerflow_nb.agent.state import with_state_defaults
from deerflow_nb.client.data import OUTPUTS_VIRTUAL
from deerflow_nb.client.run import Run
from deerflow_nb.errors import HumanInputRequired, NotFoundError, UsageError
from deerflow_nb.runtime.events import StreamEvent
from deerflow_nb.runtime.streaming import pending_input_of

if TYPE_CHECKING:
    from deerflow_nb.client.facade import DeerFlow
    from deerflow_nb.uploads import UploadSource
    from deerflow_nb.widgets import ChatWidget, WorkspaceDiff

__all__ = ["MAX_HEADLESS_ROUNDS", "Responses", "Thread", "build_response_message", "headless_answer"]


class Thread:
    """A conversation thread. Sync methods work inside a running kernel; ``a*`` twins are awaitable.

    The same class in both modes: embedded (``DeerFlow()``) and server (``DeerFlow.connect()``).
    """

    def __init__(self, client: DeerFlow, thread_id: str) -> None:
        self.client = client
        self.id = thread_id
        self._backend = client.backend
        self._loop = client.backend.loop
        self._data_digests: dict[str, str] = {}  # upload name -> digest of what this object wrote there

    def __repr__(self) -> str:
        return f"<Thread {self.id}>"

    # -- runs ----------------------------------------------------------------------------
    async def _astart(self, message: str | HumanMessage, options: Mapping[str, Any],
                      secrets: Mapping[str, str] | None, *, stream_tokens: bool = True,
                      data: Mapping[str, Any] | None = None, checkpoint_id: str | None = None) -> Run:
        if checkpoint_id is not None and (not isinstance(checkpoint_id, str) or not checkpoint_id):
            raise UsageError(f"checkpoint_id must be a non-empty string, got {checkpoint_id!r}")
        if data:
            message = await self._attach_data(message, data)
        run_id = await self._backend.start_run(self.id, message, options, secrets, stream_tokens=stream_tokens,
                                               checkpoint_id=checkpoint_id)
        return Run(self._backend, self.id, run_id)

    async def _attach_data(self, message: str | HumanMessage, data: Mapping[str, Any]) -> str | HumanMessage:
        """Upload ``data``'s objects (each once per content digest) and put their description before the message."""
        from deerflow_nb.client.data import data_note, encode_data

        text = message.content if isinstance(message, HumanMessage) else message
        if not isinstance(text, str) or not text.strip():
            raise UsageError("a message is required with data=")
        files = await asyncio.to_thread(encode_data, data)
        pending = [f for f in files if self._data_digests.get(f.filename) != f.digest]
        if pending:
            existing = {u["filename"]: u["size"] for u in (await self._backend.list_uploads(self.id))["files"]}
            for item in list(pending):
                if existing.get(item.filename) == len(item.content):
                    try:
                        stored, _ = await self._backend.artifact(self.id, item.path)
                    except NotFoundError:
                        continue
                    if hashlib.sha256(stored).hexdigest() == item.digest:
                        pending.remove(item)
                        self._data_digests[item.filename] = item.digest
        if pending:
            await self._backend.upload(self.id, [(f.filename, f.content) for f in pending])
            self._data_digests.update({f.filename: f.digest for f in pending})
        annotated = f"{data_note(files)}\n\n{text}"
        if isinstance(message, HumanMessage):
            return message.model_copy(update={"content": annotated})
        return annotated

    def start(self, message: str, *, secrets: Mapping[str, str] | None = None,
              data: Mapping[str, Any] | None = None, checkpoint_id: str | None = None, **options: Any) -> Run:
        """Start a run in the background and return its :class:`Run` at once.

        ``checkpoint_id`` (one of :meth:`history`'s) runs from that checkpoint instead of the newest:
        the conversation goes on from there as a new branch, which becomes the thread's head; the
        old continuation stays readable (:meth:`get_state` with its checkpoint id).

        ``data={"sales": df, ...}`` attaches kernel objects: each is written to the thread's uploads
        (DataFrame → Parquet, CSV without ``pyarrow``; NumPy array → ``.npy``; Matplotlib figure → PNG,
        SVG and its plotted data; Plotly figure → figure JSON, trace data and a PNG where kaleido renders
        one; JSON-able value → JSON), once per content digest, and described to the model before the message.
        An object without a safe format raises :class:`~deerflow_nb.errors.UsageError` naming it.
        """
        return self._loop.run(self._astart(message, options, secrets, data=data, checkpoint_id=checkpoint_id),
                              method="Thread.start")

    async def astart(self, message: str, *, secrets: Mapping[str, str] | None = None,
                     data: Mapping[str, Any] | None = None, checkpoint_id: str | None = None,
                     **options: Any) -> Run:
        """Async twin of :meth:`start`."""
        return await self._loop.arun(self._astart(message, options, secrets, data=data, checkpoint_id=checkpoint_id))

    async def _aactive_run(self) -> Run | None:
        run_id = await self._backend.active_run(self.id)
        return Run(self._backend, self.id, run_id) if run_id is not None else None

    async def _arun(self, run_id: str) -> Run:
        if not isinstance(run_id, str) or not run_id:
            raise UsageError(f"run_id must be a non-empty string, got {run_id!r}")
        await self._backend.run_status(self.id, run_id)  # NotFoundError: no such run on this thread
        return Run(self._backend, self.id, run_id)

    def run(self, run_id: str) -> Run:
        """A :class:`Run` for any run of this thread, live or finished, started by anyone.

        ``wait()`` gives its outcome; ``events()`` replays what the stream bridge still holds
        (``thread.run_events(run_id)`` reads the journal of a run finished long ago). Raises
        :class:`~deerflow_nb.errors.NotFoundError` when the thread has no such run.
        """
        return self._loop.run(self._arun(run_id), method="Thread.run")

    async def arun(self, run_id: str) -> Run:
        """Async twin of :meth:`run`."""
        return await self._loop.arun(self._arun(run_id))

    def active_run(self) -> Run | None:
        """The thread's run that is still going (started by anyone, e.g. from a kernel since restarted), or ``None``.

        In server mode runs outlive the kernel, so a new kernel can reattach to them
        (``thread.ui()`` does). Embedded, a run lives in its kernel: after a restart there
        is none, and the thread ends with the interrupted run's partial answer instead.
        """
        return self._loop.run(self._aactive_run(), method="Thread.active_run")

    async def aactive_run(self) -> Run | None:
        """Async twin of :meth:`active_run`."""
        return await self._loop.arun(self._aactive_run())

    def stream(self, message: str, *, secrets: Mapping[str, str] | None = None,
               data: Mapping[str, Any] | None = None, checkpoint_id: str | None = None,
               **options: Any) -> Iterator[StreamEvent]:
        """Run and yield :class:`StreamEvent`s as they happen (``data=``, ``checkpoint_id=`` as in :meth:`start`)."""
        return self.start(message, secrets=secrets, data=data, checkpoint_id=checkpoint_id, **options).events()

    async def astream(self, message: str, *, secrets: Mapping[str, str] | None = None,
                      data: Mapping[str, Any] | None = None, checkpoint_id: str | None = None,
                      **options: Any) -> AsyncIterator[StreamEvent]:
        """Async twin of :meth:`stream`."""
        run = await self.astart(message, secrets=secrets, data=data, checkpoint_id=checkpoint_id, **options)
        async for event in run.aevents():
            yield event

    async def _achat(self, message: str | HumanMessage, responses: Responses | None,
                     options: Mapping[str, Any], secrets: Mapping[str, str] | None,
                     data: Mapping[str, Any] | None = None, checkpoint_id: str | None = None) -> str:
        for _ in range(MAX_HEADLESS_ROUNDS):
            run = await self._astart(message, options, secrets, stream_tokens=False, data=data,
                                     checkpoint_id=checkpoint_id)
            data = checkpoint_id = None  # with the first message only (answers go on from the head)
            text = await run.await_result()
            request = run.pending_input
            if request is None:
                return text
            answer = headless_answer(request, responses) if responses is not None else None
            if answer is None:
                raise HumanInputRequired(request, thread_id=self.id)
            message = build_response_message(request, answer)
        raise UsageError(f"gave up after {MAX_HEADLESS_ROUNDS} rounds of human-input requests")

    def chat(self, message: str, *, responses: Responses | None = None,
             secrets: Mapping[str, str] | None = None, data: Mapping[str, Any] | None = None,
             checkpoint_id: str | None = None, **options: Any) -> str:
        """Send ``message``, wait, return the final answer text.

        If the agent asks for human input, ``responses`` answers it headlessly;
        without it :class:`~deerflow_nb.errors.HumanInputRequired` is raised.
        Options: ``model_name``, ``thinking_enabled``, ``plan_mode``, ``subagent_enabled``,
        ``recursion_limit``, ``non_interactive``, ``max_concurrent_subagents`` (1-4), ``timeout``.
        ``data={"name": obj}`` attaches kernel objects as files; ``checkpoint_id`` runs from that
        checkpoint, as a new branch (see :meth:`start`).
        """
        return self._loop.run(self._achat(message, responses, options, secrets, data, checkpoint_id),
                              method="Thread.chat")

    async def achat(self, message: str, *, responses: Responses | None = None,
                    secrets: Mapping[str, str] | None = None, data: Mapping[str, Any] | None = None,
                    checkpoint_id: str | None = None, **options: Any) -> str:
        """Async twin of :meth:`chat` (preferred inside notebooks)."""
        return await self._loop.arun(self._achat(message, responses, options, secrets, data, checkpoint_id))

    # -- human input ---------------------------------------------------------------------
    async def _apending(self) -> dict[str, Any] | None:
        state = await self._backend.get_state(self.id)
        return pending_input_of(list(state.get("messages", [])))

    @property
    def pending_input(self) -> dict[str, Any] | None:
        """The open human-input request, or ``None``."""
        return self._loop.run(self._apending(), method="Thread.pending_input")

    async def apending_input(self) -> dict[str, Any] | None:
        """Async twin of :attr:`pending_input`."""
        return await self._loop.arun(self._apending())

    async def _arespond(self, answer: Any, responses: Responses | None, options: Mapping[str, Any]) -> str:
        request = await self._apending()
        if request is None:
            raise UsageError(f"thread {self.id!r} has no pending human-input request")
        return await self._achat(build_response_message(request, answer), responses, options, None)

    def respond(self, answer: Any, *, responses: Responses | None = None, **options: Any) -> str:
        """Answer the pending request (text, an option, or a dict for forms) and continue; returns the answer."""
        return self._loop.run(self._arespond(answer, responses, options), method="Thread.respond")

    async def arespond(self, answer: Any, *, responses: Responses | None = None, **options: Any) -> str:
        """Async twin of :meth:`respond`."""
        return await self._loop.arun(self._arespond(answer, responses, options))

    # -- state ---------------------------------------------------------------------------
    @property
    def state(self) -> dict[str, Any]:
        """Current state values: messages, title, artifacts, todos, ..."""
        return with_state_defaults(self._loop.run(self._backend.get_state(self.id), method="Thread.state"))

    def get_state(self, checkpoint_id: str | None = None) -> dict[str, Any]:
        """The state values at ``checkpoint_id`` (one of :meth:`history`'s; default: the newest, as :attr:`state`).

        A checkpoint this thread does not have raises :class:`~deerflow_nb.errors.NotFoundError`.
        """
        return with_state_defaults(self._loop.run(self._backend.get_state(self.id, checkpoint_id),
                                                  method="Thread.get_state"))

    async def aget_state(self, checkpoint_id: str | None = None) -> dict[str, Any]:
        """Async twin of :attr:`state` and :meth:`get_state`."""
        return with_state_defaults(await self._loop.arun(self._backend.get_state(self.id, checkpoint_id)))

    def checkpoint(self, checkpoint_id: str | None = None) -> dict[str, Any] | None:
        """One checkpoint as :meth:`history` lists it (default: the newest; ``None`` before the first run).

        ``{"checkpoint_id", "parent_checkpoint_id", "created_at", "step", "metadata", "values"}``;
        a checkpoint this thread does not have raises :class:`~deerflow_nb.errors.NotFoundError`.
        """
        return self._loop.run(self._backend.get_checkpoint(self.id, checkpoint_id), method="Thread.checkpoint")

    async def acheckpoint(self, checkpoint_id: str | None = None) -> dict[str, Any] | None:
        """Async twin of :meth:`checkpoint`."""
        return await self._loop.arun(self._backend.get_checkpoint(self.id, checkpoint_id))

    async def _aupdate_state(self, values: Mapping[str, Any] | None, as_node: str | None,
                             checkpoint_id: str | None) -> str:
        written = await self._backend.update_state(self.id, values, as_node, checkpoint_id)
        return str(written["checkpoint_id"])

    def update_state(self, values: Mapping[str, Any] | None, *, as_node: str | None = None,
                     checkpoint_id: str | None = None) -> str:
        """Write ``values`` into the thread's state as a new checkpoint; returns its id (LangGraph's ``update_state``).

        Each channel goes through its reducer, as if the ``model`` node (the only ``as_node``
        accepted) had returned it: ``messages`` are appended, or replace the message with the
        same ``id`` (``{"type": "remove", "id": ...}`` removes one); ``title``, ``todos``, ...
        are set. Messages may be LangChain messages or dicts (``{"role": "user", "content": ...}``).
        With ``checkpoint_id`` the update applies to that checkpoint and starts a branch there.
        ``values=None`` copies the checkpoint unchanged. Invalid values raise
        :class:`~deerflow_nb.errors.UsageError` naming the field (nothing is written); refused with
        :class:`~deerflow_nb.errors.ThreadBusyError` while a run is going.
        """
        return self._loop.run(self._aupdate_state(values, as_node, checkpoint_id), method="Thread.update_state")

    async def aupdate_state(self, values: Mapping[str, Any] | None, *, as_node: str | None = None,
                            checkpoint_id: str | None = None) -> str:
        """Async twin of :meth:`update_state`."""
        return await self._loop.arun(self._aupdate_state(values, as_node, checkpoint_id))

    @property
    def messages(self) -> list[BaseMessage]:
        """The thread's messages."""
        return list(self.state.get("messages", []))

    @property
    def title(self) -> str | None:
        """The generated title, once the first exchange is complete."""
        return self.state.get("title")

    def rename(self, title: str) -> None:
        """Set the thread's title (shown by ``agent.threads()`` and the chat); refused while a run is going."""
        self._loop.run(self._backend.rename_thread(self.id, title), method="Thread.rename")

    async def arename(self, title: str) -> None:
        """Async twin of :meth:`rename`."""
        await self._loop.arun(self._backend.rename_thread(self.id, title))

    def compact(self, keep_messages: int | None = None) -> dict[str, Any]:
        """Summarize the older messages into the thread's ``summary_text`` now and keep the recent ones.

        What automatic summarization does when the context grows long, on demand: the
        summarization model writes the summary (the model sees it before the kept messages
        from then on); ``keep_messages`` defaults to ``summarization.keep_messages``. Returns
        ``{"compacted", "removed", "kept", "summary_text", "checkpoint_id"}``; refused with
        :class:`~deerflow_nb.errors.ThreadBusyError` while a run is going.
        """
        return self._loop.run(self._backend.compact_thread(self.id, keep_messages), method="Thread.compact")

    async def acompact(self, keep_messages: int | None = None) -> dict[str, Any]:
        """Async twin of :meth:`compact`."""
        return await self._loop.arun(self._backend.compact_thread(self.id, keep_messages))

    async def _ahistory(self, limit: int | None) -> list[dict[str, Any]]:
        from deerflow_nb.client.history import readable_checkpoint

        return [readable_checkpoint(item) for item in await self._backend.get_history(self.id, limit)]

    def history(self, limit: int | None = None) -> list[dict[str, Any]]:
        """Checkpoints, newest first (``limit=0`` gives an empty list).

        Each entry: ``checkpoint_id``, ``parent_checkpoint_id``, ``step``, ``created_at`` (ISO
        time), ``source`` (``input``, ``loop`` or ``update``), ``messages`` (how many),
        ``last_message_type`` and ``last_message`` (a one-line preview), plus the raw
        ``metadata`` and ``values``. ``pandas.DataFrame(thread.history())`` reads well.
        """
        return self._loop.run(self._ahistory(limit), method="Thread.history")

    async def ahistory(self, limit: int | None = None) -> list[dict[str, Any]]:
        """Async twin of :meth:`history`."""
        return await self._loop.arun(self._ahistory(limit))

    # -- goal mode -----------------------------------------------------------------------
    async def _aset_goal(self, objective: str, max_continuations: int) -> dict[str, Any]:
        from deerflow_nb.runtime.goal import MAX_CONTINUATIONS

        if isinstance(max_continuations, bool) or not isinstance(max_continuations, int):
            raise UsageError(f"max_continuations: must be an integer from 0 to {MAX_CONTINUATIONS}, "
                             f"got {max_continuations!r}")
        capped = min(max_continuations, MAX_CONTINUATIONS)  # clamped here; the route refuses more with 422
        return dict((await self._backend.set_goal(self.id, objective, capped))["goal"])

    def set_goal(self, objective: str, max_continuations: int = 8) -> dict[str, Any]:
        """Give the thread a goal; returns it (``objective``, ``max_continuations``, ``continuations``, ...).

        After each run an evaluator model judges the visible conversation against
        ``objective``: met, the goal is cleared; not met yet, the run goes on by itself with
        a hidden continuation message, at most ``max_continuations`` times per run (0-8,
        more is clamped to 8); blocked (needs your input, outside help, out of scope), it
        stops and says why in ``get_goal()["last_evaluation"]``. Replaces an earlier goal;
        refused with :class:`~deerflow_nb.errors.ThreadBusyError` while a run is going.
        """
        return self._loop.run(self._aset_goal(objective, max_continuations), method="Thread.set_goal")

    async def aset_goal(self, objective: str, max_continuations: int = 8) -> dict[str, Any]:
        """Async twin of :meth:`set_goal`."""
        return await self._loop.arun(self._aset_goal(objective, max_continuations))

    async def _aget_goal(self) -> dict[str, Any] | None:
        goal = (await self._backend.get_goal(self.id))["goal"]
        return dict(goal) if goal is not None else None

    def get_goal(self) -> dict[str, Any] | None:
        """The active goal (with its ``last_evaluation``), or ``None`` (none set, met, or cleared)."""
        return self._loop.run(self._aget_goal(), method="Thread.get_goal")

    async def aget_goal(self) -> dict[str, Any] | None:
        """Async twin of :meth:`get_goal`."""
        return await self._loop.arun(self._aget_goal())

    def clear_goal(self) -> None:
        """Drop the thread's goal (refused while a run is going)."""
        self._loop.run(self._backend.clear_goal(self.id), method="Thread.clear_goal")

    async def aclear_goal(self) -> None:
        """Async twin of :meth:`clear_goal`."""
        await self._loop.arun(self._backend.clear_goal(self.id))

    # -- conversation control: regenerate, edit, branches, fork --------------------------
    async def _astart_replay(self, prepared: Mapping[str, Any], options: Mapping[str, Any],
                             secrets: Mapping[str, str] | None, *, stream_tokens: bool = True) -> Run:
        """Start the run a ``prepare_*`` answer describes (its message, from its checkpoint, with its metadata)."""
        payload = dict(prepared["input"]["messages"][0])
        message = HumanMessage(content=payload["content"], additional_kwargs=dict(payload.get("additional_kwargs")
                                                                                  or {}))
        run_id = await self._backend.start_run(self.id, message, options, secrets, stream_tokens=stream_tokens,
                                               checkpoint_id=str(prepared["checkpoint_id"]),
                                               metadata=dict(prepared["metadata"]))
        return Run(self._backend, self.id, run_id)

    async def _astart_regenerate(self, run_id: str | None, options: Mapping[str, Any],
                                 secrets: Mapping[str, str] | None, *, stream_tokens: bool = True) -> Run:
        if run_id is not None and (not isinstance(run_id, str) or not run_id):
            raise UsageError(f"run_id: must be a non-empty string, got {run_id!r}")
        prepared = await self._backend.prepare_regenerate(self.id, run_id)
        return await self._astart_replay(prepared, options, secrets, stream_tokens=stream_tokens)

    async def _astart_edit(self, message_id: str, text: str, options: Mapping[str, Any],
                           secrets: Mapping[str, str] | None, *, stream_tokens: bool = True) -> Run:
        if not isinstance(message_id, str) or not message_id:
            raise UsageError(f"message_id: must be a non-empty string, got {message_id!r}")
        if not isinstance(text, str) or not text.strip():
            raise UsageError("content: the new message text must be a non-empty string")
        prepared = await self._backend.prepare_edit(self.id, message_id, text)
        return await self._astart_replay(prepared, options, secrets, stream_tokens=stream_tokens)

    async def _aresult(self, run: Run) -> str:
        text = await run.await_result()
        if run.pending_input is not None:
            raise HumanInputRequired(run.pending_input, thread_id=self.id)
        return text

    async def _aregenerate(self, run_id: str | None, options: Mapping[str, Any],
                           secrets: Mapping[str, str] | None) -> str:
        return await self._aresult(await self._astart_regenerate(run_id, options, secrets, stream_tokens=False))

    def regenerate(self, run_id: str | None = None, *, secrets: Mapping[str, str] | None = None,
                   **options: Any) -> str:
        """Rerun the latest turn (or the run ``run_id``'s) of the current branch; returns the new answer.

        The turn's message is sent again from the checkpoint its run started from, so the
        new answer replaces the old one in :attr:`messages` and everything after it; the old
        continuation stays as a branch (:meth:`branches`, :meth:`checkout`). The run carries
        ``metadata={"replay_kind": "regenerate", "regenerate_from_run_id": ...}``. Run options as
        in :meth:`chat`. A run not on the current branch raises :class:`~deerflow_nb.errors.NotFoundError`;
        refused with :class:`~deerflow_nb.errors.ThreadBusyError` while a run is going.
        """
        return self._loop.run(self._aregenerate(run_id, options, secrets), method="Thread.regenerate")

    async def aregenerate(self, run_id: str | None = None, *, secrets: Mapping[str, str] | None = None,
                          **options: Any) -> str:
        """Async twin of :meth:`regenerate`."""
        return await self._loop.arun(self._aregenerate(run_id, options, secrets))

    async def _aedit(self, message_id: str, text: str, options: Mapping[str, Any],
                     secrets: Mapping[str, str] | None) -> str:
        return await self._aresult(await self._astart_edit(message_id, text, options, secrets, stream_tokens=False))

    def edit(self, message_id: str, text: str, *, secrets: Mapping[str, str] | None = None, **options: Any) -> str:
        """Replace the human message ``message_id`` with ``text`` and rerun from there; returns the new answer.

        The message must be one you sent (a run's input) on the current branch; everything
        after it is replaced, and the old continuation stays as a branch, as with
        :meth:`regenerate` (``replay_kind: "edit"``). An unknown message raises
        :class:`~deerflow_nb.errors.NotFoundError`, another kind of message :class:`~deerflow_nb.errors.UsageError`.
        """
        return self._loop.run(self._aedit(message_id, text, options, secrets), method="Thread.edit")

    async def aedit(self, message_id: str, text: str, *, secrets: Mapping[str, str] | None = None,
                    **options: Any) -> str:
        """Async twin of :meth:`edit`."""
        return await self._loop.arun(self._aedit(message_id, text, options, secrets))

    def start_regenerate(self, run_id: str | None = None, *, secrets: Mapping[str, str] | None = None,
                         **options: Any) -> Run:
        """:meth:`regenerate` in the background: its :class:`Run` at once (stream it with ``run.events()``)."""
        return self._loop.run(self._astart_regenerate(run_id, options, secrets), method="Thread.start_regenerate")

    async def astart_regenerate(self, run_id: str | None = None, *, secrets: Mapping[str, str] | None = None,
                                **options: Any) -> Run:
        """Async twin of :meth:`start_regenerate`."""
        return await self._loop.arun(self._astart_regenerate(run_id, options, secrets))

    def start_edit(self, message_id: str, text: str, *, secrets: Mapping[str, str] | None = None,
                   **options: Any) -> Run:
        """:meth:`edit` in the background: its :class:`Run` at once."""
        return self._loop.run(self._astart_edit(message_id, text, options, secrets), method="Thread.start_edit")

    async def astart_edit(self, message_id: str, text: str, *, secrets: Mapping[str, str] | None = None,
                          **options: Any) -> Run:
        """Async twin of :meth:`start_edit`."""
        return await self._loop.arun(self._astart_edit(message_id, text, options, secrets))

    def branches(self) -> list[dict[str, Any]]:
        """The thread's branches, oldest first; the checked-out one has ``current: True``.

        Each: ``branch_id`` (its first checkpoint), ``checkpoint_id`` (its tip), ``fork_checkpoint_id``
        (where it leaves its parent branch; ``None`` for the first), ``kind`` (``original``,
        ``regenerate``, ``edit``, ``run`` for a run from a checkpoint, ``update`` for a state
        update at one), ``run_id`` (the run that started it), ``created_at``, ``updated_at``,
        ``messages`` (how many at its tip), ``last_message_type`` and ``last_message`` (a preview).
        """
        return list(self._loop.run(self._backend.branches(self.id), method="Thread.branches")["branches"])

    async def abranches(self) -> list[dict[str, Any]]:
        """Async twin of :meth:`branches`."""
        return list((await self._loop.arun(self._backend.branches(self.id)))["branches"])

    def branch_info(self) -> dict[str, Any]:
        """``{"branches", "current", "forks"}``: :meth:`branches`, the current branch id, and the forks along it.

        Each fork (a checkpoint of the current branch where branches part) has ``message_index``
        and ``message_id`` (the first message that differs, on the current branch), ``branches``
        (the alternatives' ids, oldest first) and ``current`` (the checked-out one's index): what
        the chat widget's "2 / 3" switcher shows.
        """
        return dict(self._loop.run(self._backend.branches(self.id), method="Thread.branch_info"))

    async def abranch_info(self) -> dict[str, Any]:
        """Async twin of :meth:`branch_info`."""
        return dict(await self._loop.arun(self._backend.branches(self.id)))

    def checkout(self, branch_id: str) -> list[dict[str, Any]]:
        """Switch to the branch ``branch_id`` (one of :meth:`branches`'); returns the branches.

        The branch's tip becomes the thread's head, so :attr:`messages`, :attr:`state` and the
        next run (from any client) continue it. The switch is stored as a checkpoint (a copy of
        the tip), so it holds across restarts. Refused with :class:`~deerflow_nb.errors.ThreadBusyError`
        while a run is going; an unknown branch raises :class:`~deerflow_nb.errors.NotFoundError`.
        """
        return list(self._loop.run(self._backend.checkout(self.id, branch_id), method="Thread.checkout")["branches"])

    async def acheckout(self, branch_id: str) -> list[dict[str, Any]]:
        """Async twin of :meth:`checkout`."""
        return list((await self._loop.arun(self._backend.checkout(self.id, branch_id)))["branches"])

    async def _afork(self, checkpoint_id: str) -> Thread:
        forked = await self._backend.fork(self.id, checkpoint_id)
        return Thread(self.client, str(forked["thread_id"]))

    def fork(self, checkpoint_id: str) -> Thread:
        """A new thread whose state is this thread's at ``checkpoint_id`` (one of :meth:`history`'s).

        Forking the newest checkpoint also copies the thread's files (workspace, outputs,
        uploads); an older one does not (they may hold later work). This thread is unchanged.
        """
        return self._loop.run(self._afork(checkpoint_id), method="Thread.fork")

    async def afork(self, checkpoint_id: str) -> Thread:
        """Async twin of :meth:`fork`."""
        return await self._loop.arun(self._afork(checkpoint_id))

    def run_events(self, run_id: str | None = None, *, event_type: str | None = None) -> list[dict[str, Any]]:
        """Journal entries of a run (``None``: of every run of the thread), oldest first."""
        return self._loop.run(self._backend.run_events(self.id, run_id, event_type), method="Thread.run_events")

    async def arun_events(self, run_id: str | None = None, *, event_type: str | None = None
                          ) -> list[dict[str, Any]]:
        """Async twin of :meth:`run_events`."""
        return await self._loop.arun(self._backend.run_events(self.id, run_id, event_type))

    # -- files and usage -----------------------------------------------------------------
    def upload(self, paths: UploadSource | Iterable[UploadSource]) -> dict[str, Any]:
        """Upload local files (a path or a list); all or nothing.

        Returns ``{"success", "files": [{"filename", "path", "size", "markdown_file", ...}], "message"}``.
        Repeated names in one call get ``_1``, ``_2`` suffixes; a directory or a missing
        path fails the whole call before anything is copied. Uploads land in
        ``/mnt/user-data/uploads``; the agent is told about new ones on its next turn.
        """
        return self._loop.run(self._backend.upload(self.id, _as_list(paths)), method="Thread.upload")

    async def aupload(self, paths: UploadSource | Iterable[UploadSource]) -> dict[str, Any]:
        """Async twin of :meth:`upload`."""
        return await self._loop.arun(self._backend.upload(self.id, _as_list(paths)))

    def uploads(self) -> dict[str, Any]:
        """``{"files": [{"filename", "size", "path", "extension", "modified_at"}], "count": N}``."""
        return self._loop.run(self._backend.list_uploads(self.id), method="Thread.uploads")

    async def auploads(self) -> dict[str, Any]:
        """Async twin of :meth:`uploads`."""
        return await self._loop.arun(self._backend.list_uploads(self.id))

    def delete_upload(self, name: str) -> dict[str, Any]:
        """Delete an upload (and the Markdown converted from it)."""
        return self._loop.run(self._backend.delete_upload(self.id, name), method="Thread.delete_upload")

    async def adelete_upload(self, name: str) -> dict[str, Any]:
        """Async twin of :meth:`delete_upload`."""
        return await self._loop.arun(self._backend.delete_upload(self.id, name))

    def artifact(self, path: str) -> tuple[bytes, str]:
        """``(content, mime_type)`` of ``/mnt/user-data/...`` in this thread (escapes are refused)."""
        return self._loop.run(self._backend.artifact(self.id, path), method="Thread.artifact")

    async def aartifact(self, path: str) -> tuple[bytes, str]:
        """Async twin of :meth:`artifact`."""
        return await self._loop.arun(self._backend.artifact(self.id, path))

    async def _aoutputs(self) -> list[dict[str, Any]]:
        state = await self._backend.get_state(self.id)
        messages = list(state.get("messages", []))
        run_ids = list(dict.fromkeys(
            rid for m in messages if getattr(m, "type", "") == "human"
            and isinstance(rid := (getattr(m, "additional_kwargs", None) or {}).get("run_id"), str)))
        files: dict[str, dict[str, Any]] = {}
        for run_id in run_ids:
            try:
                changes = await self._backend.workspace_changes(self.id, run_id)
            except NotFoundError:
                continue
            for change in changes.get("changes", []):
                path = change.get("path", "")
                if not path.startswith(OUTPUTS_VIRTUAL + "/"):
                    continue
                if change.get("status") == "deleted":
                    files.pop(path, None)
                else:
                    files[path] = {"path": path, "size": change.get("size"), "presented": False,
                                   "run_id": run_id}
        for path in state.get("artifacts") or []:
            if isinstance(path, str):
                entry = files.setdefault(path, {"path": path, "size": None, "presented": True, "run_id": None})
                entry["presented"] = True
        return sorted(files.values(), key=lambda f: f["path"])

    def outputs(self) -> list[dict[str, Any]]:
        """Files the agent produced in ``/mnt/user-data/outputs`` or presented, sorted by path.

        Each is ``{"path", "size", "presented", "run_id"}`` (``run_id``: the run that last wrote it),
        gathered from the runs' workspace changes and the presented files, so it works in both modes.
        """
        return self._loop.run(self._aoutputs(), method="Thread.outputs")

    async def aoutputs(self) -> list[dict[str, Any]]:
        """Async twin of :meth:`outputs`."""
        return await self._loop.arun(self._aoutputs())

    async def _aload(self, path: str) -> Any:
        from deerflow_nb.client.data import load_object, virtual_path

        virtual = virtual_path(path)
        content, mime = await self._backend.artifact(self.id, virtual)
        return await asyncio.to_thread(load_object, virtual, content, mime)

    def load(self, path: str) -> Any:
        """A thread file as a Python object, by type (a bare name is taken under ``outputs``).

        CSV / TSV / Parquet / Excel → ``pandas.DataFrame``; ``.npy`` → NumPy array; PNG / JPEG / GIF →
        ``IPython.display.Image``; SVG → ``IPython.display.SVG``; ``.plotly.json`` → a Plotly ``Figure``;
        other JSON → dict / list; Markdown → ``IPython.display.Markdown``; anything else → ``bytes``.
        """
        return self._loop.run(self._aload(path), method="Thread.load")

    async def aload(self, path: str) -> Any:
        """Async twin of :meth:`load`."""
        return await self._loop.arun(self._aload(path))

    async def _ato_notebook(self, path: str | os.PathLike[str] | None, run_id: str | None,
                            root: str) -> list[dict[str, Any]] | Path:
        from deerflow_nb.client.notebook import build_cells, notebook_json

        state = await self._backend.get_state(self.id)
        cells = build_cells(list(state.get("messages", [])), run_id=run_id, root=root, thread_id=self.id)
        if path is None:
            return cells
        target = Path(path).expanduser()
        uploads = [(f["filename"], (await self._backend.artifact(self.id, f["path"]))[0])
                   for f in (await self._backend.list_uploads(self.id))["files"]]

        def write() -> Path:
            folder = target.parent / root / "uploads"
            folder.mkdir(parents=True, exist_ok=True)
            for name, content in uploads:
                (folder / name).write_bytes(content)
            target.write_text(notebook_json(cells), encoding="utf-8")
            return target

        return await asyncio.to_thread(write)

    def to_notebook(self, path: str | os.PathLike[str] | None = None, run_id: str | None = None, *,
                    root: str = "deerflow_files") -> list[dict[str, Any]] | Path:
        """The agent's work as notebook cells (all runs, or ``run_id``'s), to rerun in your kernel.

        Cells, in order: the user's messages and the agent's explanations as Markdown; the files it
        wrote or edited (``write_file``, ``str_replace``) as Python; ``python - <<EOF`` blocks as
        Python; other commands as ``!`` lines (``%%bash`` when multi-line). ``/mnt/user-data/`` becomes
        ``{root}/``. Without ``path`` the cells (nbformat-4 dicts) are returned; with it the notebook is
        written there, the thread's uploads are copied to ``{root}/uploads`` beside it, and its path
        is returned.
        """
        return self._loop.run(self._ato_notebook(path, run_id, root), method="Thread.to_notebook")

    async def ato_notebook(self, path: str | os.PathLike[str] | None = None, run_id: str | None = None, *,
                           root: str = "deerflow_files") -> list[dict[str, Any]] | Path:
        """Async twin of :meth:`to_notebook`."""
        return await self._loop.arun(self._ato_notebook(path, run_id, root))

    def usage(self) -> dict[str, Any]:
        """Token usage and cost of this thread's runs, overall and per model."""
        return self._loop.run(self._backend.usage(self.id, None), method="Thread.usage")

    async def ausage(self) -> dict[str, Any]:
        """Async twin of :meth:`usage`."""
        return await self._loop.arun(self._backend.usage(self.id, None))

    def workspace_changes(self, run_id: str | None = None) -> dict[str, Any]:
        """What a run (default: the latest) added, modified or deleted in ``workspace`` and ``outputs``.

        Returns ``{"run_id", "thread_id", "status", "finished_at", "changes", "truncated"}``;
        each change has ``path``, ``area``, ``status`` (added / modified / deleted), ``size``,
        ``old_size``, ``binary``, ``too_large``, ``sensitive`` and ``diff`` (unified text,
        ``None`` for metadata-only files). A thread without runs has no changes.
        """
        return self._loop.run(self._backend.workspace_changes(self.id, run_id), method="Thread.workspace_changes")

    async def aworkspace_changes(self, run_id: str | None = None) -> dict[str, Any]:
        """Async twin of :meth:`workspace_changes`."""
        return await self._loop.arun(self._backend.workspace_changes(self.id, run_id))

    # -- widgets -------------------------------------------------------------------------
    def ui(self, message: str | None = None, *, run: Any = None, options: Mapping[str, Any] | None = None,
           data: Mapping[str, Any] | None = None, **run_options: Any) -> ChatWidget:
        """The chat widget for this thread, with its history.

        ``message`` is sent at once and streams in the background (the cell returns
        immediately); ``run`` attaches to a run already started. Run options
        (``plan_mode=True``, ``model_name=...``) apply to every message sent from the widget;
        ``data={...}`` (see :meth:`start`) goes with ``message`` only (later ones:
        ``widget.send(text, data=...)``).
        """
        from deerflow_nb.widgets import ChatWidget

        merged = {**(options or {}), **run_options}
        if not data:
            return ChatWidget(self, message=message, run=run, options=merged)
        if message is None or run is not None:
            raise UsageError("data= needs a message to go with (and no run=)")
        widget = ChatWidget(self, options=merged)
        widget.send(message, data=data)
        return widget

    def workspace_diff(self, run_id: str | None = None, *, mode: str = "unified") -> WorkspaceDiff:
        """The :class:`~deerflow_nb.widgets.WorkspaceDiff` widget for a run (default: the latest)."""
        from deerflow_nb.widgets import WorkspaceDiff

        return WorkspaceDiff(self, run_id=run_id, mode=mode)


def _as_list(paths: Any) -> list[Any]:
    if isinstance(paths, str | tuple) or hasattr(paths, "__fspath__"):
        return [paths]
    return list(paths)
