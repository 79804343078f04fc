"""Pydantic models of ``config.yaml``.

Every section has defaults, so an empty file (or none at all) is a valid
configuration. Fields whose description starts with ``startup-only:`` need a
restart of the process (or the Jupyter server) to take effect; see
:data:`deerflow_nb.config.reload_boundary.STARTUP_ONLY_FIELDS`.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

__all__ = [
    "AppConfig",
    "DatabaseConfig",
    "GuardrailProviderConfig",
    "GuardrailRule",
    "GuardrailsConfig",
    "LoopDetectionConfig",
    "MemoryConfig",
    "ModelConfig",
    "ModelPricing",
    "OtelConfig",
    "ReadBeforeWriteConfig",
    "SandboxConfig",
    "SkillsConfig",
    "StreamBridgeConfig",
    "SubagentTokenBudget",
    "SubagentsConfig",
    "SummarizationConfig",
    "TitleConfig",
    "TokenUsageConfig",
    "ToolConfig",
    "ToolGroupConfig",
    "ToolOutputBudgetConfig",
    "ToolSearchConfig",
    "TracingConfig",
]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class ModelPricing(_Section):
    """Prices in the currency of your choice per million tokens."""

    input_per_million: float = Field(ge=0)
    output_per_million: float = Field(ge=0)
    input_cache_hit_per_million: float | None = Field(default=None, ge=0)


class ModelConfig(BaseModel):
    """One ``models[]`` entry: a LangChain chat model class plus its constructor kwargs.

    Keys not listed here are passed to the class as keyword arguments.
    """

    model_config = ConfigDict(extra="allow")

    name: str = Field(min_length=1, description="Name used to select the model (model_name).")
    use: str = Field(min_length=1, description="'package.module:ChatClass' of a LangChain BaseChatModel.")
    display_name: str | None = None
    description: str | None = None
    supports_thinking: bool = False
    supports_reasoning_effort: bool = False
    supports_vision: bool = False
    when_thinking_enabled: dict[str, Any] | None = None
    pricing: ModelPricing | None = None
    max_retries: int = Field(
        default=2, ge=0, description="Retries of a transient model failure (timeout, connection, 429, 5xx)."
    )
    retry_max_wait: float = Field(
        default=60.0, ge=0, description="Longest wait (s) between retries, also for a provider's Retry-After."
    )
    profile: Literal["normal", "small"] | None = Field(
        default=None,
        description="Agent profile: 'small' for small local models (compact prompt, table tools); "
        "unset: 'small' for the embedded model, else 'normal'.",
    )

    @field_validator("use")
    @classmethod
    def _check_use(cls, value: str) -> str:
        if ":" not in value and "." not in value:
            raise ValueError("must look like 'package.module:ClassName'")
        return value

    def model_kwargs(self) -> dict[str, Any]:
        """The extra keys of this entry: constructor kwargs for the model class."""
        return dict(self.model_extra or {})


class ToolConfig(BaseModel):
    """One ``tools[]`` entry: a LangChain tool resolved from ``use``."""

    model_config = ConfigDict(extra="allow")

    name: str = Field(min_length=1)
    use: str = Field(min_length=1)
    group: str | None = None


class ToolGroupConfig(_Section):
    """A logical group of tools."""

    name: str = Field(min_length=1)


class SandboxConfig(BaseModel):
    """startup-only: which sandbox provider runs the agent's commands and its limits."""

    model_config = ConfigDict(extra="allow")

    use: str = Field(
        default="local",
        description="'local', 'bubblewrap', 'docker' or a 'module:Class' SandboxProvider path.",
    )
    bash_command_timeout: int = Field(default=600, gt=0, description="Wall-clock limit per command (s).")
    network: Literal["none", "host"] = "none"
    max_output_bytes: int = Field(default=1_000_000, gt=0)
    memory_mb: int = Field(default=2048, gt=0)
    pids_limit: int = Field(default=256, gt=0)
    cpus: float = Field(default=1.0, gt=0)
    image: str = "deerflow-nb-sandbox:latest"
    idle_timeout: int = Field(default=600, ge=0)
    idle_check_interval: int = Field(default=60, gt=0)
    replicas: int = Field(default=3, ge=0)


class SkillsConfig(_Section):
    """Where skills live on the host and inside the sandbox."""

    path: str | None = Field(default=None, description="Public skills root; default: the packaged skills.")
    container_path: str = "/mnt/skills"
    deferred_discovery: bool = False


