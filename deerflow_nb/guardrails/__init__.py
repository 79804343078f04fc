r"""Guardrails: a policy on every tool call (allow, deny with a reason, or ask a human).

``config.yaml``::

    guardrails:
      deny:
        - tool: bash
          arg: command
          pattern: '\brm\s+-rf\b'
          reason: Deleting recursively is not allowed here; remove single files instead.
      require_approval:
        - tool: write_file
          arg: path
          pattern: ^/mnt/user-data/outputs/
      provider:                          # optional: your own policy, after the rules
        use: my_package.policy:MyProvider

The :class:`~deerflow_nb.agent.middlewares.guardrail.GuardrailMiddleware` applies the
policy in the lead agent and in every subagent.
"""

from __future__ import annotations

from typing import Any

from deerflow_nb.config.schema import AppConfig
from deerflow_nb.errors import ConfigError
from deerflow_nb.guardrails.builtin import RulesGuardrailProvider, argument_at
from deerflow_nb.guardrails.provider import (
    BaseGuardrailProvider,
    GuardrailDecision,
    GuardrailProvider,
    GuardrailReason,
    GuardrailRequest,
)

__all__ = [
    "BaseGuardrailProvider",
    "ChainedGuardrailProvider",
    "GuardrailDecision",
    "GuardrailProvider",
    "GuardrailReason",
    "GuardrailRequest",
    "RulesGuardrailProvider",
    "argument_at",
    "build_guardrail_provider",
]


class ChainedGuardrailProvider(BaseGuardrailProvider):
    """Several providers in order: the first that does not allow a call decides."""

    def __init__(self, providers: list[GuardrailProvider]) -> None:
        self.providers = providers

    def evaluate(self, request: GuardrailRequest) -> GuardrailDecision:
        """Ask each provider in turn."""
        for provider in self.providers:
            decision = provider.evaluate(request)
            if not decision.allow:
                return decision
        return GuardrailDecision.allowed()

    async def aevaluate(self, request: GuardrailRequest) -> GuardrailDecision:
        """Async twin of :meth:`evaluate`."""
        for provider in self.providers:
            decision = await provider.aevaluate(request)
            if not decision.allow:
                return decision
        return GuardrailDecision.allowed()


def build_guardrail_provider(config: AppConfig) -> GuardrailProvider | None:
    """The policy of ``config.guardrails`` (``None`` when nothing is checked).

    Raises:
        ConfigError: ``provider.use`` cannot be imported, is not a provider, or its
            constructor refuses ``provider.config``.
    """
    from deerflow_nb.reflection import resolve_class

    section = config.guardrails
    if not section.active:
        return None
    providers: list[GuardrailProvider] = []
    if section.deny or section.require_approval:
        providers.append(RulesGuardrailProvider(section.deny, section.require_approval))
    if section.provider is not None:
        cls: type[Any] = resolve_class(section.provider.use)
        try:
            custom = cls(**section.provider.config)
        except Exception as exc:
            raise ConfigError(f"guardrails.provider: {section.provider.use} cannot be created: "
                              f"{type(exc).__name__}: {exc}", key="guardrails.provider.config") from exc
        if not isinstance(custom, GuardrailProvider):
            raise ConfigError(f"guardrails.provider: {section.provider.use} has no evaluate/aevaluate methods "
                              "(subclass deerflow_nb.guardrails.BaseGuardrailProvider)", key="guardrails.provider.use")
        providers.append(custom)
    return providers[0] if len(providers) == 1 else ChainedGuardrailProvider(providers)
