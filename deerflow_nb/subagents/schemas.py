"""Response models of ``GET /subagents`` (``agent.subagents.list()`` in both modes)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

__all__ = ["SubagentInfo", "SubagentsResponse"]


class SubagentInfo(BaseModel):
    """One subagent type the lead can delegate to, with its effective budgets."""

    model_config = ConfigDict(extra="forbid")

    name: str
    description: str
    tools: list[str] | None
    model: str | None
    max_turns: int
    timeout_seconds: float
    #: Tokens one run of this subagent may spend (``stop_reason: token_capped`` when it does).
    token_budget: int


class SubagentsResponse(BaseModel):
    """Built-in and custom subagents."""

    model_config = ConfigDict(extra="forbid")

    subagents: list[SubagentInfo]
