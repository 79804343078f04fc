"""Subagents: the ``task`` tool, the executor, the delegation limits and the plug-in."""

from deerflow_nb.subagents.config import (
    BUILTIN_SUBAGENTS,
    SubagentLimits,
    SubagentSpec,
    resolve_limits,
    resolve_subagents,
)
from deerflow_nb.subagents.executor import SubagentExecutor, subagent_middlewares
from deerflow_nb.subagents.limit_middleware import SubagentLimitMiddleware
from deerflow_nb.subagents.plugin import SubagentPlugin, subagents_prompt
from deerflow_nb.subagents.steps import EVENT_TYPES, SubagentResult
from deerflow_nb.subagents.task_tool import TASK_TOOL_NAME, task_tool

__all__ = [
    "BUILTIN_SUBAGENTS",
    "EVENT_TYPES",
    "TASK_TOOL_NAME",
    "SubagentExecutor",
    "SubagentLimitMiddleware",
    "SubagentLimits",
    "SubagentPlugin",
    "SubagentResult",
    "SubagentSpec",
    "resolve_limits",
    "resolve_subagents",
    "subagent_middlewares",
    "subagents_prompt",
    "task_tool",
]
