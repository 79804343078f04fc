"""The ``Backend`` protocol: what ``DeerFlow`` / ``Thread`` / ``Run`` need from a transport.

Two implementations: :class:`~deerflow_nb.client.local.LocalBackend` (the runtime, in
this process) and :class:`~deerflow_nb.client.http.HttpBackend` (the ``deerflow`` server
extension, over HTTP). Every method is a coroutine run on the client's private loop;
both raise the same exceptions (:data:`deerflow_nb.errors.HTTP_STATUSES`) and return
the same shapes (the HTTP routes' bodies), so the public classes are written once.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from deerflow_nb.errors import RunError, run_error

if TYPE_CHECKING:
    from langchain_core.messages import HumanMessage

    from deerflow_nb.runtime.events import StreamEvent
    from deerflow_nb.runtime.loop import BackgroundLoop
    from deerflow_nb.skills.types import Skill
    from deerflow_nb.uploads import UploadSource
    from deerflow_nb.usage import Since

__all__ = ["Backend", "RunOutcome", "failure_of"]


@dataclass(frozen=True)
class RunOutcome:
    """How a run ended: its status, why, its final answer and its ``end`` event data."""

    run_id: str
    status: str
    final_text: str = ""
    stop_reason: str | None = None
    error: Any = None
    end_data: dict[str, Any] = field(default_factory=dict)

    def result(self) -> str:
        """The final answer text, or the :class:`RunError` (subclass) naming the failure."""
        if self.status != "success":
            raise failure_of(self.run_id, self.status, self.stop_reason, self.error)
        return self.final_text


def failure_of(run_id: str | None, status: str, stop_reason: str | None, detail: Any) -> RunError:
    """The :class:`RunError` of a run that ended with ``status`` (not ``success``)."""
    message = detail.get("message") if isinstance(detail, dict) else None
    if isinstance(detail, dict):
        stop_reason = stop_reason or detail.get("stop_reason")
    return run_error(run_id=run_id, status=status, stop_reason=stop_reason, cause=message or status, detail=detail)


class Backend(Protocol):
    """The transport under one :class:`~deerflow_nb.DeerFlow` client."""

    user_id: str
    loop: BackgroundLoop
    #: Whether a generated thread id may be registered without waiting (no remote round trip).
    defer_new_threads: bool

    # -- threads -------------------------------------------------------------------------
    async def create_thread(self, thread_id: str, *, new: bool) -> None:
        """Make ``thread_id`` exist for this user (``new``: the id was just generated)."""

    async def list_threads(self, limit: int | None) -> list[dict[str, Any]]:
        """``{"thread_id", "title", "created_at", "updated_at", "status"}`` rows, most recent first."""

    async def delete_thread(self, thread_id: str) -> None:
        """Delete the thread's history."""

    async def rename_thread(self, thread_id: str, title: str) -> None:
        """Set the thread's title (refused while a run is going)."""

    async def compact_thread(self, thread_id: str, keep_messages: int | None) -> dict[str, Any]:
        """Summarize older messages into ``summary_text`` (``POST /threads/{id}/compact``; 409 while running)."""

    async def active_run(self, thread_id: str) -> str | None:
        """The id of the thread's run that is still pending or running, or ``None``."""

    async def get_state(self, thread_id: str, checkpoint_id: str | None = None) -> dict[str, Any]:
        """Current state values, or at ``checkpoint_id`` (messages as LangChain messages)."""

    async def get_checkpoint(self, thread_id: str, checkpoint_id: str | None) -> dict[str, Any] | None:
        """One checkpoint as a :meth:`get_history` item (default: the newest; ``None``: the thread has none)."""

    async def update_state(self, thread_id: str, values: Mapping[str, Any] | None, as_node: str | None,
                           checkpoint_id: str | None) -> dict[str, Any]:
        """Write a checkpoint (on the newest, or on ``checkpoint_id``); its ``{"thread_id", "checkpoint_id", ...}``."""

    async def get_history(self, thread_id: str, limit: int | None) -> list[dict[str, Any]]:
        """Checkpoints, newest first: ``checkpoint_id``, ``parent_checkpoint_id``, ``created_at``, ``step``, ..."""

    # -- goals ---------------------------------------------------------------------------
    async def get_goal(self, thread_id: str) -> dict[str, Any]:
        """``{"goal": {...}}`` or ``{"goal": None}`` (``GET /threads/{id}/goal``)."""

    async def set_goal(self, thread_id: str, objective: str, max_continuations: int) -> dict[str, Any]:
        """Replace the thread's goal; ``{"goal": {...}}`` (``PUT /threads/{id}/goal``)."""

    async def clear_goal(self, thread_id: str) -> dict[str, Any]:
        """Clear the thread's goal; ``{"goal": None}`` (``DELETE /threads/{id}/goal``)."""

    # -- conversation control -----------------------------------------------------------
    async def prepare_regenerate(self, thread_id: str, run_id: str | None) -> dict[str, Any]:
        """What rerunning a turn needs (``POST /threads/{id}/runs/regenerate/prepare``)."""

    async def prepare_edit(self, thread_id: str, message_id: str, content: str) -> dict[str, Any]:
        """What replacing a human message and rerunning needs (``.../runs/edit-regenerate/prepare``)."""

    async def branches(self, thread_id: str) -> dict[str, Any]:
        """``{"branches", "current", "forks"}`` (``GET /threads/{id}/branches``)."""

    async def checkout(self, thread_id: str, branch_id: str) -> dict[str, Any]:
        """Switch to a branch; the new ``branches`` answer (``POST /threads/{id}/branches/checkout``)."""

    async def fork(self, thread_id: str, checkpoint_id: str) -> dict[str, Any]:
        """A new thread from a checkpoint (``POST /threads/{id}/fork``)."""

    # -- runs ----------------------------------------------------------------------------
    async def start_run(self, thread_id: str, message: str | HumanMessage, options: Mapping[str, Any],
                        secrets: Mapping[str, str] | None, *, stream_tokens: bool,
                        checkpoint_id: str | None = None, metadata: Mapping[str, Any] | None = None) -> str:
        """Admit and start a background run (from ``checkpoint_id``: a new branch); its run id."""

    def run_batches(self, thread_id: str, run_id: str, start: int) -> AsyncIterator[list[StreamEvent]]:
        """The run's events from the ``start``-th on, in bursts (a fresh replay every call)."""

    async def wait_run(self, thread_id: str, run_id: str) -> RunOutcome:
        """Block until the run ends; how it ended."""

    async def run_status(self, thread_id: str, run_id: str) -> str:
        """``pending``, ``running``, ``success``, ``error``, ``timeout`` or ``interrupted``."""

    async def cancel_run(self, thread_id: str, run_id: str, action: str) -> str:
        """``cancelled``, ``not_cancellable`` or ``unknown``."""

    async def run_events(self, thread_id: str, run_id: str | None, event_type: str | None) -> list[dict[str, Any]]:
        """Journal entries of a run (or of the whole thread), oldest first."""

    async def workspace_changes(self, thread_id: str, run_id: str | None) -> dict[str, Any]:
        """What a run (default: the latest) changed in ``workspace`` and ``outputs``."""

    # -- files and usage -----------------------------------------------------------------
    async def upload(self, thread_id: str, files: list[UploadSource]) -> dict[str, Any]:
        """Store local files in the thread's uploads (all or nothing)."""

    async def list_uploads(self, thread_id: str) -> dict[str, Any]:
        """``{"files", "count"}``."""

    async def delete_upload(self, thread_id: str, filename: str) -> dict[str, Any]:
        """Delete one upload."""

    async def artifact(self, thread_id: str, path: str) -> tuple[bytes, str]:
        """``(content, mime)`` of a ``/mnt/user-data/...`` file."""

    async def usage(self, thread_id: str | None, since: Since) -> dict[str, Any]:
        """Token usage and cost, overall and per model."""

    # -- DeerFlow routes -----------------------------------------------------------------
    async def gateway(self, name: str, *args: Any) -> Any:
        """One of the :class:`~deerflow_nb.runtime.gateway.Gateway` answers that need no thread.

        ``list_models``, ``get_model``, ``list_skills``, ``get_skill``, ``update_skill``,
        ``uninstall_skill``, ``get_memory``, ``reload_memory``, ``get_memory_config``,
        ``get_memory_status``, the ``agent.memory`` answers (``memory_data``, ``list_memory_facts``,
        ``add_memory_fact``, ... ``flush_memory``), ``get_mcp_config``, ``update_mcp_config``,
        ``list_mcp_tools``, ``reload_mcp``, ``list_subagents``, ``health``, the ``agent.schedules``
        answers (``list_scheduled_tasks``, ``create_scheduled_task``, ... ``list_scheduled_task_runs``).
        Arguments are the method's after ``user_id``; edits take their request body (a mapping) last.
        """

    async def install_skill(self, archive: str | os.PathLike[str]) -> dict[str, Any]:
        """Install a local ``.skill`` archive."""

    async def skills(self) -> list[Skill]:
        """The user's skills as :class:`~deerflow_nb.skills.types.Skill` objects (public first)."""

    def local(self, feature: str) -> Any:
        """A service of this process (``skills``, ``subagents``, ``runtime``): Python objects and host paths.

        Over HTTP: :class:`~deerflow_nb.errors.UsageError` saying the capability is local.
        """

    async def aclose(self) -> None:
        """Release connections (the in-process backend also closes the runtime)."""
