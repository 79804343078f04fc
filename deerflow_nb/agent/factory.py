"""The lead-agent factory: LangChain's ``create_agent`` with DeerFlow's middleware chain."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware
from langchain_core.language_models import BaseChatModel
from langchain_core.tools import BaseTool
from langgraph.checkpoint.base import BaseCheckpointSaver

from deerflow_nb.agent.checkpoint_mode import MODE_MARKER, freeze_checkpoint_mode, register_delta_folds
from deerflow_nb.agent.middlewares import (
    AnswerCheckMiddleware,
    ClarificationMiddleware,
    DanglingToolCallMiddleware,
    DynamicContextMiddleware,
    InputSanitizationMiddleware,
    LLMErrorHandlingMiddleware,
    LoopDetectionMiddleware,
    ModelLengthFinishReasonMiddleware,
    ProgramAnswerMiddleware,
    ReadBeforeWriteMiddleware,
    SandboxAuditMiddleware,
    SandboxMiddleware,
    SummarizationMiddleware,
    SystemMessageCoalescingMiddleware,
    ThreadDataMiddleware,
    TitleMiddleware,
    TodoListMiddleware,
    TokenUsageMiddleware,
    ToolErrorHandlingMiddleware,
    ToolOutputBudgetMiddleware,
    UploadsMiddleware,
    ViewImageMiddleware,
)
from deerflow_nb.agent.middlewares.chain import MiddlewareChain
from deerflow_nb.agent.middlewares.dynamic_context import ContextProvider
from deerflow_nb.agent.middlewares.guardrail import GuardrailMiddleware
from deerflow_nb.agent.middlewares.model_retry import ModelRetryMiddleware
from deerflow_nb.agent.profile import SMALL_PROMPT
from deerflow_nb.agent.prompt import build_system_prompt
from deerflow_nb.agent.state import thread_state_schema
from deerflow_nb.config.schema import AppConfig, ModelConfig
from deerflow_nb.context import RunContext
from deerflow_nb.tools.tool_search import assemble_deferred_tools, mcp_routing_hints_prompt_section

__all__ = ["NON_INTERACTIVE_SECTION", "SLOTS", "AgentOptions", "build_middlewares", "guardrail_middlewares",
           "make_lead_agent"]

#: Extension points of the chain, in order: skills after DynamicContext, memory after
#: Title, subagents before LoopDetection, custom before the terminal tail.
SLOTS = ("skills", "memory", "subagents", "custom")


@dataclass(frozen=True)
class AgentOptions:
    """Per-run options that change the compiled graph (and so key the graph cache)."""

    model_name: str | None = None
    thinking_enabled: bool = False
    plan_mode: bool = False
    subagent_enabled: bool = False
    supports_vision: bool = False
    #: No human at hand (a scheduled or headless run): no ``ask_clarification``, proceed on assumptions.
    non_interactive: bool = False
    #: ``normal``, or ``small`` for small local models (compact prompt and tools; see ``agent.profile``).
    profile: str = "normal"


#: System prompt section of non-interactive runs.
NON_INTERACTIVE_SECTION = (
    "<non_interactive>\nNobody can answer questions during this run: the ask_clarification tool is not "
    "available. When something is ambiguous, choose the most reasonable interpretation, state the "
    "assumptions you made in your answer, and carry on to a complete result.\n</non_interactive>"
)


def _retry_middleware(config: AppConfig, options: AgentOptions) -> ModelRetryMiddleware:
    """Retries of transient model failures, from the model's ``models[]`` entry (else the defaults)."""
    entry = config.get_model_config(options.model_name) if options.model_name else None
    fields = ModelConfig.model_fields
    max_retries = entry.max_retries if entry else fields["max_retries"].default
    max_wait = entry.retry_max_wait if entry else fields["retry_max_wait"].default
    return ModelRetryMiddleware(max_retries=max_retries, max_delay=max_wait)


def guardrail_middlewares(config: AppConfig, *, interactive: bool = True, is_subagent: bool = False
                          ) -> list[AgentMiddleware]:
    """``[GuardrailMiddleware]`` when ``config.guardrails`` checks anything, else ``[]``."""
    from deerflow_nb.guardrails import build_guardrail_provider

    provider = build_guardrail_provider(config)
    if provider is None:
        return []
    section = config.guardrails
    return [GuardrailMiddleware(provider, fail_closed=section.fail_closed, interactive=interactive,
                                passport=section.passport, is_subagent=is_subagent)]


