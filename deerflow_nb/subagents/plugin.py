"""``SubagentPlugin``: the ``task`` tool, its limits and its prompt section for the lead agent."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from langchain_core.language_models import BaseChatModel

from deerflow_nb.agent.plugins import AgentPlugin
from deerflow_nb.config.schema import AppConfig
from deerflow_nb.context import RunContext
from deerflow_nb.subagents.config import SubagentSpec, resolve_limits, resolve_subagents
from deerflow_nb.subagents.executor import ModelResolver, SubagentExecutor, ToolsProvider
from deerflow_nb.subagents.limit_middleware import SubagentLimitMiddleware
from deerflow_nb.subagents.task_tool import task_tool

if TYPE_CHECKING:
    from langchain.agents.middleware import AgentMiddleware
    from langchain_core.tools import BaseTool

    from deerflow_nb.agent import AgentOptions

__all__ = ["ModelOverride", "SubagentPlugin", "subagents_prompt"]

#: What ``SubagentPlugin.model`` may be: a chat model for every subagent, or a factory
#: ``(spec, parent context) -> chat model``.
ModelOverride = BaseChatModel | Callable[[SubagentSpec, RunContext], BaseChatModel]


def subagents_prompt(config: AppConfig) -> str:
    """The lead's prompt section about delegation; it quotes the limits that are enforced."""
    limits = resolve_limits(config)
    names = ", ".join(sorted(resolve_subagents(config)))
    return (
        "<subagents>\n"
        "You can delegate with the `task` tool to subagents that work in parallel, each with its own "
        f"context and the same sandbox folders. Subagent types: {names}.\n"
        "- Delegate independent, self-contained pieces of work (research, data exploration, long command "
        "sequences); do small things yourself.\n"
        f"- At most {limits.max_concurrent} task calls per response (extra calls are dropped) and at most "
        f"{limits.max_total_per_run} per run.\n"
        "- A subagent cannot see this conversation: give it all the context it needs in `prompt`.\n"
        "- Read the subagents' reports, check what matters, then write the final answer yourself.\n"
        "</subagents>"
    )


def model_label(model: BaseChatModel) -> str:
    """A model instance's own identifier (its ``model_name``/``model``), else its class name."""
    for attr in ("model_name", "model", "model_id"):
        value = getattr(model, attr, None)
        if isinstance(value, str) and value:
            return value
    return type(model).__name__


class SubagentPlugin(AgentPlugin):
    """Contributes ``task``, ``SubagentLimitMiddleware`` and the prompt section when delegation is on.

    Args:
        resolve_model: the default ``(spec, parent context) -> (model, label)``: the spec's
            configured model, else the lead's.
        tools_for: the tools a subagent may choose from (lead tools, MCP tools, ...).
        model: an override for tests and experiments (see :data:`ModelOverride`).
    """

    def __init__(self, resolve_model: ModelResolver, tools_for: ToolsProvider,
                 model: ModelOverride | None = None) -> None:
        self._default_resolver = resolve_model
        self.model = model
        self.executor = SubagentExecutor(self._resolve, tools_for)

    def _resolve(self, spec: SubagentSpec, parent: RunContext) -> tuple[BaseChatModel, str]:
        if self.model is None:
            return self._default_resolver(spec, parent)
        model = self.model if isinstance(self.model, BaseChatModel) else self.model(spec, parent)
        return model, model_label(model)

    @staticmethod
    def _active(config: AppConfig, options: AgentOptions) -> bool:
        return bool(options.subagent_enabled and config.subagents.enabled)

    def middlewares(self, config: AppConfig, options: AgentOptions) -> dict[str, Sequence[AgentMiddleware]]:
        """``SubagentLimitMiddleware`` in the ``subagents`` slot."""
        if not self._active(config, options):
            return {}
        limits = resolve_limits(config)
        return {"subagents": [SubagentLimitMiddleware(limits.max_concurrent, limits.max_total_per_run)]}

    def tools(self, config: AppConfig, options: AgentOptions) -> Sequence[BaseTool]:
        """The ``task`` tool."""
        if not self._active(config, options):
            return ()
        self.executor.invalidate()  # a graph rebuild means config or tools changed
        return (task_tool(self.executor, config),)

    def prompt_sections(self, config: AppConfig, options: AgentOptions) -> Sequence[str]:
        """How and when to delegate."""
        return (subagents_prompt(config),) if self._active(config, options) else ()

    def cache_key(self) -> Any:
        """The override model changes the subagents' behaviour, not the lead graph."""
        return None
