"""DeerFlow routes: health, models, skills, memory, MCP, subagents, uploads, artifacts, feedback.

Each route calls the same functions as the matching ``DeerFlow`` dict method (so the
HTTP body equals the embedded result), scoped to the requesting user.
"""

from __future__ import annotations

import asyncio
import math
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

from jupyter_server.auth.decorator import authorized
from pydantic import BaseModel, ConfigDict
from tornado import web

from deerflow_nb.runtime.gateway import MAX_SEARCH_LIMIT
from jupyter_ext.handlers.base import API, DeerFlowHandler, api_method, http_error
from jupyter_ext.schemas import (
    FactCreateRequest,
    FactDeleteRequest,
    FactUpdateRequest,
    FeedbackRequest,
    MemoryImportRequest,
    SkillUpdateRequest,
    SummaryUpdateRequest,
)

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
        self.write_json(await self.service.call(self.service.gateway.health(self.user_id)))


class ModelsHandler(DeerFlowHandler):
    """``GET /models`` and ``GET /models/{name}`` (same bodies as ``list_models()`` / ``get_model()``)."""

    @web.authenticated
    @authorized
    @api_method
    async def get(self, name: str | None = None) -> None:
        """The configured models, or one of them."""
        gateway = self.service.gateway
        self.write_json(gateway.get_model(name) if name else gateway.list_models())


class SkillsHandler(DeerFlowHandler):
    """``GET /skills``, ``GET`` / ``PUT`` (``{"enabled": bool}``) / ``DELETE /skills/{name}``."""

    @web.authenticated
    @authorized
    @api_method
    async def get(self, name: str | None = None) -> None:
        """The skills of the requesting user, or one skill."""
        gateway = self.service.gateway
        if name:
            self.write_json(await asyncio.to_thread(gateway.get_skill, self.user_id, name))
        else:
            self.write_json(await asyncio.to_thread(gateway.list_skills, self.user_id))

    @web.authenticated
    @authorized
    @api_method
    async def put(self, name: str | None = None) -> None:
        """Enable or disable a skill; returns it."""
        if not name:
            raise http_error(405, "PUT needs a skill name", "Method Not Allowed")
        body = self.parse(SkillUpdateRequest)
        self.write_json(await asyncio.to_thread(self.service.gateway.update_skill, self.user_id, name, body.enabled))

    @web.authenticated
    @authorized
    @api_method
    async def delete(self, name: str | None = None) -> None:
        """Remove a custom skill."""
        if not name:
            raise http_error(405, "DELETE needs a skill name", "Method Not Allowed")
        self.write_json(await asyncio.to_thread(self.service.gateway.uninstall_skill, self.user_id, name))


class SkillInstallHandler(DeerFlowHandler):
    """``POST /skills/install`` (multipart ``file``: a ``.skill`` archive)."""

    @web.authenticated
    @authorized
    @api_method
    async def post(self) -> None:
        """Install the archive as a custom skill of the requesting user (all or nothing)."""
        parts = self.request.files.get("file", [])
        if len(parts) != 1:
            raise http_error(422, "send multipart/form-data with exactly one 'file' part", "Unprocessable Entity")
        name = os.path.basename(parts[0]["filename"] or "upload.skill")

        def install() -> dict[str, Any]:
            with tempfile.TemporaryDirectory(prefix="deerflow-skill-") as folder:
                archive = Path(folder) / name
                archive.write_bytes(parts[0]["body"])
                return self.service.gateway.install_skill(self.user_id, archive)

        self.write_json(await asyncio.to_thread(install))


class MemoryHandler(DeerFlowHandler):
    """``GET /memory`` and ``/memory/{part}``, ``POST /memory/reload`` and ``/memory/flush``, ``DELETE /memory``."""

    @web.authenticated
    @authorized
    @api_method
    async def get(self, part: str | None = None) -> None:
        """The memory document, its settings, its data, an export, a preview or the queue status."""
        gateway, user = self.service.gateway, self.user_id
        message = self.get_query_argument("message", "")
        answers: dict[str | None, Callable[[], dict[str, Any]]] = {
            None: lambda: gateway.get_memory(user), "config": gateway.get_memory_config,
            "status": lambda: gateway.get_memory_status(user), "data": lambda: gateway.memory_data(user),
            "export": lambda: gateway.export_memory(user), "section": gateway.memory_section,
            "queue": lambda: gateway.memory_queue_status(user),
            "preview": lambda: gateway.memory_preview(user, message)}
        answer = answers.get(part)
        if answer is None:
            raise http_error(404, f"unknown memory route {part!r}", "Not Found")
        self.write_json(await asyncio.to_thread(answer))

    @web.authenticated
    @authorized
    @api_method
    async def post(self, part: str | None = None) -> None:
        """``POST /memory/reload`` (re-read from disk; the document) or ``/memory/flush`` (process the queue)."""
        if part == "reload":
            self.write_json(await asyncio.to_thread(self.service.gateway.reload_memory, self.user_id))
        elif part == "flush":
            self.write_json(await self.service.call(self.service.gateway.flush_memory()))
        else:
            raise http_error(404, "only POST /memory/reload, /memory/flush and /memory/import exist", "Not Found")

    @web.authenticated
    @authorized
    @api_method
    async def delete(self, part: str | None = None) -> None:
        """Forget every summary and fact; returns the (empty) data."""
        if part is not None:
            raise http_error(405, "DELETE exists on /memory only", "Method Not Allowed")
        self.write_json(await asyncio.to_thread(self.service.gateway.clear_memory, self.user_id))


