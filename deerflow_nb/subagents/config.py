"""Subagent definitions: the built-ins, custom ones from ``config.yaml`` and the clamped limits.

``subagents.custom`` entries look like::

    subagents:
      custom:
        - name: analyst
          description: Explores a data file and reports statistics.
          system_prompt: You are a careful data analyst ...
          tools: [bash, read_file, ls]      # default: every tool but task
          model: gpt-4o-mini                 # default: the lead agent's model
          max_turns: 20
          timeout_seconds: 300
          token_budget: 200000               # tokens per run, then it must answer (token_capped)
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from deerflow_nb.config.loader import format_loc
from deerflow_nb.config.schema import AppConfig
from deerflow_nb.errors import ConfigError

__all__ = [
    "BUILTIN_SUBAGENTS",
    "DEFAULT_TOKEN_BUDGET",
    "EXCLUDED_TOOLS",
    "SubagentLimits",
    "SubagentSpec",
    "clamp",
    "resolve_limits",
    "resolve_subagents",
]

#: Tools no subagent ever gets: no nested delegation, and no human to ask.
EXCLUDED_TOOLS = frozenset({"task", "ask_clarification"})

_COMMON_RULES = """\
You are a subagent working on one task delegated by the lead agent. You cannot talk to the user and
you cannot see the lead's conversation: everything you know is in the task below.
You share the lead's sandbox folders: /mnt/user-data/uploads (read only), /mnt/user-data/workspace
(scratch space, the working directory of bash) and /mnt/user-data/outputs (deliverables).
Work with the tools, then finish with a concise report of what you found or did, including the paths
of any files you wrote. That final message is the only thing the lead agent will see."""


class SubagentSpec(BaseModel):
    """One subagent type: its prompt, its tools and its budgets."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]{0,63}$", description="The subagent_type the lead uses.")
    description: str = Field(min_length=1, description="When the lead should pick this subagent.")
    system_prompt: str = Field(default="", description="Instructions, after the common subagent rules.")
    tools: list[str] | None = Field(default=None, description="Allowed tool names (default: all but task).")
    disallowed_tools: list[str] = Field(default_factory=list)
    model: str | None = Field(default=None, description="A configured model name (default: the lead's).")
    max_turns: int | None = Field(default=None, gt=0)
    timeout_seconds: float | None = Field(default=None, gt=0)
    token_budget: int | None = Field(default=None, gt=0, description="Tokens per run (default: "
                                     "subagents.token_budget.max_tokens).")

    def full_prompt(self) -> str:
        """The subagent's system prompt: common rules plus its own instructions."""
        return f"{_COMMON_RULES}\n\n{self.system_prompt.strip()}".strip() + "\n"

    def allows(self, tool_name: str) -> bool:
        """Whether this subagent may use ``tool_name``."""
        if tool_name in EXCLUDED_TOOLS or tool_name in self.disallowed_tools:
            return False
        return self.tools is None or tool_name in self.tools


BUILTIN_SUBAGENTS: dict[str, SubagentSpec] = {
    "general-purpose": SubagentSpec(
        name="general-purpose",
        description="A capable generalist with every tool except task: research, analysis, file work, "
        "multi-step subtasks that need their own context.",
        system_prompt="Plan briefly, use the tools, verify your results before reporting.",
    ),
    "bash": SubagentSpec(
        name="bash",
        description="A command-line specialist: runs shell commands (installs, scripts, data wrangling, "
        "builds) and reports their results.",
        system_prompt="Prefer bash. Run commands step by step, check exit codes and outputs, and report "
        "the relevant output (trimmed) in your final message.",
        tools=["bash", "ls", "read_file", "write_file", "str_replace", "glob", "grep"],
    ),
}


def resolve_subagents(config: AppConfig) -> dict[str, SubagentSpec]:
    """The built-ins plus ``subagents.custom`` (a custom entry may replace a built-in).

    Raises:
        ConfigError: a custom entry is invalid or its name is used twice; the key names the entry.
    """
    specs = dict(BUILTIN_SUBAGENTS)
    seen: set[str] = set()
    for index, raw in enumerate(config.subagents.custom):
        where = f"subagents.custom[{index}]"
        try:
            spec = SubagentSpec.model_validate(raw)
        except ValidationError as exc:
            error = exc.errors()[0]
            key = f"{where}.{format_loc(error['loc'])}" if error["loc"] else where
            raise ConfigError(f"invalid subagent at {key}: {error['msg']}", key=key) from exc
        if spec.name in seen:
            raise ConfigError(f"{where}.name: duplicate subagent name {spec.name!r}", key=f"{where}.name")
        seen.add(spec.name)
        specs[spec.name] = spec
    return specs


def clamp(value: int, low: int, high: int) -> int:
    """``value`` limited to ``[low, high]``."""
    return max(low, min(high, int(value)))


@dataclass(frozen=True)
class SubagentLimits:
    """The effective limits (the prompt quotes the same numbers the middleware enforces)."""

    max_concurrent: int
    max_total_per_run: int
    timeout_seconds: float
    max_turns: int
    #: Tokens one subagent run may spend; the model is told to wrap up at ``token_warn_ratio`` of it.
    token_budget: int = 2_000_000
    token_warn_ratio: float = 0.7


#: ``subagents.token_budget.max_tokens`` when unset: with summarization on, less history is resent per call.
DEFAULT_TOKEN_BUDGET = {True: 1_000_000, False: 2_000_000}


def resolve_limits(config: AppConfig) -> SubagentLimits:
    """Clamp the configured limits: concurrency to 1-4, the per-run total to 1-50."""
    section = config.subagents
    budget = section.token_budget
    return SubagentLimits(
        max_concurrent=clamp(section.max_concurrent_subagents, 1, 4),
        max_total_per_run=clamp(section.max_total_per_run, 1, 50),
        timeout_seconds=float(section.timeout_seconds),
        max_turns=int(section.max_turns),
        token_budget=budget.max_tokens or DEFAULT_TOKEN_BUDGET[bool(config.summarization.enabled)],
        token_warn_ratio=budget.warn_ratio,
    )