class TitleConfig(_Section):
    """Automatic thread titles."""

    enabled: bool = True
    max_words: int = Field(default=6, gt=0)
    max_chars: int = Field(default=60, gt=0)
    model_name: str | None = None


class SummarizationConfig(_Section):
    """Context summarization when the conversation grows long (tokens counted with the model's tokenizer)."""

    enabled: bool = True
    model_name: str | None = None
    trigger_tokens: int = Field(default=60_000, gt=0)
    trigger_messages: int | None = Field(default=None, gt=0)
    keep_messages: int = Field(default=10, gt=0)


class MemoryConfig(_Section):
    """Long-term memory."""

    enabled: bool = True
    mode: Literal["middleware", "tool"] = "middleware"
    storage_path: str | None = None
    debounce_seconds: float = Field(default=30, ge=0)
    shutdown_flush_timeout_seconds: float = Field(default=10, ge=0)
    model_name: str | None = None
    max_facts: int = Field(default=100, gt=0)
    fact_confidence_threshold: float = Field(default=0.7, ge=0, le=1)
    injection_enabled: bool = True
    max_injection_tokens: int = Field(default=2000, gt=0)


class SubagentsConfig(BaseModel):
    """Subagent delegation through the ``task`` tool."""

    model_config = ConfigDict(extra="allow")

    enabled: bool = True
    max_concurrent_subagents: int = 3
    max_total_per_run: int = 6
    timeout_seconds: float = Field(default=1800, gt=0)
    max_turns: int = Field(default=50, gt=0)
    token_budget: SubagentTokenBudget = Field(default_factory=lambda: SubagentTokenBudget())
    custom: list[dict[str, Any]] = Field(default_factory=list)


class SubagentTokenBudget(_Section):
    """Tokens one subagent may spend before it must answer (``stop_reason: token_capped``)."""

    max_tokens: int | None = Field(default=None, gt=0, description="Default: 1,000,000 with summarization "
                                   "enabled, 2,000,000 without.")
    warn_ratio: float = Field(default=0.7, gt=0, le=1, description="Share of the budget at which the subagent "
                              "is told to wrap up.")


class GuardrailRule(_Section):
    """One ``guardrails.deny`` / ``guardrails.require_approval`` rule; every given condition must match."""

    tool: str | None = Field(default=None, min_length=1, description="Tool name or glob (bash, mcp_*); "
                             "default: every tool.")
    arg: str | None = Field(default=None, min_length=1, description="Dotted path into the arguments "
                            "(command, options.path, files.0); needs pattern.")
    pattern: str | None = Field(default=None, min_length=1, description="Regular expression searched in the "
                                "argument at arg, else in the JSON of all arguments.")
    reason: str | None = Field(default=None, max_length=1000, description="What the model (or the approver) "
                               "is told.")
    id: str | None = Field(default=None, min_length=1, max_length=200, description="Policy id in the journal.")

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                re.compile(value)
            except re.error as exc:
                raise ValueError(f"not a valid regular expression: {exc}") from None
        return value

    @model_validator(mode="after")
    def _has_condition(self) -> GuardrailRule:
        if self.tool is None and self.pattern is None:
            raise ValueError("a rule needs tool and/or pattern (tool: '*' matches every tool)")
        if self.arg is not None and self.pattern is None:
            raise ValueError("arg needs a pattern to match the argument against")
        return self


class GuardrailProviderConfig(_Section):
    """``guardrails.provider``: a custom policy class."""

    use: str = Field(min_length=1, description="'package.module:Class' of a GuardrailProvider.")
    config: dict[str, Any] = Field(default_factory=dict, description="Keyword arguments of its constructor.")


class GuardrailsConfig(_Section):
    """Tool-call policy: deny rules, approval rules and an optional custom provider."""

    enabled: bool = True
    fail_closed: bool = Field(default=True, description="Deny a call when the provider raises (else allow it).")
    passport: str | None = Field(default=None, description="Agent id passed to providers (GuardrailRequest.agent_id).")
    deny: list[GuardrailRule] = Field(default_factory=list)
    require_approval: list[GuardrailRule] = Field(default_factory=list)
    provider: GuardrailProviderConfig | None = None

    @property
    def active(self) -> bool:
        """Whether any call is checked (enabled, with rules or a provider)."""
        return self.enabled and bool(self.deny or self.require_approval or self.provider)


