"""The built-in provider: ``guardrails.deny`` and ``guardrails.require_approval`` rules from ``config.yaml``.

A rule matches a call when every condition it gives matches: ``tool`` (a name or a
glob such as ``mcp_*``) and ``pattern``, a regular expression searched in the argument
at the dotted path ``arg`` (``command``, ``options.path``, ``files.0``) or, without
``arg``, in the call's arguments serialized as JSON. Deny rules are checked first; the
first matching rule decides.
"""

from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Sequence
from typing import Any

from deerflow_nb.config.schema import GuardrailRule
from deerflow_nb.guardrails.provider import BaseGuardrailProvider, GuardrailDecision, GuardrailRequest

__all__ = ["RulesGuardrailProvider", "argument_at"]

_MISSING = object()


def argument_at(args: Any, path: str) -> Any:
    """The value at the dotted ``path`` of ``args`` (list items by index), or a private sentinel."""
    value = args
    for part in path.split("."):
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return _MISSING
    return value


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


class _Rule:
    def __init__(self, rule: GuardrailRule, index: int, kind: str) -> None:
        self.rule = rule
        self.policy_id = rule.id or f"{kind}[{index}]"
        self.regex = re.compile(rule.pattern) if rule.pattern is not None else None

    def matches(self, request: GuardrailRequest) -> bool:
        if self.rule.tool is not None and not fnmatch.fnmatchcase(request.tool_name, self.rule.tool):
            return False
        if self.regex is None:
            return True
        if self.rule.arg is not None:
            value = argument_at(request.tool_input, self.rule.arg)
            return value is not _MISSING and self.regex.search(_text(value)) is not None
        return self.regex.search(_text(request.tool_input)) is not None

    def describe(self) -> str:
        parts = [f"tool {self.rule.tool!r}" if self.rule.tool else "any tool"]
        if self.rule.pattern is not None:
            where = f"argument {self.rule.arg!r}" if self.rule.arg else "its arguments"
            parts.append(f"{where} matching {self.rule.pattern!r}")
        return " with ".join(parts)


class RulesGuardrailProvider(BaseGuardrailProvider):
    """Deny and require-approval rules (the ``guardrails`` section's ``deny`` / ``require_approval``)."""

    def __init__(self, deny: Sequence[GuardrailRule] = (), require_approval: Sequence[GuardrailRule] = ()) -> None:
        self.deny = [_Rule(rule, i, "deny") for i, rule in enumerate(deny)]
        self.require_approval = [_Rule(rule, i, "require_approval") for i, rule in enumerate(require_approval)]

    def evaluate(self, request: GuardrailRequest) -> GuardrailDecision:
        """The first matching deny rule denies, else the first approval rule asks, else allow."""
        for rule in self.deny:
            if rule.matches(request):
                reason = rule.rule.reason or f"the policy forbids {rule.describe()}"
                return GuardrailDecision.denied(reason, policy_id=rule.policy_id)
        for rule in self.require_approval:
            if rule.matches(request):
                reason = rule.rule.reason or f"the policy requires approval for {rule.describe()}"
                return GuardrailDecision.approval(reason, policy_id=rule.policy_id)
        return GuardrailDecision.allowed()

    async def aevaluate(self, request: GuardrailRequest) -> GuardrailDecision:
        """Pure and cheap: no worker thread."""
        return self.evaluate(request)
