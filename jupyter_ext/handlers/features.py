"""DeerFlow routes: health, models, skills, memory, MCP config, uploads, artifacts, feedback.

Each route calls the same functions as the matching ``DeerFlow`` dict method (so the
HTTP body equals the embedded result), scoped to the requesting user.
"""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import quote

from jupyter_server.auth.decorator import authorized
from pydantic import BaseModel, ConfigDict
from tornado import web

from deerflow_nb.config import validate_id
from jupyter_ext.handlers.base import API, DeerFlowHandler, api_method, http_error
from jupyter_ext.schemas import FeedbackRequest

__all__ = ["ACTIVE_CONTENT_TYPES", "default_handlers"]

#: Served as downloads only: they could run script in the Jupyter origin.
ACTIVE_CONTENT_TYPES = frozenset({"text/html", "application/xhtml+xml", "image/svg+xml"})


class HealthHandler(DeerFlowHandler):
    """``GET /health``."""

    @web.authenticated
    @authorized
    @api_method
    async def get(self) -> None:
        """Liveness plus the database backend and this user's active runs."""
        engine = self.service.engine
        store = await self.service.call(engine.store())
        self.write_json({"status": "ok", "database": store.backend, "user_id": self.user_id,
                         "active_runs": sum(1 for r in engine.runs.active_runs() if r.user_id == self.user_id)})


class ModelsHandler(DeerFlowHandler):
    """``GET /models`` and ``GET /models/{name}`` (same bodies as ``list_models()`` / ``get_model()``)."""

    @web.authenticated
    @authorized
    @api_method
    async def get(self, name: str | None = None) -> None:
        """The configured models, or one of them."""
        from deerflow_nb.models import get_model, list_models

        config = self.service.engine.config
        self.write_json(get_model(name, config) if name else list_models(config))


class _SkillUpdate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    enabled: bool


class SkillsHandler(DeerFlowHandler):
    """``GET /skills``, ``GET /skills/{name}``, ``PUT /skills/{name}`` (``{"enabled": bool}``)."""

    def _manager(self) -> Any:
        return self.service.client._skill_manager_for(self.user_id)

    @web.authenticated
    @authorized
    @api_method
    async def get(self, name: str | None = None) -> None:
        """The skills of the requesting user, or one skill."""
        from deerflow_nb.skills.schemas import SkillsListResponse, skill_response

        manager = self._manager()
        if name:
            skill = await asyncio.to_thread(manager.get, name)
            self.write_json(skill_response(skill, manager.container_root).model_dump())
            return
        skills = await asyncio.to_thread(manager.scan)
        self.write_json(SkillsListResponse(skills=[skill_response(s, manager.container_root)
                                                   for s in skills]).model_dump())

    @web.authenticated
    @authorized
    @api_method
    async def put(self, name: str | None = None) -> None:
        """Enable or disable a skill; returns it."""
        from deerflow_nb.skills.schemas import skill_response

        if not name:
            raise http_error(405, "PUT needs a skill name", "Method Not Allowed")
        body = self.parse(_SkillUpdate)
        manager = self._manager()
        skill = await asyncio.to_thread(manager.set_enabled, name, body.enabled)
        self.service.engine.invalidate()
        self.write_json(skill_response(skill, manager.container_root).model_dump())


class MemoryHandler(DeerFlowHandler):
    """``GET /memory``, ``/memory/config``, ``/memory/status``; ``POST /memory/reload``."""

    def _data(self) -> Any:
        from deerflow_nb.memory.schemas import memory_response

        storage = self.service.client._memory_service.storage(self.user_id)
        return memory_response(storage.document(), storage.facts())

    def _config(self) -> Any:
        from deerflow_nb.memory.schemas import memory_config_response

        service = self.service.client._memory_service
        return memory_config_response(service.config, str(service.root()))

    @web.authenticated
    @authorized
    @api_method
    async def get(self, part: str | None = None) -> None:
        """The memory document, its settings, or both."""
        from deerflow_nb.memory.schemas import MemoryStatusResponse

        if part == "config":
            self.write_json(self._config().model_dump())
        elif part == "status":
            data = await asyncio.to_thread(self._data)
            self.write_json(MemoryStatusResponse(config=self._config(), data=data).model_dump())
        elif part is None:
            self.write_json((await asyncio.to_thread(self._data)).model_dump())
        else:
            raise http_error(404, f"unknown memory route {part!r}", "Not Found")

    @web.authenticated
    @authorized
    @api_method
    async def post(self, part: str | None = None) -> None:
        """``POST /memory/reload``: re-read from disk; returns the document."""
        if part != "reload":
            raise http_error(404, "only POST /memory/reload exists", "Not Found")
        service = self.service.client._memory_service
        await asyncio.to_thread(service.storage(self.user_id).load, force=True)
        service.forget_frozen()
        self.write_json((await asyncio.to_thread(self._data)).model_dump())


class _McpUpdate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    mcp_servers: dict[str, Any]


class McpConfigHandler(DeerFlowHandler):
    """``GET`` / ``PUT /mcp/config`` (``extensions_config.json``; server-wide)."""

    @web.authenticated
    @authorized
    @api_method
    async def get(self) -> None:
        """The MCP servers."""
        self.write_json(await asyncio.to_thread(self.service.client.get_mcp_config))

    @web.authenticated
    @authorized
    @api_method
    async def put(self) -> None:
        """Replace the MCP servers; the agent is rebuilt with the new tools."""
        body = self.parse(_McpUpdate)
        self.write_json(await asyncio.to_thread(self.service.client.update_mcp_config, body.mcp_servers))


