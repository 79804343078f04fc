"""``LocalBackend``: the :class:`~deerflow_nb.client.backend.Backend` over a runtime in this process."""

from __future__ import annotations

import asyncio
import os
from collections import OrderedDict
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any

from deerflow_nb.client.backend import RunOutcome
from deerflow_nb.errors import NotFoundError, UsageError
from deerflow_nb.persistence.runs import public_status
from deerflow_nb.runtime.run_manager import CancelOutcome
from deerflow_nb.runtime.stream_bridge import BridgeEvent
from deerflow_nb.runtime.streaming import final_text_of_run

if TYPE_CHECKING:
    from langchain_core.messages import HumanMessage

    from deerflow_nb.runtime.engine import Runtime
    from deerflow_nb.runtime.events import StreamEvent
    from deerflow_nb.runtime.run_manager import RunRecord
    from deerflow_nb.skills.types import Skill
    from deerflow_nb.uploads import UploadSource
    from deerflow_nb.usage import Since

__all__ = ["LocalBackend"]

_KEEP_RECORDS = 256

#: The user's memory (``agent.memory``): local file work, scoped to the client's user.
_MEMORY_EDITS = ("memory_data", "list_memory_facts", "search_memory_facts", "memory_preview", "export_memory",
                 "import_memory", "memory_queue_status", "add_memory_fact", "update_memory_fact",
                 "delete_memory_fact", "set_memory_summary", "clear_memory")
#: ``agent.schedules``: user-scoped coroutines of the gateway.
_SCHEDULES = ("list_scheduled_tasks", "create_scheduled_task", "get_scheduled_task", "pause_scheduled_task",
              "resume_scheduled_task", "delete_scheduled_task", "trigger_scheduled_task", "list_scheduled_task_runs")
#: The synchronous gateway answers (local file work only): run in a worker thread, off the loop.
_SYNC_GATEWAY = frozenset({"list_models", "get_model", "list_skills", "get_skill", "update_skill",
                           "uninstall_skill", "get_memory", "reload_memory", "get_memory_config",
                           "get_memory_status", "get_mcp_config", *_MEMORY_EDITS, "memory_section",
                           "reload_mcp", "list_subagents"})
_USER_SCOPED = frozenset({"list_skills", "get_skill", "update_skill", "uninstall_skill", "get_memory",
                          "reload_memory", "get_memory_status", "health", *_MEMORY_EDITS, *_SCHEDULES})