class MemoryImportHandler(DeerFlowHandler):
    """``POST /memory/import``: replace memory with an export."""

    @web.authenticated
    @authorized
    @api_method
    async def post(self) -> None:
        """Replace summaries and facts with an export (validated first); returns the data."""
        body = self.parse(MemoryImportRequest)
        self.write_json(await asyncio.to_thread(self.service.gateway.import_memory, self.user_id, body))


class MemoryFactsHandler(DeerFlowHandler):
    """``GET /memory/facts`` (``?query=&limit=``: a search) and ``POST /memory/facts``."""

    @web.authenticated
    @authorized
    @api_method
    async def get(self) -> None:
        """Every fact, oldest first, or the facts relevant to ``?query=`` (best first, ``?limit=`` 1-1000)."""
        gateway, query = self.service.gateway, self.get_query_argument("query", None)
        limit = self.query_int("limit", 10, ge=1, le=MAX_SEARCH_LIMIT)  # validated even when unused
        if query is None:
            self.write_json(await asyncio.to_thread(gateway.list_memory_facts, self.user_id))
            return
        self.write_json(await asyncio.to_thread(gateway.search_memory_facts, self.user_id, query, limit))

    @web.authenticated
    @authorized
    @api_method
    async def post(self) -> None:
        """Remember a fact (known content returns the existing fact)."""
        body = self.parse(FactCreateRequest)
        self.write_json(await asyncio.to_thread(self.service.gateway.add_memory_fact, self.user_id, body))


class MemoryFactHandler(DeerFlowHandler):
    """``PATCH`` / ``DELETE /memory/facts/{fact_id}`` (``expected_revision``: 409 when it changed)."""

    @web.authenticated
    @authorized
    @api_method
    async def patch(self, fact_id: str) -> None:
        """Change a fact's content, category or confidence; returns it."""
        body = self.parse(FactUpdateRequest)
        self.write_json(await asyncio.to_thread(self.service.gateway.update_memory_fact, self.user_id, fact_id,
                                                body))

    @web.authenticated
    @authorized
    @api_method
    async def delete(self, fact_id: str) -> None:
        """Forget a fact."""
        body = self.parse(FactDeleteRequest)
        self.write_json(await asyncio.to_thread(self.service.gateway.delete_memory_fact, self.user_id, fact_id,
                                                body))


class MemorySummaryHandler(DeerFlowHandler):
    """``PUT /memory/summaries/{section}`` (``workContext``, ``topOfMind``, ``recentMonths``, ...)."""

    @web.authenticated
    @authorized
    @api_method
    async def put(self, section: str) -> None:
        """Replace one summary; returns the data."""
        body = self.parse(SummaryUpdateRequest)
        self.write_json(await asyncio.to_thread(self.service.gateway.set_memory_summary, self.user_id, section,
                                                body))


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
        self.write_json(await asyncio.to_thread(self.service.gateway.get_mcp_config))

    @web.authenticated
    @authorized
    @api_method
    async def put(self) -> None:
        """Replace the MCP servers; the agent is rebuilt with the new tools (admins only under JupyterHub)."""
        self.require_admin("PUT /mcp/config")
        body = self.parse(_McpUpdate)
        self.write_json(await self.service.call(self.service.gateway.update_mcp_config(body.mcp_servers)))


class McpToolsHandler(DeerFlowHandler):
    """``GET /mcp/tools``: the tools the agent gets (discovered on the server) and the servers that failed."""

    @web.authenticated
    @authorized
    @api_method
    async def get(self) -> None:
        """``{"tools": [...], "errors": {...}}``."""
        self.write_json(await self.service.call(self.service.gateway.list_mcp_tools()))