class UploadsHandler(DeerFlowHandler):
    """``POST /threads/{id}/uploads`` (multipart ``files``), ``GET .../uploads/list``, ``DELETE .../{name}``."""

    async def _uploads(self, thread_id: str) -> Any:
        from deerflow_nb.uploads import ThreadUploads

        engine = self.service.engine
        store = await self.service.call(engine.store())
        await self.service.call(store.threads.get_or_create(validate_id(thread_id, "thread_id"), self.user_id))
        return ThreadUploads(engine.paths, self.user_id, thread_id)

    @web.authenticated
    @authorized
    @api_method
    async def post(self, thread_id: str, filename: str | None = None) -> None:
        """Store the uploaded files (all or nothing)."""
        files = [(f["filename"], f["body"]) for f in self.request.files.get("files", [])]
        if not files:
            raise http_error(422, "no files: send multipart/form-data with one or more 'files' parts",
                             "Unprocessable Entity")
        uploads = await self._uploads(thread_id)
        self.write_json(await asyncio.to_thread(uploads.upload, files))

    @web.authenticated
    @authorized
    @api_method
    async def get(self, thread_id: str, filename: str | None = None) -> None:
        """``GET .../uploads/list``."""
        if filename != "list":
            raise http_error(404, "use GET /threads/{id}/uploads/list", "Not Found")
        uploads = await self._uploads(thread_id)
        self.write_json(await asyncio.to_thread(uploads.list))

    @web.authenticated
    @authorized
    @api_method
    async def delete(self, thread_id: str, filename: str | None = None) -> None:
        """Delete one upload."""
        if not filename:
            raise http_error(405, "DELETE needs a file name", "Method Not Allowed")
        uploads = await self._uploads(thread_id)
        self.write_json(await asyncio.to_thread(uploads.delete, filename))


class ArtifactHandler(DeerFlowHandler):
    """``GET /threads/{id}/artifacts/{path}``: a file under the thread's user-data only."""

    _mime: str | None = None

    def finish(self, chunk: Any = None) -> Any:
        """Keep the file's content type (``APIHandler.finish`` would force JSON)."""
        if self._mime is None:
            return super().finish(chunk)
        self.update_api_activity()
        return web.RequestHandler.finish(self, chunk)

    @web.authenticated
    @authorized
    @api_method
    async def get(self, thread_id: str, path: str) -> None:
        """The file; active content types are always attachments; ``?download=true`` forces it."""
        from deerflow_nb.uploads import read_artifact

        engine = self.service.engine
        store = await self.service.call(engine.store())
        await self.service.call(store.threads.get(thread_id, self.user_id))
        virtual = path if path.startswith("/") else f"/{path}"
        if not virtual.startswith("/mnt/user-data/"):
            virtual = f"/mnt/user-data/{virtual.lstrip('/')}"
        content, mime = await asyncio.to_thread(read_artifact, engine.paths, self.user_id, thread_id, virtual)
        self._mime = mime
        self.set_header("Content-Type", mime)
        self.set_header("X-Content-Type-Options", "nosniff")
        name = virtual.rsplit("/", 1)[-1]
        if mime.split(";")[0].strip() in ACTIVE_CONTENT_TYPES or self.get_query_argument("download", "") == "true":
            self.set_header("Content-Disposition", f"attachment; filename*=UTF-8''{quote(name)}")
        self.finish(content)


class FeedbackHandler(DeerFlowHandler):
    """``POST`` / ``GET /threads/{id}/runs/{run_id}/feedback``."""

    async def _check(self, thread_id: str, run_id: str) -> Any:
        info = await self.service.call(self.service.engine.runs.get(run_id, self.user_id))
        if info is None or info.thread_id != thread_id:
            raise http_error(404, f"run {run_id!r} not found", "Not Found")
        return await self.service.call(self.service.engine.store())

    @web.authenticated
    @authorized
    @api_method
    async def post(self, thread_id: str, run_id: str) -> None:
        """Rate a run (+1 / -1) with an optional comment."""
        body = self.parse(FeedbackRequest)
        store = await self._check(thread_id, run_id)
        self.write_json(await self.service.call(store.feedback.add(run_id, thread_id, self.user_id, body.rating,
                                                                   body.comment)))

    @web.authenticated
    @authorized
    @api_method
    async def get(self, thread_id: str, run_id: str) -> None:
        """The requesting user's ratings of the run."""
        store = await self._check(thread_id, run_id)
        self.write_json(await self.service.call(store.feedback.list(run_id, self.user_id)))


_T = r"(?P<thread_id>[^/]+)"
default_handlers = [
    (rf"/{API}/health", HealthHandler),
    (rf"/{API}/models", ModelsHandler),
    (rf"/{API}/models/(?P<name>[^/]+)", ModelsHandler),
    (rf"/{API}/skills", SkillsHandler),
    (rf"/{API}/skills/(?P<name>[^/]+)", SkillsHandler),
    (rf"/{API}/memory", MemoryHandler),
    (rf"/{API}/memory/(?P<part>[^/]+)", MemoryHandler),
    (rf"/{API}/mcp/config", McpConfigHandler),
    (rf"/{API}/threads/{_T}/uploads", UploadsHandler),
    (rf"/{API}/threads/{_T}/uploads/(?P<filename>[^/]+)", UploadsHandler),
    (rf"/{API}/threads/{_T}/artifacts/(?P<path>.+)", ArtifactHandler),
    (rf"/{API}/threads/{_T}/runs/(?P<run_id>[^/]+)/feedback", FeedbackHandler),
]
