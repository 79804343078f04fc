"""``Thread``: one conversation, its state, runs, human-input requests, files and usage."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from langchain_core.messages import BaseMessage, HumanMessage

from deerflow_nb.agent.human_input import (
    MAX_HEADLESS_ROUNDS,
    Responses,
    build_response_message,
    headless_answer,
)
from deerflow_nb.agent.state import with_state_defaults
from deerflow_nb.client.run import Run
from deerflow_nb.errors import HumanInputRequired, UsageError
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

    def __repr__(self) -> str:
        return f"<Thread {self.id}>"

    # -- runs ----------------------------------------------------------------------------
    async def _astart(self, message: str | HumanMessage, options: Mapping[str, Any],
                      secrets: Mapping[str, str] | None, *, stream_tokens: bool = True) -> Run:
        run_id = await self._backend.start_run(self.id, message, options, secrets, stream_tokens=stream_tokens)
        return Run(self._backend, self.id, run_id)

    def start(self, message: str, *, secrets: Mapping[str, str] | None = None, **options: Any) -> Run:
        """Start a run in the background and return its :class:`Run` at once."""
        return self._loop.run(self._astart(message, options, secrets), method="Thread.start")

    async def astart(self, message: str, *, secrets: Mapping[str, str] | None = None, **options: Any) -> Run:
        """Async twin of :meth:`start`."""
        return await self._loop.arun(self._astart(message, options, secrets))

    async def _aactive_run(self) -> Run | None:
        run_id = await self._backend.active_run(self.id)
        return Run(self._backend, self.id, run_id) if run_id is not None else None

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

    def stream(self, message: str, *, secrets: Mapping[str, str] | None = None, **options: Any
               ) -> Iterator[StreamEvent]:
        """Run and yield :class:`StreamEvent`s as they happen."""
        return self.start(message, secrets=secrets, **options).events()

    async def astream(self, message: str, *, secrets: Mapping[str, str] | None = None, **options: Any
                      ) -> AsyncIterator[StreamEvent]:
        """Async twin of :meth:`stream`."""
        run = await self.astart(message, secrets=secrets, **options)
        async for event in run.aevents():
            yield event

    async def _achat(self, message: str | HumanMessage, responses: Responses | None,
                     options: Mapping[str, Any], secrets: Mapping[str, str] | None) -> str:
        for _ in range(MAX_HEADLESS_ROUNDS):
            run = await self._astart(message, options, secrets, stream_tokens=False)
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
             secrets: Mapping[str, str] | None = None, **options: Any) -> str:
        """Send ``message``, wait, return the final answer text.

        If the agent asks for human input, ``responses`` answers it headlessly;
        without it :class:`~deerflow_nb.errors.HumanInputRequired` is raised.
        Options: ``model_name``, ``thinking_enabled``, ``plan_mode``, ``subagent_enabled``,
        ``recursion_limit``, ``non_interactive``, ``timeout``.
        """
        return self._loop.run(self._achat(message, responses, options, secrets), method="Thread.chat")

    async def achat(self, message: str, *, responses: Responses | None = None,
                    secrets: Mapping[str, str] | None = None, **options: Any) -> str:
        """Async twin of :meth:`chat` (preferred inside notebooks)."""
        return await self._loop.arun(self._achat(message, responses, options, secrets))

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

    async def aget_state(self) -> dict[str, Any]:
        """Async twin of :attr:`state`."""
        return with_state_defaults(await self._loop.arun(self._backend.get_state(self.id)))

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

    def history(self, limit: int | None = None) -> list[dict[str, Any]]:
        """Checkpoints, newest first (``limit=0`` gives an empty list)."""
        return self._loop.run(self._backend.get_history(self.id, limit), method="Thread.history")

    async def ahistory(self, limit: int | None = None) -> list[dict[str, Any]]:
        """Async twin of :meth:`history`."""
        return await self._loop.arun(self._backend.get_history(self.id, limit))

    def run_events(self, run_id: str | None = None, *, event_type: str | None = None) -> list[dict[str, Any]]:
        """Journal entries of a run (embedded: also of the whole thread), oldest first."""
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
           **run_options: Any) -> ChatWidget:
        """The chat widget for this thread, with its history.

        ``message`` is sent at once and streams in the background (the cell returns
        immediately); ``run`` attaches to a run already started. Run options
        (``plan_mode=True``, ``model_name=...``) apply to every message sent from the widget.
        """
        from deerflow_nb.widgets import ChatWidget

        return ChatWidget(self, message=message, run=run, options={**(options or {}), **run_options})

    def workspace_diff(self, run_id: str | None = None, *, mode: str = "unified") -> WorkspaceDiff:
        """The :class:`~deerflow_nb.widgets.WorkspaceDiff` widget for a run (default: the latest)."""
        from deerflow_nb.widgets import WorkspaceDiff

        return WorkspaceDiff(self, run_id=run_id, mode=mode)


def _as_list(paths: Any) -> list[Any]:
    if isinstance(paths, str | tuple) or hasattr(paths, "__fspath__"):
        return [paths]
    return list(paths)
