"""Run one subagent: its own graph, the parent's sandbox and files, a time and turn budget.

A subagent graph has no checkpointer and runs in an *empty* ``contextvars`` context:
it inherits neither the parent's LangGraph config (checkpointer, stream callbacks, so
its tokens never leak into the lead's ``messages`` stream) nor its secrets. What the
parent sees comes through the ``custom`` events this module emits.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.tools import BaseTool
from langgraph.errors import GraphRecursionError

from deerflow_nb.agent.factory import guardrail_middlewares
from deerflow_nb.agent.middlewares import (
    DanglingToolCallMiddleware,
    LLMErrorHandlingMiddleware,
    LoopDetectionMiddleware,
    ModelLengthFinishReasonMiddleware,
    ReadBeforeWriteMiddleware,
    SandboxAuditMiddleware,
    SandboxMiddleware,
    SystemMessageCoalescingMiddleware,
    ThreadDataMiddleware,
    ToolErrorHandlingMiddleware,
    ToolOutputBudgetMiddleware,
)
from deerflow_nb.agent.middlewares.chain import MiddlewareChain
from deerflow_nb.agent.middlewares.llm_error_handling import ERROR_FLAG
from deerflow_nb.agent.middlewares.token_usage import add_usage
from deerflow_nb.agent.state import ThreadState
from deerflow_nb.config.schema import AppConfig
from deerflow_nb.context import RunContext
from deerflow_nb.runtime.streaming import STREAM_SUBGRAPHS_KEY, StreamConverter, subgraph_frame
from deerflow_nb.subagents.config import SubagentSpec, resolve_limits
from deerflow_nb.subagents.steps import STEP_MAX_CHARS, SubagentResult, build_step, merge_usage_totals
from deerflow_nb.subagents.token_budget import TokenBudgetMiddleware
from deerflow_nb.tools.tool_search import assemble_deferred_tools, mcp_routing_hints_prompt_section
from deerflow_nb.utils.custom_events import emit_custom_event

__all__ = ["ModelResolver", "StreamWriter", "SubagentExecutor", "ToolsProvider", "subagent_middlewares"]

logger = logging.getLogger(__name__)

#: ``(spec, parent context) -> (chat model, model label)``.
ModelResolver = Callable[[SubagentSpec, RunContext], tuple[BaseChatModel, str]]
#: ``config -> tools a subagent may choose from`` (before the spec's filter).
ToolsProvider = Callable[[AppConfig], Sequence[BaseTool]]
StreamWriter = Callable[[Any], None]
_MAX_GRAPHS = 16


def subagent_middlewares(config: AppConfig, token_budget: int | None = None,
                         deferred: Sequence[Any] = ()) -> list[Any]:
    """The subagent chain: the lead's safety middlewares, without memory, title, skills or uploads.

    ``token_budget``: the subagent's token budget (default: ``subagents.token_budget``).
    ``deferred``: MCP routing and the deferred-tool filter (``tool_search.enabled``).
    """
    chain: list[Any] = [
        ToolOutputBudgetMiddleware(config.tool_output_budget.max_chars),
        ThreadDataMiddleware(),
        SandboxMiddleware(),
        DanglingToolCallMiddleware(),
        LLMErrorHandlingMiddleware(),
        SandboxAuditMiddleware(),
        *guardrail_middlewares(config, interactive=False, is_subagent=True),
    ]
    if config.read_before_write.enabled:
        chain.append(ReadBeforeWriteMiddleware())
    chain += [ToolErrorHandlingMiddleware(), *deferred, SystemMessageCoalescingMiddleware()]
    if config.loop_detection.enabled:
        chain.append(LoopDetectionMiddleware(config.loop_detection.warn_threshold, config.loop_detection.hard_limit))
    limits = resolve_limits(config)
    chain.append(TokenBudgetMiddleware(token_budget or limits.token_budget, limits.token_warn_ratio))
    chain.append(ModelLengthFinishReasonMiddleware())
    return chain


class _Tracker:
    """Turns the growing message list of ``values`` chunks into steps, usage and events."""

    def __init__(self, task_id: str, writer: StreamWriter) -> None:
        self.task_id = task_id
        self.writer = writer
        self.messages: list[BaseMessage] = []
        self.steps: list[dict[str, Any]] = []
        self.usage: dict[str, int] = {}
        self._cursor = 1  # the first message is the task prompt
        self._seen: set[str] = set()

    def feed(self, messages: list[BaseMessage]) -> None:
        if len(messages) < self._cursor:  # history was compacted: continue from the new tail
            self._cursor = len(messages)
        for index in range(self._cursor, len(messages)):
            message = messages[index]
            key = message.id or f"#{index}"
            if key in self._seen:
                continue
            self._seen.add(key)
            step = build_step(message, index)
            if step is None:
                continue
            if isinstance(message, AIMessage) and message.usage_metadata:
                add_usage(self.usage, dict(message.usage_metadata))
            self.steps.append(step)
            self.writer({"type": "task_running", "task_id": self.task_id, "message_index": index,
                         "step": step, "usage": dict(self.usage)})
        self._cursor = len(messages)
        self.messages = messages


def _bound_to_current_context(writer: StreamWriter) -> StreamWriter:
    # LangGraph's stream writer (and LangChain's callbacks) read the parent run's config from a
    # context variable; the subagent runs in an empty context, so events are emitted from a copy
    # of this one: written to the parent's stream, and dispatched as its ``on_custom_event``s
    context = contextvars.copy_context()

    def emit(payload: Any) -> None:
        context.run(emit_custom_event, payload, writer)

    return emit


class SubagentExecutor:
    """Builds (and caches) subagent graphs and runs delegations with their budgets."""

    def __init__(self, resolve_model: ModelResolver, tools_for: ToolsProvider) -> None:
        self.resolve_model = resolve_model
        self.tools_for = tools_for
        self._graphs: dict[tuple[Any, ...], Any] = {}

    def _build(self, spec: SubagentSpec, model: BaseChatModel, config: AppConfig) -> Any:
        # tool_search defers MCP schemas here too; each task run starts with no promotions
        tools, deferral = assemble_deferred_tools([t for t in self.tools_for(config) if spec.allows(t.name)],
                                                  config.tool_search)
        sections = [deferral.prompt_section(),
                    mcp_routing_hints_prompt_section(tools, deferral.deferred_names, deferral.max_prompt_names)]
        return create_agent(
            model,
            tools=tools,
            system_prompt="\n\n".join([spec.full_prompt().rstrip(), *filter(None, sections)]) + "\n",
            middleware=[MiddlewareChain(subagent_middlewares(config, spec.token_budget, deferral.middlewares()),
                                        name="SubagentMiddlewareChain")],
            state_schema=ThreadState,
            context_schema=RunContext,
            checkpointer=None,
            name=f"subagent_{spec.name}",
        )

    async def graph_for(self, spec: SubagentSpec, model: BaseChatModel, config: AppConfig) -> Any:
        """The compiled subagent graph (cached per spec, model instance and config)."""
        key = (spec.model_dump_json(), id(model), id(config))
        graph = self._graphs.get(key)
        if graph is None:
            graph = await asyncio.to_thread(self._build, spec, model, config)
            if len(self._graphs) >= _MAX_GRAPHS:
                self._graphs.clear()
            self._graphs[key] = graph
        return graph

    def invalidate(self) -> None:
        """Forget compiled subagent graphs (tools or config changed)."""
        self._graphs.clear()

    async def run(self, spec: SubagentSpec, *, prompt: str, description: str, task_id: str,
                  parent: RunContext, writer: StreamWriter) -> SubagentResult:
        """Run one delegation to its end and emit ``task_*`` events through ``writer``.

        Returns the result; only cancellation of the caller propagates (the subagent is
        cancelled with it).
        """
        config = parent.app_config or AppConfig()
        limits = resolve_limits(config)
        writer = _bound_to_current_context(writer)
        model, label = self.resolve_model(spec, parent)
        result = SubagentResult(task_id=task_id, subagent_type=spec.name, description=description,
                                model=label, status="completed", started_at=time.time())
        writer({"type": "task_started", "task_id": task_id, "description": description,
                "subagent_type": spec.name, "model": label, "prompt": prompt[:STEP_MAX_CHARS]})
        child = RunContext(
            thread_id=parent.thread_id, user_id=parent.user_id, run_id=parent.run_id, app_config=config,
            paths=parent.paths, sandbox_provider=parent.sandbox_provider, model_name=label,
            thinking_enabled=parent.thinking_enabled, secrets={},  # request secrets never reach subagents
            # guardrail decisions inside the subagent reach the parent's stream (and journal)
            extra={"subagent": {"task_id": task_id, "type": spec.name}, "stream_writer": writer},
        )
        tracker = _Tracker(task_id, writer)
        max_turns = spec.max_turns or limits.max_turns
        timeout = spec.timeout_seconds or limits.timeout_seconds
        try:
            graph = await self.graph_for(spec, model, config)
            await self._run_isolated(graph, prompt, child, max_turns, tracker, timeout,
                                     stream_frames=bool(parent.extra.get(STREAM_SUBGRAPHS_KEY)))
            self._finish(result, tracker, child.extra.get("stop_reason"))
        except TimeoutError:
            result.status, result.error = "timed_out", f"the subagent did not finish within {timeout:g} seconds"
            result.result = _last_text(tracker.messages) or None
        except GraphRecursionError:
            self._finish(result, tracker, "turn_capped")
            if result.status == "completed" and not result.result:
                result.status, result.error = "failed", f"the subagent used all {max_turns} turns without an answer"
        except Exception as exc:  # the lead sees a failed task, never a crashed run
            logger.warning("subagent %s (%s) failed: %s", task_id, spec.name, exc, exc_info=True)
            result.status, result.error = "failed", f"{type(exc).__name__}: {exc}"
        result.usage, result.steps, result.finished_at = dict(tracker.usage), tracker.steps, time.time()
        if config.token_usage.enabled:  # the run's usage includes its subagents'
            merge_usage_totals(parent.extra.setdefault("token_usage", {}), label, result.usage)
        writer(result.event())
        return result

    async def _run_isolated(self, graph: Any, prompt: str, child: RunContext, max_turns: int,
                            tracker: _Tracker, timeout: float, *, stream_frames: bool = False) -> None:
        from deerflow_nb.tracing import subagent_trace_config

        # only the parent's tracing callbacks, read here in the task tool's context: the
        # subagent's trace nests below its ``task`` call (the graph runs in an empty context)
        about = child.extra.get("subagent") or {}
        traced = subagent_trace_config(str(about.get("type", "subagent")), str(about.get("task_id", "")))

        # a run started with ``stream_subgraphs`` (``stream_frames``): the subagent's values / updates /
        # messages frames join the run's stream, namespaced ``tools:<task_id>`` as LangGraph names a
        # subgraph called in the tools node; they travel as custom chunks of the parent
        converter = StreamConverter() if stream_frames else None
        namespace = f"tools:{about.get('task_id', '')}"

        async def drive() -> None:
            graph_input = {"messages": [HumanMessage(content=prompt)]}
            graph_config = {"recursion_limit": 2 * max_turns + 1, **traced}
            if converter is None:
                async for chunk in graph.astream(graph_input, config=graph_config, context=child,
                                                 stream_mode="values"):
                    tracker.feed(list(chunk.get("messages") or []))
                return
            async for mode, chunk in graph.astream(graph_input, config=graph_config, context=child,
                                                   stream_mode=["values", "updates", "messages"]):
                if mode == "values":
                    tracker.feed(list(chunk.get("messages") or []))
                for event in converter.feed(mode, chunk):
                    tracker.writer(subgraph_frame(event, namespace))

        # An empty context: no parent LangGraph config, checkpointer or callbacks leak in.
        task = asyncio.create_task(drive(), context=contextvars.Context())
        try:
            done, _ = await asyncio.wait({task}, timeout=timeout)
        except asyncio.CancelledError:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            raise
        if not done:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            raise TimeoutError
        task.result()

    @staticmethod
    def _finish(result: SubagentResult, tracker: _Tracker, stop_reason: str | None) -> None:
        result.stop_reason = stop_reason
        last = next((m for m in reversed(tracker.messages) if isinstance(m, AIMessage)), None)
        if last is None:
            result.status, result.error = "failed", "the subagent produced no answer"
        elif last.additional_kwargs.get(ERROR_FLAG):
            result.status, result.error = "failed", last.text
        else:
            result.status, result.result = "completed", last.text


def _last_text(messages: list[BaseMessage]) -> str:
    last = next((m for m in reversed(messages) if isinstance(m, AIMessage) and m.text), None)
    return last.text if last is not None else ""
