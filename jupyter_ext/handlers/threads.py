"""LangGraph-compatible assistants and threads routes."""

from __future__ import annotations

import uuid
from typing import Any

from jupyter_server.auth.decorator import authorized
from tornado import web

from deerflow_nb.config import validate_id
from jupyter_ext.handlers.base import API, DeerFlowHandler, api_method, http_error
from jupyter_ext.handlers.shapes import ASSISTANT, state_json, thread_json
from jupyter_ext.schemas import (
    HISTORY_PAGE_LIMIT,
    AssistantSearchRequest,
    HistoryRequest,
    ThreadCompactRequest,
    ThreadCreateRequest,
    ThreadPatchRequest,
    ThreadSearchRequest,
    ThreadStateCheckpointRequest,
    ThreadStateUpdateRequest,
)

__all__ = ["default_handlers"]


class AssistantSearchHandler(DeerFlowHandler):
    """``POST /assistants/search``: the lead agent."""

    @web.authenticated
    @authorized
    @api_method
    async def post(self) -> None:
        """Search assistants (there is one: ``lead_agent``)."""
        body = self.parse(AssistantSearchRequest)
        matches = body.graph_id in (None, "lead_agent") and body.name in (None, "lead_agent")
        self.write_json([ASSISTANT] if matches and body.offset == 0 else [])


class AssistantHandler(DeerFlowHandler):
    """``GET /assistants/{id}``."""

    @web.authenticated
    @authorized
    @api_method
    async def get(self, assistant_id: str) -> None:
        """The assistant, or 404."""
        if assistant_id != "lead_agent":
            raise web.HTTPError(404, reason=f"assistant {assistant_id!r} not found")
        self.write_json(ASSISTANT)


class ThreadsHandler(DeerFlowHandler):
    """``POST /threads``."""

    @web.authenticated
    @authorized
    @api_method
    async def post(self) -> None:
        """Create a thread owned by the requesting user."""
        body = self.parse(ThreadCreateRequest)
        thread_id = validate_id(body.thread_id, "thread_id") if body.thread_id else str(uuid.uuid4())
        store = await self.service.call(self.service.engine.store())
        record = await self.service.call(store.threads.create(thread_id, self.user_id, metadata=body.metadata,
                                                              if_exists=body.if_exists))
        self.write_json(thread_json(record))


class ThreadSearchHandler(DeerFlowHandler):
    """``POST /threads/search``."""

    @web.authenticated
    @authorized
    @api_method
    async def post(self) -> None:
        """The requesting user's threads, newest first."""
        body = self.parse(ThreadSearchRequest)
        store = await self.service.call(self.service.engine.store())
        status = "running" if body.status == "busy" else body.status
        records = await self.service.call(store.threads.search(
            self.user_id, metadata=body.metadata, status=status, ids=body.ids, limit=body.limit,
            offset=body.offset, sort_by=body.sort_by or "updated_at", sort_order=body.sort_order or "desc"))
        self.write_json([thread_json(r) for r in records])


class ThreadHandler(DeerFlowHandler):
    """``GET`` / ``PATCH`` / ``DELETE /threads/{id}``."""

    async def _record(self, thread_id: str) -> Any:
        store = await self.service.call(self.service.engine.store())
        return store, await self.service.call(store.threads.get(thread_id, self.user_id))

    @web.authenticated
    @authorized
    @api_method
    async def get(self, thread_id: str) -> None:
        """The thread with its current values."""
        _store, record = await self._record(thread_id)
        values = await self.service.call(self.service.engine.get_state(thread_id, self.user_id))
        self.write_json(thread_json(record, values))

    @web.authenticated
    @authorized
    @api_method
    async def patch(self, thread_id: str) -> None:
        """Merge metadata into the thread; a string ``metadata.title`` renames it (row and state)."""
        body = self.parse(ThreadPatchRequest)
        store, _record = await self._record(thread_id)
        metadata = dict(body.metadata)
        title = metadata.pop("title", None)
        if isinstance(title, str):
            await self.service.call(self.service.engine.rename_thread(thread_id, title, self.user_id))
        elif title is not None:
            metadata["title"] = title
        await self.service.call(store.threads.update(thread_id, metadata=metadata))
        _store, record = await self._record(thread_id)
        self.write_json(thread_json(record))

    @web.authenticated
    @authorized
    @api_method
    async def delete(self, thread_id: str) -> None:
        """Delete the thread's history, runs and journal (files stay on disk); 204."""
        store, _record = await self._record(thread_id)
        active = self.service.engine.runs.active_run(thread_id)
        if active is not None:
            await self.service.call(self.service.engine.runs.cancel(active.run_id))
        await self.service.call(store.delete_thread(thread_id, self.user_id))
        self.set_status(204)
        self.finish()