def build_middlewares(
    config: AppConfig,
    options: AgentOptions,
    *,
    slots: Mapping[str, Sequence[AgentMiddleware]] | None = None,
    context_providers: Sequence[ContextProvider] = (),
    deferred: Sequence[AgentMiddleware] = (),
) -> list[AgentMiddleware]:
    """The lead agent's middlewares in the reference order (outermost first).

    ``deferred``: MCP routing and the deferred-tool filter (``tool_search.enabled``).
    """
    slots = slots or {}
    unknown = set(slots) - set(SLOTS)
    if unknown:
        raise ValueError(f"unknown middleware slot(s) {sorted(unknown)}; known: {list(SLOTS)}")
    chain: list[AgentMiddleware] = [
        InputSanitizationMiddleware(),
        ToolOutputBudgetMiddleware(config.tool_output_budget.max_chars),
        ThreadDataMiddleware(),
        UploadsMiddleware(),
        SandboxMiddleware(),
        DanglingToolCallMiddleware(),
        LLMErrorHandlingMiddleware(),
        SandboxAuditMiddleware(),
    ]
    chain += guardrail_middlewares(config, interactive=not options.non_interactive)
    if config.read_before_write.enabled:
        chain.append(ReadBeforeWriteMiddleware())
    chain += [ToolErrorHandlingMiddleware(), DynamicContextMiddleware(list(context_providers))]
    chain += list(slots.get("skills", ()))
    if config.summarization.enabled:
        chain.append(SummarizationMiddleware(config.summarization))
    if options.plan_mode:
        chain.append(TodoListMiddleware())
    if config.token_usage.enabled:
        chain.append(TokenUsageMiddleware())
    chain.append(TitleMiddleware(config.title))
    chain += list(slots.get("memory", ()))
    if options.supports_vision:
        chain.append(ViewImageMiddleware())
    chain += list(deferred)
    chain.append(SystemMessageCoalescingMiddleware())
    chain += list(slots.get("subagents", ()))
    if config.loop_detection.enabled:
        chain.append(LoopDetectionMiddleware(config.loop_detection.warn_threshold, config.loop_detection.hard_limit))
    chain += list(slots.get("custom", ()))
    small = options.profile == "small"
    chain.append(AnswerCheckMiddleware(grounding=config.answers.grounds(small)))
    if small:
        chain.append(ProgramAnswerMiddleware(max_programs=config.answers.max_programs,
                                             check_programs=config.answers.check_programs,
                                             split_parts=config.answers.split_parts))
    chain += [ModelLengthFinishReasonMiddleware(), ClarificationMiddleware()]
    # innermost around the model: a retry repeats only the provider call
    chain.append(_retry_middleware(config, options))
    return chain


def _prepare_tools(tools: Sequence[BaseTool], non_interactive: bool = False) -> list[BaseTool]:
    prepared = []
    for tool in tools:
        if non_interactive and tool.name == "ask_clarification":
            continue
        if tool.name == "ask_clarification" and not tool.return_direct:
            # The run ends after the clarification message; see ClarificationMiddleware.
            tool = tool.model_copy(update={"return_direct": True})
        prepared.append(tool)
    return prepared


def make_lead_agent(
    model: BaseChatModel,
    *,
    config: AppConfig,
    options: AgentOptions | None = None,
    tools: Sequence[BaseTool] | None = None,
    checkpointer: BaseCheckpointSaver | None = None,
    slots: Mapping[str, Sequence[AgentMiddleware]] | None = None,
    prompt_sections: Sequence[str | None] = (),
    context_providers: Sequence[ContextProvider] = (),
) -> Any:
    """Compile the lead agent graph.

    ``tools`` defaults to :func:`deerflow_nb.tools.get_available_tools`. Run it with
    ``context=RunContext(...)`` so middlewares and tools find the sandbox and paths.
    The state schema follows ``config.checkpoint_channel_mode``, which this call freezes
    for the process (see :mod:`deerflow_nb.agent.checkpoint_mode`); a delta-mode graph
    stamps its checkpoints with the mode marker.
    """
    mode, frequency = freeze_checkpoint_mode(config.checkpoint_channel_mode,
                                             config.checkpoint_delta_snapshot_frequency)
    options = options or AgentOptions()
    if tools is None:
        from deerflow_nb.tools import get_available_tools

        tools = get_available_tools(config, supports_vision=options.supports_vision)
    # tool_search: MCP schemas are bound only once found (or routed); see tools/tool_search.py
    bound, deferral = assemble_deferred_tools(_prepare_tools(tools, options.non_interactive), config.tool_search)
    mcp_sections = [deferral.prompt_section(),
                    mcp_routing_hints_prompt_section(bound, deferral.deferred_names, deferral.max_prompt_names)]
    graph: Any = create_agent(
        model,
        tools=bound,
        system_prompt=(SMALL_PROMPT + "\n" if options.profile == "small" else
                       build_system_prompt([*prompt_sections, *mcp_sections,
                                            NON_INTERACTIVE_SECTION if options.non_interactive else None])),
        middleware=[MiddlewareChain(build_middlewares(config, options, slots=slots, context_providers=context_providers,
                                                      deferred=deferral.middlewares()))],
        state_schema=thread_state_schema(mode, frequency),
        context_schema=RunContext,
        checkpointer=checkpointer,
        name="lead_agent",
    )
    if mode != "delta":
        return graph
    register_delta_folds(checkpointer)
    return graph.with_config(metadata={MODE_MARKER: "delta"})
