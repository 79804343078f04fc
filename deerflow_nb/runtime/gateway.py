"""``Gateway``: the answers of DeerFlow's own routes, computed once for every caller.

The server extension's handlers and the embedded client's in-process backend call
these methods (scoped to a ``user_id``), so an HTTP body equals the embedded result.
Blocking file work runs in a worker thread; every coroutine runs on the runtime's loop.
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, ValidationError

from deerflow_nb.errors import NotFoundError, UsageError

if TYPE_CHECKING:
    from deerflow_nb.memory.storage import MemoryStorage
    from deerflow_nb.runtime.engine import Runtime
    from deerflow_nb.uploads import ThreadUploads, UploadSource
    from deerflow_nb.usage import Since

__all__ = ["MAX_SEARCH_LIMIT", "Gateway", "check_fact_id", "check_message", "check_search", "empty_changes",
           "validated"]

#: The most facts one memory search returns.
MAX_SEARCH_LIMIT = 1000
_FACT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
M = TypeVar("M", bound=BaseModel)


def validated(model: type[M], data: M | Mapping[str, Any]) -> M:
    """``data`` as ``model`` (strict); :class:`UsageError` naming the bad field otherwise.

    The HTTP handlers validate the same models first (422 naming the field), so an embedded
    call and a request body are refused alike, before anything is stored.
    """
    if isinstance(data, model):
        return data
    if not isinstance(data, Mapping):
        raise UsageError(f"body: must be an object, got {json_type(data)}")
    try:
        return model.model_validate(data, strict=True)
    except ValidationError as exc:
        raise UsageError(validation_message(exc)) from None


def json_type(value: Any) -> str:
    """The JSON name of ``value``'s type (``object``, ``array``, ``string``, ...)."""
    for kinds, name in ((Mapping, "object"), (bool, "boolean"), (int | float, "number"), (str, "string"),
                        (list | tuple, "array"), (type(None), "null")):
        if isinstance(value, kinds):
            return name
    return type(value).__name__


def validation_message(exc: ValidationError) -> str:
    """``field: problem; ...`` of a refused body: the message of both modes (and of the 422 answer)."""
    return "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'body'}: {e['msg']}" for e in exc.errors())


def check_search(query: Any, limit: Any) -> None:
    """:class:`UsageError` unless ``query`` is a string and ``limit`` an integer from 1 to :data:`MAX_SEARCH_LIMIT`.

    ``agent.memory.search`` checks before sending too, so ``5`` or ``"5"`` is refused alike in both modes
    (a query string would carry either as text).
    """
    if not isinstance(query, str):
        raise UsageError("query: must be a string")
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_SEARCH_LIMIT:
        raise UsageError(f"limit: must be an integer between 1 and {MAX_SEARCH_LIMIT}")


def check_message(message: Any) -> None:
    """:class:`UsageError` unless ``message`` (of a memory preview) is a string."""
    if not isinstance(message, str):
        raise UsageError("message: must be a string")


