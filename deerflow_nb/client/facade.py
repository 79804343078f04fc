"""``DeerFlow``: the notebook user's entry point, embedded (in-process) or connected to a server.

One class for both modes: ``DeerFlow(...)`` runs the agent in this process (through a
:class:`~deerflow_nb.client.local.LocalBackend` over a
:class:`~deerflow_nb.runtime.engine.Runtime`); ``DeerFlow.connect(...)`` talks to the
``deerflow`` Jupyter server extension (through an :class:`~deerflow_nb.client.http.HttpBackend`).
"""

from __future__ import annotations

import atexit
import logging
import os
import uuid
import weakref
from collections.abc import Iterable, Mapping
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langchain_core.language_models import BaseChatModel

from deerflow_nb.client.features import Mcp, Memory, Skills, Subagents
from deerflow_nb.client.schedules import Schedules
from deerflow_nb.client.thread import Thread
from deerflow_nb.config import validate_id
from deerflow_nb.errors import UsageError
from deerflow_nb.sandbox import SandboxProvider

if TYPE_CHECKING:
    import httpx

    from deerflow_nb.client.backend import Backend
    from deerflow_nb.uploads import UploadSource
    from deerflow_nb.usage import Since
    from deerflow_nb.widgets import ChatWidget

__all__ = ["DeerFlow"]

logger = logging.getLogger(__name__)
_LIVE: weakref.WeakSet[DeerFlow] = weakref.WeakSet()


def _log_failure(future: Any) -> None:
    if not future.cancelled() and future.exception() is not None:
        logger.warning("could not register a new thread: %s", future.exception())


