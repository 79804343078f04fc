"""The ``task`` tool: the lead agent delegates a self-contained job to a subagent."""

from __future__ import annotations

import asyncio
import concurrent.futures
import uuid
from collections.abc import Iterable
from typing import Annotated, Any

from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.types import Command
from pydantic import Field

from deerflow_nb.config.schema import AppConfig
from deerflow_nb.context import RunContext
from deerflow_nb.subagents.config import SubagentSpec, resolve_subagents
from deerflow_nb.subagents.executor import SubagentExecutor
from deerflow_nb.subagents.steps import delegation_entry, result_text
from deerflow_nb.tools.common import Runtime, context_value
from deerflow_nb.tools.meta import normalize_tool_result

__all__ = ["TASK_TOOL_NAME", "task_tool"]

TASK_TOOL_NAME = "task"

Description = Annotated[str, Field(description="A short (3-5 words) label for the task, shown to the user.")]
Prompt = Annotated[str, Field(description="The complete instructions and context for the subagent.")]
SubagentType = Annotated[str, Field(description="Which subagent to use (see the list above).")]


def _describe(specs: Iterable[SubagentSpec]) -> str:
    lines = [f"- {spec.name}: {spec.description}" for spec in specs]
    return (
        "Delegate a self-contained task to a subagent that works in the background with its own "
        "context and the same sandbox folders, and returns a report. The subagent cannot see this "
        "conversation: put every detail it needs into `prompt`. Several task calls in one response "
        "run in parallel.\nSubagent types:\n" + "\n".join(lines)
    )


def _parent_context(runtime: Any) -> RunContext:
    context = getattr(runtime, "context", None)
    if isinstance(context, RunContext):
        return context
    return RunContext(thread_id=context_value(runtime, "thread_id"),
                      user_id=context_value(runtime, "user_id") or "default")


def _noop(_: Any) -> None:
    return None


def task_tool(executor: SubagentExecutor, config: AppConfig) -> BaseTool:
    """A ``task`` tool running delegations through ``executor``; ``config`` lists the subagent types."""

    async def atask(description: Description, prompt: Prompt, subagent_type: SubagentType, *,
                    runtime: Runtime) -> Command | ToolMessage | str:
        parent = _parent_context(runtime)
        specs = resolve_subagents(parent.app_config or config)
        call_id = getattr(runtime, "tool_call_id", None)
        spec = specs.get(subagent_type)
        problem = None
        if spec is None:
            problem = f"unknown subagent_type {subagent_type!r}; choose one of: {', '.join(sorted(specs))}"
        elif not prompt.strip():
            problem = "prompt is empty: describe the task and give the subagent all the context it needs"
        if problem is not None:
            if not call_id:
                return f"Error: {problem}"
            return normalize_tool_result(
                ToolMessage(content=f"Error: {problem}", tool_call_id=call_id, name=TASK_TOOL_NAME),
                status="error", error_type="invalid_input")
        assert spec is not None
        writer = getattr(runtime, "stream_writer", None) or _noop
        task_id = call_id or f"task-{uuid.uuid4().hex[:12]}"
        result = await executor.run(spec, prompt=prompt, description=description, task_id=task_id,
                                    parent=parent, writer=writer)
        text = result_text(result)
        if not call_id:  # called directly, not by the model: nothing to record
            return text
        extras: dict[str, Any] = {"subagent_status": result.status, "subagent_model_name": result.model,
                                  "subagent_token_usage": dict(result.usage)}
        if result.stop_reason:
            extras["subagent_stop_reason"] = result.stop_reason
        message = normalize_tool_result(
            ToolMessage(content=text, tool_call_id=call_id, name=TASK_TOOL_NAME, additional_kwargs=extras),
            status="success" if result.status == "completed" else "error",
            error_type=None if result.status == "completed" else
            ("timeout" if result.status == "timed_out" else "internal"),
        )
        return Command(update={"messages": [message], "delegations": [delegation_entry(result, parent.run_id)]})

    def task(description: Description, prompt: Prompt, subagent_type: SubagentType, *, runtime: Runtime) -> Any:
        # Sync graph runs: run the async body on a fresh loop in a helper thread.
        coro = atask(description, prompt, subagent_type, runtime=runtime)
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            return pool.submit(asyncio.run, coro).result()

    return StructuredTool.from_function(
        func=task,
        coroutine=atask,
        name=TASK_TOOL_NAME,
        description=_describe(resolve_subagents(config).values()),
    )
