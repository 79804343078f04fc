"""``DeerFlowService``: the extension's bridge from tornado handlers to the runtime.

The runtime (an embedded :class:`~deerflow_nb.DeerFlow` client: engine, stores,
run manager, stream bridge) lives on its own private event loop, so agent work never
stalls the Jupyter server's loop (kernels, Lab UI). Handlers ``await`` coroutines on
that loop through :meth:`DeerFlowService.call` and :meth:`DeerFlowService.iterate`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from deerflow_nb.client.engine import EmbeddedEngine
    from deerflow_nb.client.facade import DeerFlow

__all__ = ["DeerFlowService"]

T = TypeVar("T")


class DeerFlowService:
    """One per server process. Create with :meth:`start`; close with :meth:`stop`."""

    def __init__(self, client: DeerFlow) -> None:
        self.client = client

    @classmethod
    def start(cls, *, config_path: str | None, home: str | None, sandbox: str | None) -> DeerFlowService:
        """Build the client (config errors surface here, at server start) and open persistence."""
        from deerflow_nb.client.facade import DeerFlow

        provider = None
        if sandbox:
            from deerflow_nb.config import load_config
            from deerflow_nb.config.paths import Paths, resolve_home
            from deerflow_nb.sandbox import create_sandbox_provider

            startup = load_config(Path(config_path) if config_path else None)
            startup = startup.model_copy(update={"sandbox": startup.sandbox.model_copy(update={"use": sandbox})})
            provider = create_sandbox_provider(startup, Paths(resolve_home(startup.home, home)))
        client = DeerFlow(config_path, home=home, sandbox=provider)
        service = cls(client)
        client._loop.run(client._engine.store(), method="DeerFlowService.start")  # recovers orphans now
        return service

    @property
    def engine(self) -> EmbeddedEngine:
        """The shared engine (every call passes the requesting ``user_id``)."""
        return self.client._engine

    async def call(self, coro: Coroutine[Any, Any, T]) -> T:
        """Await ``coro`` on the runtime's loop."""
        return await self.client._loop.arun(coro)

    def iterate(self, factory: Callable[[], AsyncIterator[T]]) -> AsyncIterator[T]:
        """Drive an async iterator on the runtime's loop from the server's loop."""
        return self.client._loop.aiterate(factory)

    def stop(self) -> None:
        """Cancel active runs (stored as ``interrupted``), close the database, stop the loop."""
        self.client.close()
