"""Custom guardrail providers named by ``guardrails.provider.use`` in the tests."""

from __future__ import annotations

from deerflow_nb.guardrails import BaseGuardrailProvider, GuardrailDecision, GuardrailRequest


class NoPrefix(BaseGuardrailProvider):
    """Denies ``write_file`` under ``prefix``; remembers what it saw."""

    seen: list[GuardrailRequest] = []

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix

    def evaluate(self, request: GuardrailRequest) -> GuardrailDecision:
        type(self).seen.append(request)
        if request.tool_name == "write_file" and str(request.tool_input.get("path", "")).startswith(self.prefix):
            return GuardrailDecision.denied(f"nothing may be written under {self.prefix}", code="team.paths",
                                            policy_id="team-paths")
        return GuardrailDecision.allowed()


class Broken(BaseGuardrailProvider):
    """Always raises."""

    def evaluate(self, request: GuardrailRequest) -> GuardrailDecision:
        raise RuntimeError("policy service unreachable")


class NotAProvider:
    """Has no evaluate method."""