class DeerFlow:
    """The DeerFlow agent: embedded in this process, or served by Jupyter (:meth:`connect`).

    Args:
        config_path: ``config.yaml`` to use (default: discovered, else built-in defaults).
        model: a configured model name or any LangChain chat model instance.
        plan_mode: default for runs: plan with ``write_todos``.
        subagents: default for runs: allow delegation to subagents.
        home: data directory (default: ``DEER_FLOW_HOME`` > config ``home`` > ``~/.deer-flow``).
        user_id: whose threads, memory and files these are.
        persistence: ``"sqlite"`` (default, survives restarts) or ``"memory"`` (throwaway).
        sandbox: a :class:`~deerflow_nb.sandbox.SandboxProvider` to use instead of the configured one
            (a local capability: a server uses its own).
        interactive: ``False`` for headless pipelines: runs never ask questions (no
            ``ask_clarification``; the model proceeds on stated assumptions). Per run:
            ``non_interactive=True``.
        backend: an already built :class:`~deerflow_nb.client.backend.Backend` (the other
            arguments must then be left out); :meth:`connect` passes the HTTP one.
    """

    def __init__(
        self,
        config_path: str | Path | None = None,
        *,
        model: str | BaseChatModel | None = None,
        plan_mode: bool = False,
        subagents: bool = False,
        home: str | Path | None = None,
        user_id: str = "default",
        persistence: str | None = None,
        sandbox: SandboxProvider | None = None,
        interactive: bool = True,
        backend: Backend | None = None,
    ) -> None:
        if backend is None:
            from deerflow_nb.client.local import LocalBackend
            from deerflow_nb.runtime.engine import RunOptions, Runtime

            if model is not None and not isinstance(model, (str, BaseChatModel)):
                raise UsageError(f"model must be a configured model name or a LangChain chat model, got {model!r}")
            defaults = RunOptions(plan_mode=plan_mode, subagent_enabled=subagents, non_interactive=not interactive)
            backend = LocalBackend(Runtime(config_path=config_path, model=model, defaults=defaults, home=home,
                                           user_id=user_id, persistence=persistence, sandbox_provider=sandbox))
        self.backend: Backend = backend
        _LIVE.add(self)

    def __repr__(self) -> str:
        return f"<DeerFlow {self.backend!r}>"

    @classmethod
    def connect(cls, url: str | None = None, token: str | None = None, *,
                transport: httpx.AsyncBaseTransport | None = None) -> DeerFlow:
        """The agent served by the Jupyter server extension, over HTTP (the same API).

        With no arguments, inside a kernel, it finds its own server (JupyterHub's
        environment, or the running-server files Jupyter writes). Runs live in the
        server, so they outlive the kernel.
        """
        from deerflow_nb.client.http import HttpBackend
        from deerflow_nb.client.remote import discover_server

        api_url, api_token = discover_server(url, token)
        return cls(backend=HttpBackend(api_url, api_token, transport=transport))

    @property
    def url(self) -> str | None:
        """The gateway URL in server mode (``None`` when embedded)."""
        return getattr(self.backend, "url", None)

    @property
    def user_id(self) -> str:
        """The user whose data this client reads and writes (server mode: as the server sees you)."""
        if self.backend.user_id == "?":
            self.backend.user_id = str(self.health()["user_id"])
        return self.backend.user_id

    @property
    def home(self) -> Path:
        """The data directory (embedded only)."""
        return Path(self.backend.local("runtime").paths.home)

    @property
    def runtime(self) -> Any:
        """The in-process :class:`~deerflow_nb.runtime.engine.Runtime` (embedded only)."""
        return self.backend.local("runtime")

    # -- threads -------------------------------------------------------------------------
    def thread(self, thread_id: str | None = None) -> Thread:
        """A new thread, or the existing thread ``thread_id`` (created if it does not exist)."""
        new = thread_id is None
        thread_id = validate_id(thread_id, "thread_id") if thread_id is not None else str(uuid.uuid4())
        loop = self.backend.loop
        if new and self.backend.defer_new_threads and not loop.in_loop():
            # a generated id cannot collide and costs no I/O: register it without waiting; the
            # loop runs it before anything submitted later (a chat on the thread, a listing)
            loop.submit(self.backend.create_thread(thread_id, new=True)).add_done_callback(_log_failure)
        else:
            loop.run(self.backend.create_thread(thread_id, new=new), method="DeerFlow.thread")
        return Thread(self, thread_id)

    async def athread(self, thread_id: str | None = None) -> Thread:
        """Async twin of :meth:`thread`."""
        new = thread_id is None
        thread_id = validate_id(thread_id, "thread_id") if thread_id is not None else str(uuid.uuid4())
        await self.backend.loop.arun(self.backend.create_thread(thread_id, new=new))
        return Thread(self, thread_id)

    def threads(self, limit: int | None = None) -> list[dict[str, Any]]:
        """The threads of this user, most recently active first, with titles."""
        return self.backend.loop.run(self.backend.list_threads(limit), method="DeerFlow.threads")

    async def athreads(self, limit: int | None = None) -> list[dict[str, Any]]:
        """Async twin of :meth:`threads`."""
        return await self.backend.loop.arun(self.backend.list_threads(limit))

    def delete_thread(self, thread_id: str) -> None:
        """Delete a thread's history (its files stay on disk)."""
        self.backend.loop.run(self.backend.delete_thread(thread_id), method="DeerFlow.delete_thread")

    async def adelete_thread(self, thread_id: str) -> None:
        """Async twin of :meth:`delete_thread`."""
        await self.backend.loop.arun(self.backend.delete_thread(thread_id))

    def rename_thread(self, thread_id: str, title: str) -> None:
        """Set a thread's title (refused while a run is going); see :meth:`Thread.rename`."""
        self.backend.loop.run(self.backend.rename_thread(thread_id, title), method="DeerFlow.rename_thread")

    async def arename_thread(self, thread_id: str, title: str) -> None:
        """Async twin of :meth:`rename_thread`."""
        await self.backend.loop.arun(self.backend.rename_thread(thread_id, title))

    def ui(self, message: str | None = None, *, thread_id: str | None = None,
           options: Mapping[str, Any] | None = None, **run_options: Any) -> ChatWidget:
        """A chat widget on a new thread (or the existing ``thread_id``); see :meth:`Thread.ui`.

        It also lists this user's threads (open, rename, delete, new) and offers the
        configured models (the picker sets the run option ``model_name``).
        """
        from deerflow_nb.widgets import ChatWidget

        return ChatWidget(self.thread(thread_id), message=message, options={**(options or {}), **run_options},
                          client=self)

    # -- feature objects -----------------------------------------------------------------
    @cached_property
    def skills(self) -> Skills:
        """The user's skills: ``list()``, ``get()``, ``enable()``, ``disable()``, ``install()``, ``uninstall()``."""
        return Skills(self.backend)

    @cached_property
    def memory(self) -> Memory:
        """The user's long-term memory (see :class:`~deerflow_nb.client.features.Memory`)."""
        return Memory(self.backend)

    @cached_property
    def mcp(self) -> Mcp:
        """MCP servers: ``config()``, ``update(servers)``, ``tools()``, ``errors``, ``reload()``."""
        return Mcp(self.backend)

    @cached_property
    def subagents(self) -> Subagents:
        """The subagent types (``.list()``, both modes) and the optional model override (``.model``, embedded only)."""
        return Subagents(self.backend)

    @cached_property
    def schedules(self) -> Schedules:
        """Scheduled runs: ``create(message, cron=... | every=...)``, ``list``, ``pause``, ``trigger``, ``runs``, ..."""
        return Schedules(self.backend)

    # -- gateway-equivalent methods (each returns what its route returns) -----------------
    def _call(self, coro: Any, method: str) -> Any:
        return self.backend.loop.run(coro, method=method)

    def list_models(self) -> dict[str, Any]:
        """``{"models": [...]}`` exactly as ``GET /models`` returns it."""
        return self._call(self.backend.gateway("list_models"), "DeerFlow.list_models")  # type: ignore[no-any-return]

    def get_model(self, name: str) -> dict[str, Any]:
        """One model as ``GET /models/{name}`` returns it."""
        return self._call(self.backend.gateway("get_model", name), "DeerFlow.get_model")  # type: ignore[no-any-return]

    def health(self) -> dict[str, Any]:
        """``GET /health``: status, database, who you are, your active runs."""
        return self._call(self.backend.gateway("health"), "DeerFlow.health")  # type: ignore[no-any-return]

    def list_skills(self) -> dict[str, Any]:
        """``{"skills": [...]}`` exactly as ``GET /skills`` returns it."""
        return self.skills.response()

    def get_skill(self, name: str) -> dict[str, Any]:
        """One skill as ``GET /skills/{name}`` returns it."""
        return self.skills.response_of(name)

    def update_skill(self, name: str, enabled: bool) -> dict[str, Any]:
        """Enable or disable a skill, as ``PUT /skills/{name}`` does; returns the updated skill."""
        return self.skills.update(name, enabled)

    def install_skill(self, path: str | os.PathLike[str]) -> dict[str, Any]:
        """Install a local ``.skill`` archive, as ``POST /skills/install`` does."""
        return self.skills.install_response(path)

    def get_memory(self) -> dict[str, Any]:
        """The memory document as ``GET /memory`` returns it."""
        return self.memory.document()

    def reload_memory(self) -> dict[str, Any]:
        """Re-read memory from disk, as ``POST /memory/reload`` does; returns the document."""
        return self.memory.reload_document()

    def get_memory_config(self) -> dict[str, Any]:
        """The memory settings as ``GET /memory/config`` returns them."""
        return self.memory.settings()

    def get_memory_status(self) -> dict[str, Any]:
        """``{"config": ..., "data": ...}`` as ``GET /memory/status`` returns it."""
        return self.memory.overview()

    def get_mcp_config(self) -> dict[str, Any]:
        """``{"mcp_servers": {...}}`` exactly as ``GET /mcp/config`` returns it."""
        return self.mcp.get_mcp_config()

    def update_mcp_config(self, servers: Mapping[str, Any]) -> dict[str, Any]:
        """Replace the MCP servers (``PUT /mcp/config``); the agent is rebuilt with the new tools."""
        return self.mcp.update_mcp_config(servers)

    def upload_files(self, thread_id: str, files: Iterable[UploadSource]) -> dict[str, Any]:
        """Upload files to a thread (``POST /threads/{id}/uploads``); all or nothing."""
        return Thread(self, thread_id).upload(list(files))

    def list_uploads(self, thread_id: str) -> dict[str, Any]:
        """``{"files": [...], "count": N}`` as ``GET /threads/{id}/uploads/list`` returns it."""
        return Thread(self, thread_id).uploads()

    def delete_upload(self, thread_id: str, filename: str) -> dict[str, Any]:
        """Delete one upload (``DELETE /threads/{id}/uploads/{filename}``)."""
        return Thread(self, thread_id).delete_upload(filename)

    def get_artifact(self, thread_id: str, path: str) -> tuple[bytes, str]:
        """``(content, mime_type)`` of a ``/mnt/user-data/...`` file of the thread."""
        return Thread(self, thread_id).artifact(path)

    def get_goal(self, thread_id: str) -> dict[str, Any]:
        """``{"goal": {...}}`` or ``{"goal": None}`` as ``GET /threads/{id}/goal`` returns it."""
        return {"goal": Thread(self, thread_id).get_goal()}

    def set_goal(self, thread_id: str, objective: str, max_continuations: int = 8) -> dict[str, Any]:
        """Set the thread's goal (see :meth:`Thread.set_goal`); ``{"goal": {...}}`` as ``PUT /threads/{id}/goal``."""
        return {"goal": Thread(self, thread_id).set_goal(objective, max_continuations)}

    def clear_goal(self, thread_id: str) -> dict[str, Any]:
        """Clear the thread's goal; ``{"goal": None}`` as ``DELETE /threads/{id}/goal``."""
        Thread(self, thread_id).clear_goal()
        return {"goal": None}

    def usage(self, since: Since = None) -> dict[str, Any]:
        """Token usage and cost of this user's runs (from ``since`` on), overall and per model."""
        return self._call(self.backend.usage(None, since), "DeerFlow.usage")  # type: ignore[no-any-return]

    async def ausage(self, since: Since = None) -> dict[str, Any]:
        """Async twin of :meth:`usage`."""
        return await self.backend.loop.arun(self.backend.usage(None, since))

    # -- lifecycle -----------------------------------------------------------------------
    def close(self) -> None:
        """Cancel active runs (embedded), close connections and the database, stop the private loop."""
        self.backend.loop.stop(self.backend.aclose)

    async def aclose(self) -> None:
        """Async twin of :meth:`close` (the private loop keeps running until ``close``)."""
        await self.backend.loop.arun(self.backend.aclose())

    def __enter__(self) -> DeerFlow:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@atexit.register
def _close_all() -> None:  # flush SQLite and stop threads on interpreter exit
    for client in list(_LIVE):
        try:
            client.close()
        except Exception:
            pass
