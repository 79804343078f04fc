"""``MemoryPlugin``: memory's contribution to the lead agent."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from deerflow_nb.agent.plugins import AgentPlugin
from deerflow_nb.memory.errors import MemoryStoreError
from deerflow_nb.memory.service import MemoryService
from deerflow_nb.memory.tools import build_memory_tools
from deerflow_nb.runtime.worker import FINAL_STATE_KEY

if TYPE_CHECKING:
    from langchain_core.tools import BaseTool

    from deerflow_nb.agent import AgentOptions
    from deerflow_nb.agent.middlewares.dynamic_context import ContextProvider
    from deerflow_nb.config import AppConfig
    from deerflow_nb.context import RunContext

__all__ = ["MemoryPlugin"]


class MemoryPlugin(AgentPlugin):
    """Injects memory into the first human message; learns after runs (middleware mode) or via tools."""

    def __init__(self, service: MemoryService) -> None:
        self.service = service

    def cache_key(self) -> Any:
        """Rebuild the graph when memory is switched on/off or changes mode."""
        c = self.service.config
        return ("memory", c.enabled, c.mode, c.injection_enabled)

    def tools(self, config: AppConfig, options: AgentOptions) -> Sequence[BaseTool]:
        """The four memory tools in tool mode."""
        if not (config.memory.enabled and config.memory.mode == "tool"):
            return ()
        return build_memory_tools(self.service.storage, lambda: self.service.config.fact_confidence_threshold)

    def context_providers(self, config: AppConfig, options: AgentOptions) -> Sequence[ContextProvider]:
        """The ``<memory>`` block provider."""
        if not (config.memory.enabled and config.memory.injection_enabled):
            return ()
        return [self.service.context_block]

    def prepare_run_blocking(self, context: RunContext) -> None:
        """Load the user's memory (off the event loop), so the provider only reads the cache."""
        if not self.service.config.enabled:
            return
        try:
            self.service.storage(context.user_id).load()
        except MemoryStoreError:
            pass  # reported (once per thread) by the provider; the run goes on without memory

    async def finish_run(self, context: RunContext, status: str) -> None:
        """Middleware mode: queue the finished conversation for a debounced update."""
        config = self.service.config
        if context.profile == "small" and not config.model_name:
            return  # a small model writes no reliable free-form JSON: no memory updates from it
        if config.enabled and config.mode == "middleware" and status == "success" and context.thread_id:
            # the run's final state, as the stream delivered it (no read-back of the checkpoint)
            final = context.extra.get(FINAL_STATE_KEY)
            messages = final.get("messages") if isinstance(final, dict) else None
            await self.service.queue_thread(context.user_id, context.thread_id, context.model_name,
                                            list(messages) if messages is not None else None)

    async def aclose(self) -> None:
        """Flush pending updates before the client closes."""
        await self.service.aclose()
