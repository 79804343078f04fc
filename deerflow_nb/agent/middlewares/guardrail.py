"""Apply the tool-call policy (``guardrails``) to every tool call, with approval through a human-input card.

A denied call never runs: its result is an error ``ToolMessage`` carrying the reason,
so the model can take another way. A call that needs approval ends the run with a
human-input card (``source: "guardrail"``, options *Approve* / *Reject*). The answer
starts the next run: this middleware then re-issues the held call in place of a model
turn (no model call), approved or rejected, so the call runs exactly as the human saw
it, or its result says the human rejected it. An approval is valid only for the very
call (name and arguments) shown on the card, and only with the human's answer in the
thread. In non-interactive runs (scheduled, headless, subagents) a call that needs
approval is denied, saying so.

Every decision other than a plain allow is a ``custom`` stream event
``{"type": "guardrail", ...}``, which the run journal keeps as a ``guardrail`` entry.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain.agents.middleware.types import ModelCallResult
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.errors import GraphBubbleUp

from deerflow_nb.agent.middlewares._base import context_of, last_ai
from deerflow_nb.guardrails.provider import GuardrailDecision, GuardrailProvider, GuardrailRequest
from deerflow_nb.utils.custom_events import emit_custom_event

__all__ = ["APPROVAL_OPTIONS", "APPROVAL_TOOL", "GuardrailMiddleware"]

logger = logging.getLogger(__name__)

#: The hidden, never bound tool whose name the approval card carries: it is ``return_direct``,
#: so the run ends after the card (the model never sees or calls it).
APPROVAL_TOOL = "guardrail_approval"
APPROVAL_OPTIONS = ("Approve", "Reject")
_DECISIONS_KEY = "guardrail_decisions"
_REISSUED = "guardrail-"  # re-issued call ids: guardrail-approve:<id> / guardrail-reject:<id>
_REASON_LIMIT = 500


def _approval_tool() -> BaseTool:
    def refuse() -> str:
        return "guardrail_approval is not a tool you can call"

    return StructuredTool.from_function(refuse, name=APPROVAL_TOOL, return_direct=True,
                                        description="Internal: marks a tool call awaiting a human's approval.")


def _messages_of(state: Any) -> list[BaseMessage]:
    messages = state.get("messages") if isinstance(state, dict) else getattr(state, "messages", None)
    return list(messages or [])


def _card_of(message: BaseMessage) -> dict[str, Any] | None:
    if isinstance(message, ToolMessage) and isinstance(message.artifact, dict):
        card = message.artifact.get("human_input")
        if isinstance(card, dict) and card.get("source") == "guardrail":
            return card
    return None


def _answer_to(messages: Sequence[BaseMessage], tool_call_id: str) -> tuple[dict[str, Any], str] | None:
    """The latest answered approval card for ``tool_call_id`` and its verdict (``approve`` / ``reject``).

    Scanned from the end: call ids need not be unique across turns (some models count from 0).
    """
    answer: str | None = None
    for message in reversed(messages):
        if answer is None:
            response = message.additional_kwargs.get("human_input_response") \
                if isinstance(message, HumanMessage) else None
            if isinstance(response, dict) and response.get("tool_call_id") == tool_call_id:
                answer = str(response.get("option") or response.get("text") or "").strip().lower()
            continue
        card = _card_of(message)
        if card is not None and card.get("tool_call_id") == tool_call_id:
            return card, "approve" if answer in {"approve", "approved", "yes", "y"} else "reject"
    return None


class GuardrailMiddleware(AgentMiddleware):
    """Checks each tool call against ``provider`` before it runs.

    Args:
        provider: the policy (see :func:`deerflow_nb.guardrails.build_guardrail_provider`).
        fail_closed: deny a call when the provider raises (else let it run, logged).
        interactive: a human can approve calls in this agent's runs.
        passport: ``GuardrailRequest.agent_id``.
        is_subagent: this middleware guards a subagent's calls.
    """

    def __init__(self, provider: GuardrailProvider, *, fail_closed: bool = True, interactive: bool = True,
                 passport: str | None = None, is_subagent: bool = False) -> None:
        super().__init__()
        self.provider = provider
        self.fail_closed = fail_closed
        self.interactive = interactive and not is_subagent
        self.passport = passport
        self.is_subagent = is_subagent
        self.tools = [_approval_tool()] if self.interactive else []

    # -- requests and results ----------------------------------------------------------
    def _request(self, request: Any) -> GuardrailRequest:
        call, ctx = request.tool_call, context_of(request)
        return GuardrailRequest(
            tool_name=str(call.get("name", "")), tool_input=dict(call.get("args") or {}),
            tool_call_id=call.get("id"), thread_id=ctx.thread_id, run_id=ctx.run_id, user_id=ctx.user_id,
            is_subagent=self.is_subagent, interactive=self.interactive, agent_id=self.passport,
            timestamp=datetime.now(UTC).isoformat())

    def _record(self, request: Any, decision: GuardrailDecision, action: str, **extra: Any) -> None:
        call = request.tool_call
        event = {"type": "guardrail", "action": action, "tool_name": call.get("name"),
                 "tool_call_id": call.get("id"), "allow": decision.allow, "policy_id": decision.policy_id,
                 "reason_codes": [r.code for r in decision.reasons],
                 "reasons": [r.message[:_REASON_LIMIT] for r in decision.reasons],
                 "is_subagent": self.is_subagent, **extra}
        logger.info("guardrail %s: tool=%s policy=%s", action, call.get("name"), decision.policy_id)
        # a subagent's ``stream_writer`` is its parent's emitter (it writes and dispatches in the parent run)
        emitter = context_of(request).extra.get("stream_writer")
        try:
            if emitter is None:
                emit_custom_event(event)
            else:
                emitter(event)
        except Exception:  # a stream that cannot take it: the decision stands
            logger.debug("guardrail event not streamed", exc_info=True)

    @staticmethod
    def _denied(request: Any, decision: GuardrailDecision) -> ToolMessage:
        from deerflow_nb.tools.meta import normalize_tool_result

        call = request.tool_call
        text = (f"Guardrail denied the tool call {call.get('name')!r} ({decision.code or 'guardrail.denied'}): "
                f"{decision.reason or 'blocked by policy'}. Do not retry it; choose another approach.")
        message = ToolMessage(content=text, tool_call_id=call["id"], name=call.get("name"), status="error")
        return normalize_tool_result(message, status="error", error_type="permission",
                                     recoverable_by_model=True, recommended_next_action="choose_another_approach",
                                     source="guardrail")

    @staticmethod
    def _card(request: Any, decision: GuardrailDecision) -> ToolMessage:
        from deerflow_nb.agent.human_input import format_request_text
        from deerflow_nb.tools.meta import normalize_tool_result

        call = request.tool_call
        card = {"version": 1, "mode": "choice_with_other", "source": "guardrail", "tool_call_id": call["id"],
                "clarification_type": "approval", "question": f"Allow the agent to run {call.get('name')}?",
                "context": (decision.reason or "This call needs approval.")[:_REASON_LIMIT],
                "options": list(APPROVAL_OPTIONS), "policy_id": decision.policy_id,
                "tool_call": {"name": call.get("name"), "args": dict(call.get("args") or {})}}
        message = ToolMessage(content=format_request_text(card), tool_call_id=call["id"], name=APPROVAL_TOOL,
                              artifact={"human_input": card})
        return normalize_tool_result(message, status="success", source="guardrail")

    def _reissued(self, request: Any) -> str | None:
        """``approve`` / ``reject`` for a re-issued call the human answered, else ``None``."""
        call_id = str(request.tool_call.get("id") or "")
        if not call_id.startswith(_REISSUED) or ":" not in call_id:
            return None
        verdict, original = call_id[len(_REISSUED):].split(":", 1)
        messages = _messages_of(request.state)
        # only the turn this middleware wrote right after the answer (never a model's look-alike call)
        index = next((i for i in range(len(messages) - 1, 0, -1) if isinstance(message := messages[i], AIMessage)
                      and any(c.get("id") == call_id for c in message.tool_calls)), None)
        if index is None or messages[index].additional_kwargs.get("guardrail_resume") != verdict:
            return None
        answered = _answer_to(messages[:index], original)
        if answered is None or answered[1] != verdict:
            return None
        held = answered[0].get("tool_call") or {}
        same = held.get("name") == request.tool_call.get("name") and held.get("args") == request.tool_call.get("args")
        return verdict if same else None

    def _stashed(self, request: Any) -> GuardrailDecision | None:
        stash = context_of(request).extra.get(_DECISIONS_KEY)
        return stash.pop(request.tool_call.get("id"), None) if isinstance(stash, dict) else None

    def _provider_failed(self, request: Any, exc: Exception) -> GuardrailDecision:
        logger.warning("guardrail provider failed on %s: %s", request.tool_call.get("name"), exc, exc_info=True)
        if self.fail_closed:
            return GuardrailDecision.denied(f"the guardrail provider failed ({type(exc).__name__}), so the call "
                                            "is blocked (fail-closed)", code="guardrail.provider_error")
        return GuardrailDecision.allowed(policy_id="guardrail.provider_error")

    def _settle(self, request: Any, decision: GuardrailDecision, run: Callable[[], Any]) -> Any:
        """Run the call or answer it, for ``decision``."""
        if decision.allow:
            if decision.policy_id == "guardrail.provider_error":
                self._record(request, decision, "allow_after_provider_error")
            return run()
        if decision.require_approval and self.interactive:
            self._record(request, decision, "require_approval")
            return self._card(request, decision)
        if decision.require_approval:
            who = "a subagent" if self.is_subagent else "a non-interactive run"
            decision = GuardrailDecision.denied(
                f"{decision.reason or 'this call needs approval'} — it needs a human's approval, and this is "
                f"{who}, where nobody can approve it", code="guardrail.approval_unavailable",
                policy_id=decision.policy_id)
        self._record(request, decision, "deny")
        return self._denied(request, decision)

    def _verdict(self, request: Any, verdict: str) -> GuardrailDecision:
        if verdict == "approve":
            decision = GuardrailDecision.allowed(policy_id="human_approval")
            self._record(request, decision, "approved")
            return decision
        return GuardrailDecision.denied("the user rejected this call", code="guardrail.rejected",
                                        policy_id="human_approval")

    # -- tool calls ----------------------------------------------------------------------
    def wrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        """Check the call, then run it, deny it or hold it for approval."""
        if request.tool_call.get("name") == APPROVAL_TOOL:
            return self._settle(request, GuardrailDecision.denied("not a callable tool"), lambda: None)
        verdict = self._reissued(request)
        if verdict is not None:
            return self._settle(request, self._verdict(request, verdict), lambda: handler(request))
        decision = self._stashed(request)
        if decision is None:
            try:
                decision = self.provider.evaluate(self._request(request))
            except GraphBubbleUp:
                raise
            except Exception as exc:
                decision = self._provider_failed(request, exc)
        return self._settle(request, decision, lambda: handler(request))

    async def awrap_tool_call(self, request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        """Async twin of :meth:`wrap_tool_call`."""
        if request.tool_call.get("name") == APPROVAL_TOOL:
            return self._settle(request, GuardrailDecision.denied("not a callable tool"), lambda: None)
        verdict = self._reissued(request)
        decision = self._verdict(request, verdict) if verdict is not None else self._stashed(request)
        if decision is None:
            try:
                decision = await self.provider.aevaluate(self._request(request))
            except GraphBubbleUp:
                raise
            except Exception as exc:
                decision = self._provider_failed(request, exc)
        result = self._settle(request, decision, lambda: handler(request))
        return await result if isinstance(result, Awaitable) else result

    # -- model calls ---------------------------------------------------------------------
    def _resume(self, request: ModelRequest) -> ModelResponse | None:
        """After an answered approval card: the held call, re-issued instead of a model turn."""
        messages = list(request.messages)
        if not messages or not isinstance(messages[-1], HumanMessage):
            return None
        response = messages[-1].additional_kwargs.get("human_input_response")
        if not isinstance(response, dict) or not isinstance(response.get("tool_call_id"), str):
            return None
        answered = _answer_to(messages, response["tool_call_id"])
        if answered is None:
            return None
        card, verdict = answered
        held = card.get("tool_call") or {}
        call = {"name": held.get("name"), "args": held.get("args") or {},
                "id": f"{_REISSUED}{verdict}:{response['tool_call_id']}", "type": "tool_call"}
        return ModelResponse(result=[AIMessage(content="", tool_calls=[call],
                                               additional_kwargs={"guardrail_resume": verdict})])

    def _hide(self, request: ModelRequest) -> ModelRequest:
        tools = [t for t in request.tools if getattr(t, "name", None) != APPROVAL_TOOL]
        return request.override(tools=tools) if len(tools) != len(request.tools) else request

    def _hold(self, request: ModelRequest, response: ModelResponse,
              decisions: dict[str, GuardrailDecision]) -> ModelResponse:
        """Of several calls in one turn, keep only the first that needs approval (the card must end the run)."""
        context_of(request).extra.setdefault(_DECISIONS_KEY, {}).update(decisions)
        message = last_ai(response)
        held = next((i for i, d in decisions.items() if d.require_approval), None)
        if message is None or held is None:
            return response
        kwargs = dict(message.additional_kwargs)
        if isinstance(kwargs.get("tool_calls"), list):  # keep the provider's raw view in sync
            kwargs["tool_calls"] = [r for r in kwargs["tool_calls"] if isinstance(r, dict) and r.get("id") == held]
        kept = AIMessage(id=message.id, content=message.content, additional_kwargs=kwargs,
                         tool_calls=[c for c in message.tool_calls if c.get("id") == held],
                         response_metadata=message.response_metadata, usage_metadata=message.usage_metadata,
                         name=message.name)
        return ModelResponse(result=[kept if m is message else m for m in response.result],
                             structured_response=response.structured_response)

    def _batch(self, response: ModelResponse) -> list[dict[str, Any]]:
        message = last_ai(response)
        calls: list[dict[str, Any]] = [dict(c) for c in message.tool_calls] if message is not None else []
        return calls if self.interactive and len(calls) > 1 else []

    def _as_tool_request(self, request: ModelRequest, call: dict[str, Any]) -> Any:
        class _Call:  # what _request reads of a tool request
            tool_call = call
            runtime = request.runtime
        return _Call()

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
                        ) -> ModelCallResult:
        """Re-issue an answered held call, else call the model (without the hidden tool)."""
        resumed = self._resume(request)
        if resumed is not None:
            return resumed
        response = handler(self._hide(request))
        decisions: dict[str, GuardrailDecision] = {}
        for call in self._batch(response):
            try:
                decisions[call["id"]] = self.provider.evaluate(self._request(self._as_tool_request(request, call)))
            except Exception:  # judged again (and reported) when the call runs
                continue
        return self._hold(request, response, decisions) if decisions else response

    async def awrap_model_call(self, request: ModelRequest,
                               handler: Callable[[ModelRequest], Awaitable[ModelResponse]]) -> ModelCallResult:
        """Async twin of :meth:`wrap_model_call`."""
        resumed = self._resume(request)
        if resumed is not None:
            return resumed
        response = await handler(self._hide(request))
        decisions: dict[str, GuardrailDecision] = {}
        for call in self._batch(response):
            try:
                decisions[call["id"]] = await self.provider.aevaluate(
                    self._request(self._as_tool_request(request, call)))
            except Exception:
                continue
        return self._hold(request, response, decisions) if decisions else response
