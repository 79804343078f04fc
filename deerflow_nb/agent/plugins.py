"""Feature plug-ins: how skills, memory, subagents and MCP extend the lead agent.

A plug-in contributes middlewares (into the chain's named slots), tools, system
prompt sections and per-turn context blocks, and may adjust each run's context.
The engine asks every plug-in when it builds a graph, and once per run.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from langchain.agents.middleware import AgentMiddleware
    from langchain_core.tools import BaseTool

    from deerflow_nb.agent import AgentOptions
    from deerflow_nb.agent.middlewares.dynamic_context import ContextProvider
    from deerflow_nb.config import AppConfig
    from deerflow_nb.context import RunContext

__all__ = ["AgentPlugin"]


class AgentPlugin:
    """Base class: every hook defaults to contributing nothing."""

    #: Part of the graph-cache key: change it when the plug-in's contribution changes.
    def cache_key(self) -> Any:
        """A hashable value; the engine rebuilds the graph when it changes."""
        return None

    def middlewares(self, config: AppConfig, options: AgentOptions) -> dict[str, Sequence[AgentMiddleware]]:
        """Middlewares by slot name (``skills``, ``memory``, ``subagents``, ``custom``)."""
        return {}

    def tools(self, config: AppConfig, options: AgentOptions) -> Sequence[BaseTool]:
        """Extra tools bound to the lead agent."""
        return ()

    def prompt_sections(self, config: AppConfig, options: AgentOptions) -> Sequence[str]:
        """Static system-prompt sections (must not change from turn to turn)."""
        return ()

    def context_providers(self, config: AppConfig, options: AgentOptions) -> Sequence[ContextProvider]:
        """Per-turn blocks for the first human message (date, memory, ...)."""
        return ()

    async def prepare_run(self, context: RunContext) -> None:
        """Adjust a run's context before it starts (e.g. attach services to ``context.extra``).

        Runs on the event loop before the run is admitted; raising refuses the run.
        """

    def prepare_run_blocking(self, context: RunContext) -> None:
        """Blocking preparation (file reads), off the event loop.

        Runs in the worker thread that also creates the run's folders, so it costs no
        extra hop; that work overlaps the run's admission, so it may run before the run is
        admitted (and for a run that is then refused): keep it idempotent. Errors are
        logged and the run goes on.
        """

    async def finish_run(self, context: RunContext, status: str) -> None:
        """Called after a run ends (e.g. queue memory updates)."""

    def finish_run_blocking(self, context: RunContext, status: str) -> None:
        """Blocking work after a run (file appends), off the event loop.

        Runs once per run in the worker thread that takes the run's last workspace
        snapshot (so it costs no extra hop); ``status`` is ``success``, ``error`` or
        ``interrupted``. Errors are logged.
        """

    async def aclose(self) -> None:
        """Release resources when the client closes."""
