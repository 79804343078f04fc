"""``DeerFlow``: the notebook user's entry point (embedded, in-process mode)."""

from __future__ import annotations

import atexit
import logging
import uuid
import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langchain_core.language_models import BaseChatModel

from deerflow_nb.client.engine import EmbeddedEngine, RunOptions
from deerflow_nb.client.loop import BackgroundLoop
from deerflow_nb.client.mixins.extensions import ExtensionsMixin
from deerflow_nb.client.mixins.memory import MemoryMixin
from deerflow_nb.client.mixins.skills import SkillsMixin
from deerflow_nb.client.mixins.ui import UiMixin
from deerflow_nb.client.thread import Thread
from deerflow_nb.config import validate_id
from deerflow_nb.errors import UsageError
from deerflow_nb.sandbox import SandboxProvider

if TYPE_CHECKING:
    from deerflow_nb.client.remote import RemoteDeerFlow

__all__ = ["DeerFlow"]

logger = logging.getLogger(__name__)
_LIVE: weakref.WeakSet[DeerFlow] = weakref.WeakSet()


def _log_failure(future: Any) -> None:
    if not future.cancelled() and future.exception() is not None:
        logger.warning("could not register a new thread: %s", future.exception())


class DeerFlow(SkillsMixin, MemoryMixin, ExtensionsMixin, UiMixin):
    """The DeerFlow agent, embedded in this process.

    Args:
        config_path: ``config.yaml`` to use (default: discovered, else built-in defaults).
        model: a configured model name or any LangChain chat model instance.
        plan_mode: default for runs: plan with ``write_todos``.
        subagents: default for runs: allow delegation to subagents.
        home: data directory (default: ``DEER_FLOW_HOME`` > config ``home`` > ``~/.deer-flow``).
        user_id: whose threads, memory and files these are.
        persistence: ``"sqlite"`` (default, survives restarts) or ``"memory"`` (throwaway).
        sandbox: a :class:`~deerflow_nb.sandbox.SandboxProvider` to use instead of the configured one.
        interactive: ``False`` for headless pipelines: runs never ask questions (no
            ``ask_clarification``; the model proceeds on stated assumptions). Per run:
            ``non_interactive=True``.
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
    ) -> None:
        if model is not None and not isinstance(model, (str, BaseChatModel)):
            raise UsageError(f"model must be a configured model name or a LangChain chat model, got {model!r}")
        self._defaults = RunOptions(plan_mode=plan_mode, subagent_enabled=subagents, non_interactive=not interactive)
        self._engine = EmbeddedEngine(config_path=config_path, model=model, defaults=self._defaults, home=home,
                                      user_id=user_id, persistence=persistence, sandbox_provider=sandbox)
        self._loop = BackgroundLoop()
        self._engine.plugins = self._make_plugins()
        _LIVE.add(self)

    def __repr__(self) -> str:
        return f"<DeerFlow user={self.user_id!r} home={str(self.home)!r}>"

    @staticmethod
    def connect(url: str | None = None, token: str | None = None) -> RemoteDeerFlow:
        """The agent served by the Jupyter server extension, over HTTP (same ``Thread``/``Run`` API).

        With no arguments, inside a kernel, it finds its own server (JupyterHub's
        environment, or the running-server files Jupyter writes).
        """
        from deerflow_nb.client.remote import RemoteDeerFlow

        return RemoteDeerFlow(url, token)

    @property
    def user_id(self) -> str:
        """The user whose data this client reads and writes."""
        return self._engine.user_id

    @property
    def home(self) -> Path:
        """The data directory."""
        return self._engine.paths.home

    # -- threads -------------------------------------------------------------------
    def thread(self, thread_id: str | None = None) -> Thread:
        """A new thread, or the existing thread ``thread_id`` (created if it does not exist)."""
        new = thread_id is None
        thread_id = validate_id(thread_id, "thread_id") if thread_id is not None else str(uuid.uuid4())
        if new and self._engine.store_open and not self._loop.in_loop():
            # a generated id cannot collide and costs no I/O: register it without waiting; the
            # loop runs it before anything submitted later (a chat on the thread, a listing)
            self._loop.submit(self._ensure_thread(thread_id, new=True)).add_done_callback(_log_failure)
        else:
            self._loop.run(self._ensure_thread(thread_id, new=new), method="DeerFlow.thread")
        return Thread(self, thread_id)

    async def athread(self, thread_id: str | None = None) -> Thread:
        """Async twin of :meth:`thread`."""
        new = thread_id is None
        thread_id = validate_id(thread_id, "thread_id") if thread_id is not None else str(uuid.uuid4())
        await self._loop.arun(self._ensure_thread(thread_id, new=new))
        return Thread(self, thread_id)

    async def _ensure_thread(self, thread_id: str, *, new: bool = False) -> None:
        # a generated id cannot exist yet: no lookup, and its row comes with its first run
        store = await self._engine.store()
        await store.ensure_thread(thread_id, self.user_id, new=new)

    async def _athreads(self, limit: int | None) -> list[dict[str, Any]]:
        store = await self._engine.store()
        return [r.to_dict() for r in await store.list_threads(self.user_id, limit)]

    def threads(self, limit: int | None = None) -> list[dict[str, Any]]:
        """The threads of this user, most recently active first, with titles."""
        return self._loop.run(self._athreads(limit), method="DeerFlow.threads")

    async def athreads(self, limit: int | None = None) -> list[dict[str, Any]]:
        """Async twin of :meth:`threads`."""
        return await self._loop.arun(self._athreads(limit))

    def delete_thread(self, thread_id: str) -> None:
        """Delete a thread's history (its files stay on disk)."""
        self._loop.run(self._adelete(thread_id), method="DeerFlow.delete_thread")

    async def _adelete(self, thread_id: str) -> None:
        store = await self._engine.store()
        await store.delete_thread(thread_id, self.user_id)

    # -- gateway-equivalent methods ---------------------------------------------------
    def list_models(self) -> dict[str, Any]:
        """``{"models": [...]}`` exactly as ``GET /models`` returns it."""
        from deerflow_nb.models import list_models

        return list_models(self._engine.config)

    def get_model(self, name: str) -> dict[str, Any]:
        """One model as ``GET /models/{name}`` returns it."""
        from deerflow_nb.models import get_model

        return get_model(name, self._engine.config)

    # -- lifecycle -----------------------------------------------------------------
    def close(self) -> None:
        """Cancel active runs, close the database, stop the private loop."""
        self._loop.stop(self._engine.aclose)

    async def aclose(self) -> None:
        """Async twin of :meth:`close` (the private loop keeps running until ``close``)."""
        await self._loop.arun(self._engine.aclose())

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