def check_fact_id(fact_id: Any) -> str:
    """``fact_id``; :class:`UsageError` unless it is a fact id string (``agent.memory`` checks before sending)."""
    if not isinstance(fact_id, str) or not _FACT_ID.match(fact_id):
        raise UsageError(f"fact_id: invalid fact id {fact_id!r}: use letters, digits, '_' or '-'")
    return fact_id


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

    # -- memory editing (agent.memory) ---------------------------------------------------
    def _storage(self, user_id: str) -> MemoryStorage:
        return self.runtime.memory.storage(user_id)

    def _changed(self) -> None:
        self.runtime.memory.forget_frozen()  # new threads see the edit; running ones keep their block

    def memory_data(self, user_id: str) -> dict[str, Any]:
        """``memory.json`` with its revision (``GET /memory/data``)."""
        return self._storage(user_id).document()

    def list_memory_facts(self, user_id: str) -> dict[str, Any]:
        """``{"facts": [...]}``, oldest first (``GET /memory/facts``)."""
        return {"facts": [f.to_dict() for f in self._storage(user_id).facts()]}

    def search_memory_facts(self, user_id: str, query: str, limit: int = 10) -> dict[str, Any]:
        """``{"facts": [...]}`` relevant to ``query``, best first (``GET /memory/facts?query=&limit=``)."""
        check_search(query, limit)
        return {"facts": [f.to_dict() for f in self._storage(user_id).search(query, limit)]}

    def memory_preview(self, user_id: str, message: str = "") -> dict[str, Any]:
        """``{"memory": block or None}``: what a new thread starting with ``message`` would get."""
        check_message(message)
        return {"memory": self.runtime.memory.injection_for(user_id, message)}

    def export_memory(self, user_id: str) -> dict[str, Any]:
        """Summaries and facts as one JSON-ready dict (``GET /memory/export``)."""
        return self._storage(user_id).export()

    def import_memory(self, user_id: str, data: Any) -> dict[str, Any]:
        """Replace memory with an export (``POST /memory/import``); validated first; returns the data."""
        from deerflow_nb.memory.schemas import MemoryImportRequest

        body = validated(MemoryImportRequest, data)
        self._storage(user_id).import_(body.model_dump(exclude_none=True))
        self._changed()
        return self.memory_data(user_id)

    def memory_section(self) -> dict[str, Any]:
        """Every key of the ``memory`` config section in effect (``GET /memory/section``)."""
        return self.runtime.memory.config.model_dump(mode="json")

    def memory_queue_status(self, user_id: str) -> dict[str, Any]:
        """The update queue and the store (``GET /memory/queue``)."""
        from deerflow_nb.memory.schemas import MemoryQueueStatus

        service, storage = self.runtime.memory, self._storage(user_id)
        queue, data = service.queue, storage.document()
        return MemoryQueueStatus(
            enabled=service.config.enabled, mode=service.config.mode, pending_updates=queue.pending,
            processing=queue.processing, processed=queue.processed, last_error=queue.last_error,
            last_flush_at=queue.last_flush_at, facts=len(storage.facts()), revision=data["revision"],
            last_updated=data["lastUpdated"], path=str(storage.memory_file)).model_dump()

    def add_memory_fact(self, user_id: str, data: Any) -> dict[str, Any]:
        """Remember a fact (``POST /memory/facts``); known content returns the existing fact."""
        from deerflow_nb.memory.schemas import FactCreateRequest

        body = validated(FactCreateRequest, data)
        fact = self._storage(user_id).add_fact(body.content, category=body.category, confidence=body.confidence,
                                               source="manual")
        self._changed()
        return fact.to_dict()

    def update_memory_fact(self, user_id: str, fact_id: str, data: Any) -> dict[str, Any]:
        """Change a fact (``PATCH /memory/facts/{id}``); 404 unknown, 409 on a revision mismatch."""
        from deerflow_nb.memory.schemas import FactUpdateRequest
        from deerflow_nb.memory.storage import CACHED

        body = validated(FactUpdateRequest, data)
        expected = body.expected_revision if "expected_revision" in body.model_fields_set else CACHED
        fact = self._storage(user_id).update_fact(check_fact_id(fact_id), content=body.content,
                                                  category=body.category, confidence=body.confidence,
                                                  expected_revision=expected)
        self._changed()
        return fact.to_dict()

    def delete_memory_fact(self, user_id: str, fact_id: str, data: Any = None) -> dict[str, Any]:
        """Forget a fact (``DELETE /memory/facts/{id}``); 404 unknown, 409 on a revision mismatch."""
        from deerflow_nb.memory.schemas import FactDeleteRequest, FactDeleteResponse
        from deerflow_nb.memory.storage import CACHED

        body = validated(FactDeleteRequest, data or {})
        expected = body.expected_revision if "expected_revision" in body.model_fields_set else CACHED
        self._storage(user_id).delete_fact(check_fact_id(fact_id), expected_revision=expected)
        self._changed()
        return FactDeleteResponse(success=True, fact_id=fact_id).model_dump()

    def set_memory_summary(self, user_id: str, section: str, data: Any) -> dict[str, Any]:
        """Replace one summary (``PUT /memory/summaries/{section}``); returns the data."""
        from deerflow_nb.memory.document import section_of
        from deerflow_nb.memory.schemas import SummaryUpdateRequest

        body = validated(SummaryUpdateRequest, data)
        section_of(section)  # an unknown section is refused before anything is written
        document = self._storage(user_id).update_summary({section: body.text})
        self._changed()
        return document

    def clear_memory(self, user_id: str) -> dict[str, Any]:
        """Forget every summary and fact (``DELETE /memory``); returns the (empty) data."""
        self._storage(user_id).clear()
        self._changed()
        return self.memory_data(user_id)

    async def flush_memory(self) -> dict[str, Any]:
        """Process the queued conversations now (``POST /memory/flush``): ``{"processed": n}``."""
        return {"processed": int(await self.runtime.memory.queue.flush())}

    # -- MCP -----------------------------------------------------------------------------
    def get_mcp_config(self) -> dict[str, Any]:
        """``{"mcp_servers": {...}}`` (``GET /mcp/config``)."""
        return self.runtime.mcp.get_mcp_config()

    async def update_mcp_config(self, servers: Mapping[str, Any]) -> dict[str, Any]:
        """Replace the MCP servers (``PUT /mcp/config``); the agent is rebuilt with the new tools."""
        return await self.runtime.mcp.aupdate_mcp_config(servers)

    async def list_mcp_tools(self) -> dict[str, Any]:
        """``{"tools": [...], "errors": {...}}`` (``GET /mcp/tools``): discovered where the agent runs."""
        return await asyncio.to_thread(self.runtime.mcp.list_tools)

    def reload_mcp(self) -> dict[str, Any]:
        """Forget the discovered tools (``POST /mcp/reload``); the next run or listing discovers them again."""
        from deerflow_nb.mcp.schemas import McpReloadResponse

        self.runtime.mcp.reload()
        return McpReloadResponse(success=True).model_dump()

    # -- subagents -----------------------------------------------------------------------
    def list_subagents(self) -> dict[str, Any]:
        """``{"subagents": [...]}``: built-in and custom types with their budgets (``GET /subagents``)."""
        from deerflow_nb.subagents import resolve_limits, resolve_subagents
        from deerflow_nb.subagents.schemas import SubagentInfo, SubagentsResponse

        config = self.runtime.config
        limits = resolve_limits(config)
        return SubagentsResponse(subagents=[
            SubagentInfo(name=s.name, description=s.description, tools=s.tools, model=s.model,
                         max_turns=s.max_turns or limits.max_turns,
                         timeout_seconds=s.timeout_seconds or limits.timeout_seconds,
                         token_budget=s.token_budget or limits.token_budget)
            for s in resolve_subagents(config).values()]).model_dump()

    # -- scheduled tasks (agent.schedules) -----------------------------------------------
    async def list_scheduled_tasks(self, user_id: str) -> dict[str, Any]:
        """``{"tasks": [...]}`` (``GET /scheduled-tasks``)."""
        return await self.runtime.schedules.list_tasks(user_id)

    async def create_scheduled_task(self, user_id: str, data: Any) -> dict[str, Any]:
        """Store a schedule (``POST /scheduled-tasks``); validated before anything is written."""
        return await self.runtime.schedules.create(user_id, data)

    async def get_scheduled_task(self, user_id: str, task_id: str) -> dict[str, Any]:
        """One task (``GET /scheduled-tasks/{id}``)."""
        return await self.runtime.schedules.get(user_id, task_id)

    async def pause_scheduled_task(self, user_id: str, task_id: str) -> dict[str, Any]:
        """Stop its ticks (``POST /scheduled-tasks/{id}/pause``)."""
        return await self.runtime.schedules.pause(user_id, task_id)

    async def resume_scheduled_task(self, user_id: str, task_id: str) -> dict[str, Any]:
        """Tick again from now on (``POST /scheduled-tasks/{id}/resume``)."""
        return await self.runtime.schedules.resume(user_id, task_id)

    async def delete_scheduled_task(self, user_id: str, task_id: str) -> dict[str, Any]:
        """Delete it and its history (``DELETE /scheduled-tasks/{id}``)."""
        return await self.runtime.schedules.delete(user_id, task_id)

    async def trigger_scheduled_task(self, user_id: str, task_id: str) -> dict[str, Any]:
        """Run it now (``POST /scheduled-tasks/{id}/trigger``); 409 while its previous run is active."""
        return await self.runtime.schedules.trigger(user_id, task_id)

    async def list_scheduled_task_runs(self, user_id: str, task_id: str, limit: int = 20) -> dict[str, Any]:
        """``{"runs": [...]}``, newest first (``GET /scheduled-tasks/{id}/runs?limit=``)."""
        return await self.runtime.schedules.runs(user_id, task_id, limit)

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