class _StateHandler(DeerFlowHandler):
    """Shared by the state routes."""

    def _subgraphs(self) -> None:
        """``?subgraphs=`` (what ``langgraph-sdk`` sends) is accepted; DeerFlow's graph has none."""
        self.query_choice("subgraphs", "false", ("true", "false", "True", "False"))

    async def _write_state(self, thread_id: str, checkpoint_id: str | None,
                           ref: dict[str, Any] | None = None) -> None:
        item = await self.service.call(self.service.engine.get_checkpoint(thread_id, checkpoint_id, self.user_id))
        self.write_json(state_json(thread_id, item, ref))


class ThreadStateHandler(_StateHandler):
    """``GET`` / ``POST /threads/{id}/state``."""

    @web.authenticated
    @authorized
    @api_method
    async def get(self, thread_id: str) -> None:
        """The newest checkpoint as a LangGraph ``ThreadState``."""
        self._subgraphs()
        await self._write_state(thread_id, None)

    @web.authenticated
    @authorized
    @api_method
    async def post(self, thread_id: str) -> None:
        """Write ``values`` as a new checkpoint (409 while a run is going); ``{"checkpoint": {...}}``."""
        body = self.parse(ThreadStateUpdateRequest)
        config = await self.service.call(self.service.engine.update_state(
            thread_id, body.values, as_node=body.as_node, checkpoint_id=body.target(), user_id=self.user_id))
        self.write_json({"checkpoint": config, "configurable": config, "checkpoint_id": config["checkpoint_id"]})


class ThreadStateAtHandler(_StateHandler):
    """``GET /threads/{id}/state/{checkpoint_id}``."""

    @web.authenticated
    @authorized
    @api_method
    async def get(self, thread_id: str, checkpoint_id: str) -> None:
        """The ``ThreadState`` at one checkpoint (404 for a checkpoint the thread does not have)."""
        self._subgraphs()
        await self._write_state(thread_id, checkpoint_id, {"checkpoint_id": checkpoint_id, "thread_id": thread_id})


class ThreadStateCheckpointHandler(_StateHandler):
    """``POST /threads/{id}/state/checkpoint``."""

    @web.authenticated
    @authorized
    @api_method
    async def post(self, thread_id: str) -> None:
        """The ``ThreadState`` at ``checkpoint`` (404 for a checkpoint the thread does not have)."""
        body = self.parse(ThreadStateCheckpointRequest)
        ref = {**body.checkpoint.model_dump(exclude_none=True), "thread_id": thread_id}
        await self._write_state(thread_id, body.checkpoint.checkpoint_id, ref)


class ThreadCompactHandler(DeerFlowHandler):
    """``POST /threads/{id}/compact``."""

    @web.authenticated
    @authorized
    @api_method
    async def post(self, thread_id: str) -> None:
        """Summarize older messages into ``summary_text``, keep the recent ones (409 while a run is going)."""
        body = self.parse(ThreadCompactRequest)
        self.write_json(await self.service.call(self.service.engine.compact_thread(
            thread_id, self.user_id, keep_messages=body.keep_messages)))


class ThreadHistoryHandler(DeerFlowHandler):
    """``POST`` / ``GET /threads/{id}/history``."""

    async def _history(self, thread_id: str, limit: int, before: str | None) -> None:
        items = await self.service.call(self.service.engine.get_history(thread_id, limit, self.user_id,
                                                                        before=before))
        self.write_json([state_json(thread_id, item) for item in items])

    @web.authenticated
    @authorized
    @api_method
    async def post(self, thread_id: str) -> None:
        """Checkpoints, newest first (``limit`` 0 gives none)."""
        body = self.parse(HistoryRequest)
        await self._history(thread_id, body.limit, body.before_id())

    @web.authenticated
    @authorized
    @api_method
    async def get(self, thread_id: str) -> None:
        """Checkpoints, newest first (``?limit=``, ``?before=``)."""
        limit = min(self.query_int("limit", 10, ge=0, le=2**31), HISTORY_PAGE_LIMIT)  # clamped, as the body's
        before = self.get_query_argument("before", None, strip=False) or None
        if before is not None and not 0 < len(before) <= 200:
            raise http_error(422, "query before: a checkpoint id of at most 200 characters", "Unprocessable Entity")
        await self._history(thread_id, limit, before)


_T = r"(?P<thread_id>[^/]+)"
default_handlers = [
    (rf"/{API}/assistants/search", AssistantSearchHandler),
    (rf"/{API}/assistants/(?P<assistant_id>[^/]+)", AssistantHandler),
    (rf"/{API}/threads", ThreadsHandler),
    (rf"/{API}/threads/search", ThreadSearchHandler),
    (rf"/{API}/threads/{_T}", ThreadHandler),
    (rf"/{API}/threads/{_T}/state", ThreadStateHandler),
    (rf"/{API}/threads/{_T}/state/checkpoint", ThreadStateCheckpointHandler),
    (rf"/{API}/threads/{_T}/state/(?P<checkpoint_id>[^/]+)", ThreadStateAtHandler),
    (rf"/{API}/threads/{_T}/history", ThreadHistoryHandler),
    (rf"/{API}/threads/{_T}/compact", ThreadCompactHandler),
]
