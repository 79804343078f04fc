"""``Gateway``: the answers of DeerFlow's own routes, computed once for every caller.

The server extension's handlers and the embedded client's in-process backend call
these methods (scoped to a ``user_id``), so an HTTP body equals the embedded result.
Blocking file work runs in a worker thread; every coroutine runs on the runtime's loop.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from deerflow_nb.errors import NotFoundError

if TYPE_CHECKING:
    from deerflow_nb.runtime.engine import Runtime
    from deerflow_nb.uploads import ThreadUploads, UploadSource
    from deerflow_nb.usage import Since

__all__ = ["Gateway", "empty_changes"]


def empty_changes(thread_id: str, run_id: str | None = None, status: str | None = None) -> dict[str, Any]:
    """The ``workspace_changes`` payload of a run that changed nothing (or of a thread without runs)."""
    return {"run_id": run_id, "thread_id": thread_id, "status": status, "finished_at": None,
            "changes": [], "truncated": False}


class Gateway:
    """One runtime's DeerFlow routes (models, skills, memory, MCP, files, usage, journal, health)."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime

    # -- models --------------------------------------------------------------------------
    def list_models(self) -> dict[str, Any]:
        """``{"models": [...]}`` (``GET /models``)."""
        from deerflow_nb.models import list_models

        return list_models(self.runtime.config)

    def get_model(self, name: str) -> dict[str, Any]:
        """One model (``GET /models/{name}``)."""
        from deerflow_nb.models import get_model

        return get_model(name, self.runtime.config)

    # -- skills --------------------------------------------------------------------------
    def list_skills(self, user_id: str) -> dict[str, Any]:
        """``{"skills": [...]}`` (``GET /skills``)."""
        from deerflow_nb.skills.schemas import SkillsListResponse, skill_response

        manager = self.runtime.skill_manager(user_id)
        return SkillsListResponse(skills=[skill_response(s, manager.container_root)
                                          for s in manager.scan()]).model_dump()

    def get_skill(self, user_id: str, name: str) -> dict[str, Any]:
        """One skill (``GET /skills/{name}``)."""
        from deerflow_nb.skills.schemas import skill_response

        manager = self.runtime.skill_manager(user_id)
        return skill_response(manager.get(name), manager.container_root).model_dump()

    def update_skill(self, user_id: str, name: str, enabled: bool) -> dict[str, Any]:
        """Enable or disable a skill (``PUT /skills/{name}``); returns it."""
        from deerflow_nb.skills.schemas import skill_response

        manager = self.runtime.skill_manager(user_id)
        skill = manager.set_enabled(name, enabled)
        self.runtime.invalidate()
        return skill_response(skill, manager.container_root).model_dump()

    def install_skill(self, user_id: str, archive: str | os.PathLike[str]) -> dict[str, Any]:
        """Install a ``.skill`` archive (``POST /skills/install``); all or nothing."""
        from deerflow_nb.skills.schemas import SkillInstallResponse

        skill = self.runtime.skill_manager(user_id).install(archive)
        self.runtime.invalidate()
        return SkillInstallResponse(success=True, skill_name=skill.name,
                                    message=f"Skill {skill.name!r} installed").model_dump()

    def uninstall_skill(self, user_id: str, name: str) -> dict[str, Any]:
        """Remove a custom skill (``DELETE /skills/{name}``)."""
        self.runtime.skill_manager(user_id).uninstall(name)
        self.runtime.invalidate()
        return {"success": True, "skill_name": name}

    # -- memory --------------------------------------------------------------------------
    def _memory_data(self, user_id: str) -> Any:
        from deerflow_nb.memory.schemas import memory_response

        storage = self.runtime.memory.storage(user_id)
        return memory_response(storage.document(), storage.facts())

    def _memory_config(self) -> Any:
        from deerflow_nb.memory.schemas import memory_config_response

        service = self.runtime.memory
        return memory_config_response(service.config, str(service.root()))

    def get_memory(self, user_id: str) -> dict[str, Any]:
        """The memory document (``GET /memory``)."""
        return dict(self._memory_data(user_id).model_dump())

    def reload_memory(self, user_id: str) -> dict[str, Any]:
        """Re-read memory from disk (``POST /memory/reload``); returns the document."""
        self.runtime.memory.storage(user_id).load(force=True)
        self.runtime.memory.forget_frozen()
        return self.get_memory(user_id)

    def get_memory_config(self) -> dict[str, Any]:
        """The memory settings (``GET /memory/config``)."""
        return dict(self._memory_config().model_dump())

    def get_memory_status(self, user_id: str) -> dict[str, Any]:
        """``{"config", "data"}`` (``GET /memory/status``)."""
        from deerflow_nb.memory.schemas import MemoryStatusResponse

        return MemoryStatusResponse(config=self._memory_config(), data=self._memory_data(user_id)).model_dump()

    # -- MCP -----------------------------------------------------------------------------
    def get_mcp_config(self) -> dict[str, Any]:
        """``{"mcp_servers": {...}}`` (``GET /mcp/config``)."""
        return self.runtime.mcp.get_mcp_config()

    async def update_mcp_config(self, servers: Mapping[str, Any]) -> dict[str, Any]:
        """Replace the MCP servers (``PUT /mcp/config``); the agent is rebuilt with the new tools."""
        return await self.runtime.mcp.aupdate_mcp_config(servers)

    # -- thread files --------------------------------------------------------------------
    async def uploads(self, user_id: str, thread_id: str) -> ThreadUploads:
        """The thread's uploads folder (the thread is created if new; another user's is not found)."""
        from deerflow_nb.config import validate_id
        from deerflow_nb.uploads import ThreadUploads

        store = await self.runtime.store()
        await store.create_or_get_thread(validate_id(thread_id, "thread_id"), user_id)
        return ThreadUploads(self.runtime.paths, user_id, thread_id)

    async def upload(self, user_id: str, thread_id: str, files: Sequence[UploadSource]) -> dict[str, Any]:
        """Store files in the thread's uploads (``POST /threads/{id}/uploads``); all or nothing."""
        uploads = await self.uploads(user_id, thread_id)
        return await asyncio.to_thread(uploads.upload, list(files))

    async def list_uploads(self, user_id: str, thread_id: str) -> dict[str, Any]:
        """``{"files", "count"}`` (``GET /threads/{id}/uploads/list``)."""
        uploads = await self.uploads(user_id, thread_id)
        return await asyncio.to_thread(uploads.list)

    async def delete_upload(self, user_id: str, thread_id: str, filename: str) -> dict[str, Any]:
        """Delete one upload and its Markdown twin (``DELETE /threads/{id}/uploads/{name}``)."""
        uploads = await self.uploads(user_id, thread_id)
        return await asyncio.to_thread(uploads.delete, filename)

    async def artifact(self, user_id: str, thread_id: str, path: str) -> tuple[bytes, str]:
        """``(content, mime)`` of a ``/mnt/user-data/...`` file of the thread (escapes are refused)."""
        from deerflow_nb.uploads import read_artifact

        await self.uploads(user_id, thread_id)
        return await asyncio.to_thread(read_artifact, self.runtime.paths, user_id, thread_id, path)

    # -- usage and journal ---------------------------------------------------------------
    async def usage(self, user_id: str, thread_id: str | None = None, since: Since = None) -> dict[str, Any]:
        """Token usage and cost of the user's (or one thread's) runs, overall and per model (``GET /usage``)."""
        from deerflow_nb.usage import parse_since, summarize

        start = parse_since(since)
        records = await asyncio.to_thread(self.runtime.usage.records, user_id, thread_id=thread_id, since=start)
        return summarize(records, self.runtime.config, thread_id=thread_id, since=start)

    async def workspace_changes(self, user_id: str, thread_id: str, run_id: str | None = None) -> dict[str, Any]:
        """What a run (default: the latest) changed in ``workspace`` and ``outputs``."""
        store = await self.runtime.store()
        await store.get_thread(thread_id, user_id)
        if run_id is None:
            latest = await store.runs.list_by_thread(thread_id, user_id, limit=1)
            if not latest:
                return empty_changes(thread_id)
            info = latest[0]
        else:
            found = await store.runs.get(run_id, user_id)
            if found is None or found.thread_id != thread_id:
                raise NotFoundError(f"run {run_id!r} not found on thread {thread_id!r}")
            info = found
        entries = await store.events.list(user_id, run_id=info.run_id, event_type="workspace_changes")
        if entries:
            return dict(entries[-1].payload)
        return empty_changes(thread_id, info.run_id, info.status)  # recorded only when files changed

    async def health(self, user_id: str) -> dict[str, Any]:
        """Liveness, the database backend and the user's active runs (``GET /health``)."""
        store = await self.runtime.store()
        return {"status": "ok", "database": store.backend, "user_id": user_id,
                "active_runs": sum(1 for r in self.runtime.runs.active_runs() if r.user_id == user_id)}
