"""Conversation control routes: rerun preparation, branches and forks (same bodies as the ``Thread`` methods).

``POST /threads/{id}/runs/regenerate/prepare`` and ``/runs/edit-regenerate/prepare`` answer what
the rerun needs (input, checkpoint, metadata) without starting it: the client then starts it
with ``POST /threads/{id}/runs`` as any LangGraph run from a checkpoint. ``GET /threads/{id}/branches``
lists the thread's branches, ``POST /threads/{id}/branches/checkout`` switches, and
``POST /threads/{id}/fork`` starts a new thread from a checkpoint.
"""

from __future__ import annotations

from jupyter_server.auth.decorator import authorized
from tornado import web

from deerflow_nb.config import validate_id
from jupyter_ext.handlers.base import API, DeerFlowHandler, api_method
from jupyter_ext.schemas import BranchCheckoutRequest, EditRegenerateRequest, ForkRequest, RegenerateRequest

__all__ = ["default_handlers"]

_T = r"(?P<thread_id>[^/]+)"


class RegeneratePrepareHandler(DeerFlowHandler):
    """``POST /threads/{id}/runs/regenerate/prepare``."""

    @web.authenticated
    @authorized
    @api_method
    async def post(self, thread_id: str) -> None:
        """Input, checkpoint and metadata to rerun a turn (default: the latest); 409 while a run is going."""
        body = self.parse(RegenerateRequest)
        conversations = self.service.engine.conversations
        self.write_json(await self.service.call(conversations.prepare_regenerate(
            validate_id(thread_id, "thread_id"), self.user_id, body)))


class EditRegeneratePrepareHandler(DeerFlowHandler):
    """``POST /threads/{id}/runs/edit-regenerate/prepare``."""

    @web.authenticated
    @authorized
    @api_method
    async def post(self, thread_id: str) -> None:
        """Input (the replacement message), checkpoint and metadata to rerun from an edited message."""
        body = self.parse(EditRegenerateRequest)
        conversations = self.service.engine.conversations
        self.write_json(await self.service.call(conversations.prepare_edit(
            validate_id(thread_id, "thread_id"), self.user_id, body)))


class BranchesHandler(DeerFlowHandler):
    """``GET /threads/{id}/branches``."""

    @web.authenticated
    @authorized
    @api_method
    async def get(self, thread_id: str) -> None:
        """The thread's branches, the checked-out one, and the forks along it."""
        conversations = self.service.engine.conversations
        self.write_json(await self.service.call(conversations.branches(
            validate_id(thread_id, "thread_id"), self.user_id)))


class BranchCheckoutHandler(DeerFlowHandler):
    """``POST /threads/{id}/branches/checkout``."""

    @web.authenticated
    @authorized
    @api_method
    async def post(self, thread_id: str) -> None:
        """Make a branch the thread's head; the branches after the switch (409 while a run is going)."""
        body = self.parse(BranchCheckoutRequest)
        conversations = self.service.engine.conversations
        self.write_json(await self.service.call(conversations.checkout(
            validate_id(thread_id, "thread_id"), self.user_id, body)))


class ForkHandler(DeerFlowHandler):
    """``POST /threads/{id}/fork``."""

    @web.authenticated
    @authorized
    @api_method
    async def post(self, thread_id: str) -> None:
        """A new thread whose state is the checkpoint's."""
        body = self.parse(ForkRequest)
        conversations = self.service.engine.conversations
        self.write_json(await self.service.call(conversations.fork(
            validate_id(thread_id, "thread_id"), self.user_id, body)))


default_handlers = [
    (rf"/{API}/threads/{_T}/runs/regenerate/prepare", RegeneratePrepareHandler),
    (rf"/{API}/threads/{_T}/runs/edit-regenerate/prepare", EditRegeneratePrepareHandler),
    (rf"/{API}/threads/{_T}/branches", BranchesHandler),
    (rf"/{API}/threads/{_T}/branches/checkout", BranchCheckoutHandler),
    (rf"/{API}/threads/{_T}/fork", ForkHandler),
]