class DatabaseConfig(_Section):
    """startup-only: where threads, runs and checkpoints are stored."""

    backend: Literal["sqlite", "postgres", "memory"] = "sqlite"
    url: str | None = Field(default=None, description="SQLAlchemy URL; postgresql+asyncpg://... for Postgres.")
    sqlite_path: str | None = Field(default=None, description="Default: {home}/deerflow.db")


class StreamBridgeConfig(_Section):
    """startup-only: the in-memory event fan-out of running runs."""

    type: Literal["memory"] = "memory"
    queue_maxsize: int = Field(default=256, gt=0)
    heartbeat_seconds: float = Field(default=15, gt=0)
    reader_queue_maxsize: int = Field(default=4096, gt=0, description="Unread events kept for one SSE reader; "
                                      "a reader further behind gets a gap event and continues from there.")


class RunsConfig(_Section):
    """startup-only: run leases, so that processes sharing a database recover each other's orphans."""

    lease_seconds: float = Field(default=30, gt=0, description="How long a run's lease lasts without renewal; "
                                 "a run whose lease expired is recovered by any process on the database.")
    lease_renew_seconds: float = Field(default=10, gt=0, description="How often the owner renews its leases "
                                       "(less than lease_seconds).")
    recover_interval_seconds: float = Field(default=30, ge=0, description="How often a long-lived process "
                                            "looks for expired leases (0: only at startup).")

    @model_validator(mode="after")
    def _renew_within_lease(self) -> RunsConfig:
        if self.lease_renew_seconds >= self.lease_seconds:
            raise ValueError(f"runs.lease_renew_seconds ({self.lease_renew_seconds}) must be less than "
                             f"runs.lease_seconds ({self.lease_seconds})")
        return self


class TokenUsageConfig(_Section):
    """Token usage accounting."""

    enabled: bool = True


class LoopDetectionConfig(_Section):
    """Hard-stop repeated identical tool calls."""

    enabled: bool = True
    warn_threshold: int = Field(default=3, gt=0)
    hard_limit: int = Field(default=5, gt=0)


class AnswersConfig(_Section):
    """Checks on final answers (every profile) and the small profile's program loop.

    A final answer that is empty, a tool call written as text, an echo of the instructions, a plan
    in prose or full of placeholders gets one repair turn and then ends the run as an error. With
    numeric grounding on, so does an answer stating numbers no tool result of the run printed.
    """

    numeric_grounding: Literal["small", "always", "never"] = Field(
        default="small", description="check the numbers of answers: for the small profile only (default), "
                                     "for every profile, or never")
    max_programs: int = Field(default=3, ge=1, le=10,
                              description="small profile: programs tried for one question before the run fails")
    check_programs: int = Field(default=2, ge=0, le=4,
                                description="small profile: independent programs that must reach a program's answer "
                                            "before it is given (one agreeing is enough; 0: no checks)")
    split_parts: bool = Field(default=True,
                              description="small profile: answer a question that asks several things one part at a "
                                          "time, each with its own programs and checks")

    def grounds(self, small: bool) -> bool:
        """Whether numeric grounding applies to a run of the small (``True``) or normal profile."""
        return self.numeric_grounding == "always" or (self.numeric_grounding == "small" and small)


class ReadBeforeWriteConfig(_Section):
    """Refuse edits of files the agent has not read in their current version."""

    enabled: bool = True


class ToolOutputBudgetConfig(_Section):
    """Cap tool output before it re-enters the model context."""

    max_chars: int = Field(default=20_000, gt=0)


class ToolSearchConfig(_Section):
    """Deferred tool loading: MCP tools are listed by name and bound once ``tool_search`` finds them."""

    enabled: bool = Field(default=False, description="Defer MCP tool schemas behind the tool_search tool.")
    auto_promote_top_k: int = Field(
        default=3, description="Deferred tools with routing.mode prefer whose keywords match the user's message, "
        "bound before the model call (at most; clamped to 1..5).")
    max_search_results: int = Field(default=5, ge=1, le=20, description="Tool schemas one tool_search returns.")
    max_prompt_names: int = Field(default=50, ge=1, le=500, description="Deferred tool names listed in the "
                                  "system prompt; the rest stay searchable.")
    max_active_tools: int = Field(default=20, ge=1, le=100, description="Promoted tool schemas bound per model "
                                  "call, the most recently promoted; older ones are found again with tool_search.")

    @field_validator("auto_promote_top_k")
    @classmethod
    def _clamp_top_k(cls, value: int) -> int:
        return min(max(value, 1), 5)

    @model_validator(mode="after")
    def _room_for_discovery(self) -> ToolSearchConfig:
        # a search and the routing of the same call must both fit, or discovery evicts itself
        if self.max_active_tools < self.max_search_results + self.auto_promote_top_k:
            raise ValueError(f"max_active_tools ({self.max_active_tools}) must be at least max_search_results + "
                             f"auto_promote_top_k ({self.max_search_results + self.auto_promote_top_k})")
        return self