class LocalBackend:
    """Runs, state and features straight from a :class:`~deerflow_nb.runtime.engine.Runtime`."""

    defer_new_threads = True

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.user_id = runtime.user_id
        self.loop = runtime.loop
        # the records of runs this client started (the run manager forgets finished ones)
        self._records: OrderedDict[str, RunRecord] = OrderedDict()

    def __repr__(self) -> str:
        return f"user={self.user_id!r} home={str(self.runtime.paths.home)!r}"

    # -- threads -------------------------------------------------------------------------
    async def create_thread(self, thread_id: str, *, new: bool) -> None:
        """Register the thread (a generated id costs no lookup; its row comes with its first run)."""
        store = await self.runtime.store()
        await store.ensure_thread(thread_id, self.user_id, new=new)

    async def list_threads(self, limit: int | None) -> list[dict[str, Any]]:
        """The user's threads, most recently active first."""
        store = await self.runtime.store()
        return [r.to_dict() for r in await store.list_threads(self.user_id, limit)]

    async def delete_thread(self, thread_id: str) -> None:
        """Delete a thread's history (its files stay on disk)."""
        store = await self.runtime.store()
        await store.delete_thread(thread_id, self.user_id)

    async def rename_thread(self, thread_id: str, title: str) -> None:
        """Set the title in the thread's row and state."""
        await self.runtime.rename_thread(thread_id, title, self.user_id)

    async def compact_thread(self, thread_id: str, keep_messages: int | None) -> dict[str, Any]:
        """Summarize the thread's older messages (the runtime's compaction)."""
        return await self.runtime.compact_thread(thread_id, self.user_id, keep_messages=keep_messages)

    async def active_run(self, thread_id: str) -> str | None:
        """The run this runtime is executing on the thread, if any."""
        store = await self.runtime.store()
        await store.get_thread(thread_id, self.user_id)
        record = self.runtime.runs.active_run(thread_id)
        return record.run_id if record is not None and record.status in {"pending", "running"} else None

    async def get_state(self, thread_id: str, checkpoint_id: str | None = None) -> dict[str, Any]:
        """The thread's current values (or at ``checkpoint_id``)."""
        return await self.runtime.get_state(thread_id, self.user_id, checkpoint_id=checkpoint_id)

    async def get_checkpoint(self, thread_id: str, checkpoint_id: str | None) -> dict[str, Any] | None:
        """One checkpoint of the thread."""
        return await self.runtime.get_checkpoint(thread_id, checkpoint_id, self.user_id)

    async def update_state(self, thread_id: str, values: Mapping[str, Any] | None, as_node: str | None,
                           checkpoint_id: str | None) -> dict[str, Any]:
        """Write a checkpoint through the runtime (validated there)."""
        return await self.runtime.update_state(thread_id, dict(values) if values is not None else None,
                                               as_node=as_node, checkpoint_id=checkpoint_id, user_id=self.user_id)

    async def get_history(self, thread_id: str, limit: int | None) -> list[dict[str, Any]]:
        """The thread's checkpoints, newest first."""
        return await self.runtime.get_history(thread_id, limit, self.user_id)

    # -- goals ---------------------------------------------------------------------------
    async def get_goal(self, thread_id: str) -> dict[str, Any]:
        """The thread's goal."""
        return await self.runtime.goals.get(thread_id, self.user_id)

    async def set_goal(self, thread_id: str, objective: str, max_continuations: int) -> dict[str, Any]:
        """Replace the thread's goal."""
        return await self.runtime.goals.set(thread_id, self.user_id, objective, max_continuations)

    async def clear_goal(self, thread_id: str) -> dict[str, Any]:
        """Clear the thread's goal."""
        return await self.runtime.goals.clear(thread_id, self.user_id)

    # -- conversation control -----------------------------------------------------------
    async def prepare_regenerate(self, thread_id: str, run_id: str | None) -> dict[str, Any]:
        """The runtime's rerun preparation."""
        body = {"run_id": run_id} if run_id is not None else {}
        return await self.runtime.conversations.prepare_regenerate(thread_id, self.user_id, body)

    async def prepare_edit(self, thread_id: str, message_id: str, content: str) -> dict[str, Any]:
        """The runtime's edit preparation."""
        return await self.runtime.conversations.prepare_edit(thread_id, self.user_id,
                                                             {"message_id": message_id, "content": content})

    async def branches(self, thread_id: str) -> dict[str, Any]:
        """The thread's branches."""
        return await self.runtime.conversations.branches(thread_id, self.user_id)

    async def checkout(self, thread_id: str, branch_id: str) -> dict[str, Any]:
        """Switch branches."""
        return await self.runtime.conversations.checkout(thread_id, self.user_id, {"branch_id": branch_id})

    async def fork(self, thread_id: str, checkpoint_id: str) -> dict[str, Any]:
        """A new thread from a checkpoint."""
        return await self.runtime.conversations.fork(thread_id, self.user_id, {"checkpoint_id": checkpoint_id})

    # -- runs ----------------------------------------------------------------------------
    async def start_run(self, thread_id: str, message: str | HumanMessage, options: Mapping[str, Any],
                        secrets: Mapping[str, str] | None, *, stream_tokens: bool,
                        checkpoint_id: str | None = None, metadata: Mapping[str, Any] | None = None) -> str:
        """Start the run on the runtime's worker."""
        record = await self.runtime.start_run(thread_id, message, self.runtime.defaults.merged(**options),
                                              dict(secrets or {}), stream_tokens=stream_tokens,
                                              user_id=self.user_id, checkpoint_id=checkpoint_id,
                                              metadata=dict(metadata) if metadata is not None else None)
        self._records[record.run_id] = record
        while len(self._records) > _KEEP_RECORDS:
            self._records.popitem(last=False)
        return record.run_id

    def _record(self, run_id: str) -> RunRecord | None:
        return self._records.get(run_id) or self.runtime.runs.local(run_id)

    async def run_batches(self, thread_id: str, run_id: str, start: int) -> AsyncIterator[list[StreamEvent]]:
        """Replay what the stream bridge holds for the run, then follow it live."""
        bridge = self.runtime.bridge
        if not bridge.has(run_id):
            return  # finished long ago: its events are in the journal (thread.run_events)
        async for batch in bridge.subscribe_batches(run_id, str(start) if start else None):
            events = [item.event for item in batch if isinstance(item, BridgeEvent)]
            if events:
                yield events

    async def wait_run(self, thread_id: str, run_id: str) -> RunOutcome:
        """Wait on the run's record; its outcome."""
        record = self._record(run_id)
        if record is None:
            info = await self.runtime.runs.get(run_id, self.user_id)
            if info is None or info.thread_id != thread_id:
                raise NotFoundError(f"run {run_id!r} not found")
            if info.status in {"pending", "running", "queued"}:  # executed by another process: wait for its row
                info = await self.runtime.runs.wait_stored(run_id, self.user_id) or info
            text = ""
            if info.status == "success":  # finished here long ago, or elsewhere: its answer is in the state
                text = final_text_of_run(list((await self.get_state(thread_id)).get("messages", [])), run_id)
            return RunOutcome(run_id, info.status, stop_reason=info.stop_reason, error=info.error,
                              final_text=text)
        await record.wait()
        status = record.status if record.end_data is not None or record.status != "success" else "error"
        return RunOutcome(run_id, status, record.final_text, record.stop_reason, record.error,
                          dict(record.end_data or {}))

    async def run_status(self, thread_id: str, run_id: str) -> str:
        """The run's status (:class:`NotFoundError` when the thread has no such run of this user)."""
        record = self._record(run_id)
        if record is not None and record.thread_id == thread_id and record.user_id == self.user_id:
            return record.status
        info = await self.runtime.runs.get(run_id, self.user_id)
        if info is None or info.thread_id != thread_id:
            raise NotFoundError(f"run {run_id!r} not found")
        return public_status(info.status)

    async def cancel_run(self, thread_id: str, run_id: str, action: str) -> str:
        """Cancel through the run manager."""
        outcome = await self.runtime.runs.cancel(run_id, action=action, user_id=self.user_id)
        if outcome == CancelOutcome.TAKEN_OVER:  # its owner was gone: recovered, it no longer runs
            return "cancelled"
        if outcome == CancelOutcome.REQUESTED:  # executed by another process: wait until it cancelled the run
            done = await self.runtime.runs.wait_stored(run_id, self.user_id)
            return "cancelled" if done is not None and done.status == "interrupted" else "not_cancellable"
        return "not_cancellable" if outcome == CancelOutcome.NOT_ACTIVE_LOCALLY else str(outcome.value)

    async def run_events(self, thread_id: str, run_id: str | None, event_type: str | None) -> list[dict[str, Any]]:
        """The run journal."""
        return await self.runtime.run_events(thread_id, run_id, user_id=self.user_id, event_type=event_type)

    async def workspace_changes(self, thread_id: str, run_id: str | None) -> dict[str, Any]:
        """The run's workspace review."""
        return await self.runtime.gateway.workspace_changes(self.user_id, thread_id, run_id)

    # -- files and usage -----------------------------------------------------------------
    async def upload(self, thread_id: str, files: list[UploadSource]) -> dict[str, Any]:
        """Copy files into the thread's uploads."""
        return await self.runtime.gateway.upload(self.user_id, thread_id, files)

    async def list_uploads(self, thread_id: str) -> dict[str, Any]:
        """The thread's uploads."""
        return await self.runtime.gateway.list_uploads(self.user_id, thread_id)

    async def delete_upload(self, thread_id: str, filename: str) -> dict[str, Any]:
        """Delete one upload."""
        return await self.runtime.gateway.delete_upload(self.user_id, thread_id, filename)

    async def artifact(self, thread_id: str, path: str) -> tuple[bytes, str]:
        """Read a file of the thread."""
        return await self.runtime.gateway.artifact(self.user_id, thread_id, path)

    async def usage(self, thread_id: str | None, since: Since) -> dict[str, Any]:
        """Usage summary."""
        return await self.runtime.gateway.usage(self.user_id, thread_id, since)

    # -- DeerFlow routes -----------------------------------------------------------------
    async def gateway(self, name: str, *args: Any) -> Any:
        """Call the runtime's gateway (user-scoped answers get this client's user)."""
        method = getattr(self.runtime.gateway, name)
        if name in _USER_SCOPED:
            args = (self.user_id, *args)
        if name in _SYNC_GATEWAY:
            return await asyncio.to_thread(method, *args)
        return await method(*args)

    async def install_skill(self, archive: str | os.PathLike[str]) -> dict[str, Any]:
        """Install a ``.skill`` archive from a local path."""
        return await asyncio.to_thread(self.runtime.gateway.install_skill, self.user_id, archive)

    async def skills(self) -> list[Skill]:
        """The user's skills."""
        return await asyncio.to_thread(self.runtime.skill_manager(self.user_id).scan)

    def local(self, feature: str) -> Any:
        """The runtime's own service for ``feature``."""
        if feature == "skills":
            return self.runtime.skill_manager(self.user_id)
        if feature == "runtime":
            return self.runtime
        if feature == "subagents":
            return self.runtime.subagents
        raise UsageError(f"unknown local feature {feature!r}")

    async def aclose(self) -> None:
        """Close the runtime (runs, database, plug-ins, sandboxes)."""
        await self.runtime.aclose()