class McpReloadHandler(DeerFlowHandler):
    """``POST /mcp/reload``: forget the discovered tools."""

    @web.authenticated
    @authorized
    @api_method
    async def post(self) -> None:
        """The next run or listing discovers the tools again (admins only under JupyterHub)."""
        self.require_admin("POST /mcp/reload")
        self.write_json(await asyncio.to_thread(self.service.gateway.reload_mcp))


class SubagentsHandler(DeerFlowHandler):
    """``GET /subagents``: the subagent types the lead can delegate to."""

    @web.authenticated
    @authorized
    @api_method
    async def get(self) -> None:
        """Built-in and custom subagents with their tools, model and budgets."""
        self.write_json(await asyncio.to_thread(self.service.gateway.list_subagents))


class UploadsHandler(DeerFlowHandler):
    """``POST /threads/{id}/uploads`` (multipart ``files``), ``GET .../uploads/list``, ``DELETE .../{name}``."""

    @web.authenticated
    @authorized
    @api_method
    async def post(self, thread_id: str, filename: str | None = None) -> None:
        """Store the uploaded files (all or nothing)."""
        files = [(f["filename"], f["body"]) for f in self.request.files.get("files", [])]
        if not files:
            raise http_error(422, "no files: send multipart/form-data with one or more 'files' parts",
                             "Unprocessable Entity")
        self.write_json(await self.service.call(self.service.gateway.upload(self.user_id, thread_id, files)))

    @web.authenticated
    @authorized
    @api_method
    async def get(self, thread_id: str, filename: str | None = None) -> None:
        """``GET .../uploads/list``."""
        if filename != "list":
            raise http_error(404, "use GET /threads/{id}/uploads/list", "Not Found")
        self.write_json(await self.service.call(self.service.gateway.list_uploads(self.user_id, thread_id)))

    @web.authenticated
    @authorized
    @api_method
    async def delete(self, thread_id: str, filename: str | None = None) -> None:
        """Delete one upload."""
        if not filename:
            raise http_error(405, "DELETE needs a file name", "Method Not Allowed")
        self.write_json(await self.service.call(self.service.gateway.delete_upload(self.user_id, thread_id,
                                                                                   filename)))


def _since(raw: str | None) -> float | None:
    """``?since=`` as UNIX seconds (422 naming it otherwise)."""
    if not raw:
        return None
    try:
        value = float(raw)
    except ValueError:
        raise http_error(422, "query since: not a number (UNIX seconds)", "Unprocessable Entity") from None
    if not math.isfinite(value):
        raise http_error(422, "query since: not a finite number", "Unprocessable Entity")
    return value


class UsageHandler(DeerFlowHandler):
    """``GET /usage`` (``?thread_id=``, ``?since=`` UNIX seconds)."""

    @web.authenticated
    @authorized
    @api_method
    async def get(self) -> None:
        """Token usage and cost of the requesting user's runs, overall and per model."""
        since = _since(self.get_query_argument("since", None, strip=False))
        self.write_json(await self.service.call(self.service.gateway.usage(
            self.user_id, self.get_query_argument("thread_id", None), since)))


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
        # ``mnt/user-data/...`` (the reference's form) or the virtual path itself, escaped as one
        # segment (the SDK's form, so ``..`` reaches the check unnormalised); nothing else is assumed
        virtual = f"/{path}" if path.startswith("mnt/user-data/") else path
        content, mime = await self.service.call(self.service.gateway.artifact(self.user_id, thread_id, virtual))
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
    (rf"/{API}/skills/install", SkillInstallHandler),
    (rf"/{API}/skills/(?P<name>[^/]+)", SkillsHandler),
    (rf"/{API}/memory", MemoryHandler),
    (rf"/{API}/memory/facts", MemoryFactsHandler),
    (rf"/{API}/memory/facts/(?P<fact_id>[^/]+)", MemoryFactHandler),
    (rf"/{API}/memory/summaries/(?P<section>[^/]+)", MemorySummaryHandler),
    (rf"/{API}/memory/import", MemoryImportHandler),
    (rf"/{API}/memory/(?P<part>[^/]+)", MemoryHandler),
    (rf"/{API}/mcp/config", McpConfigHandler),
    (rf"/{API}/mcp/tools", McpToolsHandler),
    (rf"/{API}/mcp/reload", McpReloadHandler),
    (rf"/{API}/subagents", SubagentsHandler),
    (rf"/{API}/usage", UsageHandler),
    (rf"/{API}/threads/{_T}/uploads", UploadsHandler),
    (rf"/{API}/threads/{_T}/uploads/(?P<filename>[^/]+)", UploadsHandler),
    (rf"/{API}/threads/{_T}/artifacts/(?P<path>.+)", ArtifactHandler),
    (rf"/{API}/threads/{_T}/runs/(?P<run_id>[^/]+)/feedback", FeedbackHandler),
]
