"""The tool-call policy interface: a :class:`GuardrailProvider` judges a :class:`GuardrailRequest`.

A provider answers every tool call the agent is about to make (built-in tools, MCP
tools, ``task`` and the tools inside subagents) with a :class:`GuardrailDecision`:
allow, deny with a reason, or require a human's approval. The reason of a denial is
what the model reads as the tool's result, so write it for the model ("use a path
under /mnt/user-data/outputs instead").

Write one by subclassing :class:`BaseGuardrailProvider` (only :meth:`evaluate` is
required) and name it in ``config.yaml``::

    guardrails:
      provider:
        use: my_package.policy:NoFridayDeploys
        config: {team: data}          # keyword arguments of the constructor
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

__all__ = ["BaseGuardrailProvider", "GuardrailDecision", "GuardrailProvider", "GuardrailReason",
           "GuardrailRequest"]


@dataclass(frozen=True)
class GuardrailRequest:
    """One tool call about to run, with who is running it."""

    tool_name: str
    tool_input: dict[str, Any]
    tool_call_id: str | None = None
    thread_id: str | None = None
    run_id: str | None = None
    user_id: str | None = None
    #: The call comes from a subagent (``task``), not the lead agent.
    is_subagent: bool = False
    #: A human can answer an approval request in this run (false for scheduled, headless and subagent runs).
    interactive: bool = True
    #: ``guardrails.passport``: an identifier of this agent for external policy services.
    agent_id: str | None = None
    timestamp: str = ""


@dataclass(frozen=True)
class GuardrailReason:
    """Why a call was denied: a stable ``code`` for logs and a ``message`` for the model."""

    code: str
    message: str


@dataclass(frozen=True)
class GuardrailDecision:
    """The verdict on one call: ``allow``, or not, and whether a human may still approve it."""

    allow: bool
    reasons: tuple[GuardrailReason, ...] = field(default_factory=tuple)
    #: Which rule or policy decided (shown in the journal).
    policy_id: str | None = None
    #: Not allowed as is, but a human may approve it (a denial in non-interactive runs).
    require_approval: bool = False

    @classmethod
    def allowed(cls, policy_id: str | None = None) -> GuardrailDecision:
        """Let the call run."""
        return cls(allow=True, policy_id=policy_id)

    @classmethod
    def denied(cls, message: str, *, code: str = "guardrail.denied", policy_id: str | None = None
               ) -> GuardrailDecision:
        """Refuse the call; the model reads ``message`` as the tool's result."""
        return cls(allow=False, reasons=(GuardrailReason(code, message),), policy_id=policy_id)

    @classmethod
    def approval(cls, message: str, *, code: str = "guardrail.approval_required", policy_id: str | None = None
                 ) -> GuardrailDecision:
        """Pause the run until a human approves (or rejects) the call; ``message`` says why."""
        return cls(allow=False, reasons=(GuardrailReason(code, message),), policy_id=policy_id,
                   require_approval=True)

    @property
    def reason(self) -> str:
        """The first reason's message (empty when allowed without one)."""
        return self.reasons[0].message if self.reasons else ""

    @property
    def code(self) -> str:
        """The first reason's code (empty when allowed without one)."""
        return self.reasons[0].code if self.reasons else ""


@runtime_checkable
class GuardrailProvider(Protocol):
    """What the guardrail middleware calls: a sync and an async judgement of one request."""

    def evaluate(self, request: GuardrailRequest) -> GuardrailDecision:
        """Judge ``request`` (sync agents)."""
        ...

    async def aevaluate(self, request: GuardrailRequest) -> GuardrailDecision:
        """Judge ``request`` (async agents; must not block the event loop)."""
        ...


class BaseGuardrailProvider:
    """A provider defined by :meth:`evaluate`; :meth:`aevaluate` runs it in a worker thread.

    Override :meth:`aevaluate` as well when the policy does I/O that has an async client,
    or when it is pure and cheap (then call :meth:`evaluate` directly).
    """

    def evaluate(self, request: GuardrailRequest) -> GuardrailDecision:
        """Judge ``request``; the default allows everything."""
        return GuardrailDecision.allowed()

    async def aevaluate(self, request: GuardrailRequest) -> GuardrailDecision:
        """Async twin of :meth:`evaluate` (in a worker thread, so a slow policy blocks no loop)."""
        return await asyncio.to_thread(self.evaluate, request)