class OtelConfig(_Section):
    """startup-only: OpenTelemetry spans for runs, model calls and tool calls."""

    enabled: bool = Field(default=False, description="Install a tracer provider exporting over OTLP/HTTP when "
                          "the process has none (a provider you set up yourself is used without this).")
    endpoint: str | None = Field(default=None, min_length=1, description="OTLP/HTTP traces URL; default: the "
                                 "OTEL_EXPORTER_OTLP_* environment (http://localhost:4318/v1/traces).")
    service_name: str = Field(default="deerflow-nb", min_length=1)


class TracingConfig(_Section):
    """Tracing (LangSmith and Langfuse are switched on by their environment variables)."""

    otel: OtelConfig = Field(default_factory=OtelConfig)


class AppConfig(BaseModel):
    """The whole ``config.yaml``."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    config_version: int = Field(default=0, ge=0)
    home: str | None = Field(default=None, description="startup-only: data directory (DEER_FLOW_HOME wins).")
    log_level: str = Field(default="info", description="startup-only: logging level.")
    logging: dict[str, Any] = Field(default_factory=dict, description="startup-only: logging options.")
    models: list[ModelConfig] = Field(default_factory=list)
    tools: list[ToolConfig] = Field(default_factory=list)
    tool_groups: list[ToolGroupConfig] = Field(default_factory=list)
    sandbox: SandboxConfig = Field(default_factory=SandboxConfig)
    skills: SkillsConfig = Field(default_factory=SkillsConfig)
    title: TitleConfig = Field(default_factory=TitleConfig)
    summarization: SummarizationConfig = Field(default_factory=SummarizationConfig)
    memory: MemoryConfig = Field(default_factory=MemoryConfig)
    subagents: SubagentsConfig = Field(default_factory=SubagentsConfig)
    guardrails: GuardrailsConfig = Field(default_factory=GuardrailsConfig)
    database: DatabaseConfig = Field(default_factory=DatabaseConfig)
    checkpointer: dict[str, Any] | None = Field(default=None, description="startup-only: deprecated.")
    checkpoint_channel_mode: Literal["full", "delta"] = Field(
        default="delta",
        description="startup-only: how checkpoints store `messages`: `delta` (each step's new messages; "
                    "threads written in full mode stay readable) or `full` (the whole list at every step).")
    checkpoint_delta_snapshot_frequency: int = Field(
        default=1000, ge=1,
        description="startup-only: in delta mode, every Nth update of `messages` stores the whole list once, "
                    "bounding how many writes a cold read replays.")
    run_events: dict[str, Any] = Field(default_factory=dict, description="startup-only: run journal options.")
    stream_bridge: StreamBridgeConfig = Field(default_factory=StreamBridgeConfig)
    runs: RunsConfig = Field(default_factory=RunsConfig)
    token_usage: TokenUsageConfig = Field(default_factory=TokenUsageConfig)
    loop_detection: LoopDetectionConfig = Field(default_factory=LoopDetectionConfig)
    answers: AnswersConfig = Field(default_factory=AnswersConfig)
    read_before_write: ReadBeforeWriteConfig = Field(default_factory=ReadBeforeWriteConfig)
    tool_output_budget: ToolOutputBudgetConfig = Field(default_factory=ToolOutputBudgetConfig)
    tool_search: ToolSearchConfig = Field(default_factory=ToolSearchConfig)
    tracing: TracingConfig = Field(default_factory=TracingConfig)

    @field_validator("models")
    @classmethod
    def _unique_model_names(cls, models: list[ModelConfig]) -> list[ModelConfig]:
        seen: set[str] = set()
        for model in models:
            if model.name in seen:
                raise ValueError(f"duplicate model name {model.name!r}")
            seen.add(model.name)
        return models

    def get_model_config(self, name: str) -> ModelConfig | None:
        """The ``models[]`` entry called ``name``, or ``None``."""
        return next((m for m in self.models if m.name == name), None)
