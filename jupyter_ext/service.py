"""``DeerFlowService``: the extension's bridge from tornado handlers to the runtime.

The runtime (:class:`~deerflow_nb.runtime.engine.Runtime`: stores, run manager, stream
bridge, feature services) lives on its own private event loop, so agent work never
stalls the Jupyter server's loop (kernels, Lab UI). Handlers ``await`` coroutines on
that loop through :meth:`DeerFlowService.call` and :meth:`DeerFlowService.iterate`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from deerflow_nb.runtime.engine import Runtime
    from deerflow_nb.runtime.gateway import Gateway

__all__ = ["DeerFlowService"]

T = TypeVar("T")


class DeerFlowService:
    """One per server process. Create with :meth:`start`; close with :meth:`stop`."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime

    @classmethod
    def start(cls, *, config_path: str | None, home: str | None, sandbox: str | None) -> DeerFlowService:
        """Build the runtime (config errors surface here, at server start) and open persistence."""
        from deerflow_nb.runtime.engine import Runtime

        provider = None
        if sandbox:
            from deerflow_nb.config import load_config
            from deerflow_nb.config.paths import Paths, resolve_home
            from deerflow_nb.sandbox import create_sandbox_provider

            startup = load_config(Path(config_path) if config_path else None)
            startup = startup.model_copy(update={"sandbox": startup.sandbox.model_copy(update={"use": sandbox})})
            provider = create_sandbox_provider(startup, Paths(resolve_home(startup.home, home)))
        runtime = Runtime(config_path=config_path, home=home, sandbox_provider=provider)
        return cls(runtime.start())  # recovers orphans now

    @property
    def engine(self) -> Runtime:
        """The shared runtime (every call passes the requesting ``user_id``)."""
        return self.runtime

    @property
    def gateway(self) -> Gateway:
        """The runtime's DeerFlow-route answers."""
        return self.runtime.gateway

    async def call(self, coro: Coroutine[Any, Any, T]) -> T:
        """Await ``coro`` on the runtime's loop."""
        return await self.runtime.loop.arun(coro)

    def submit(self, coro: Coroutine[Any, Any, Any]) -> Any:
        """Schedule ``coro`` on the runtime's loop without waiting."""
        return self.runtime.loop.submit(coro)

    def iterate(self, factory: Callable[[], AsyncIterator[T]]) -> AsyncIterator[T]:
        """Drive an async iterator on the runtime's loop from the server's loop."""
        return self.runtime.loop.aiterate(factory)

    def stop(self) -> None:
        """Cancel active runs (stored as ``interrupted``), close the database, stop the loop."""
        self.runtime.close()
