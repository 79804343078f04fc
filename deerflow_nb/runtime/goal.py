"""Goal mode: a thread objective the agent keeps working toward until an evaluator says it is met.

The goal lives in the thread's state (the ``goal`` channel of
:class:`~deerflow_nb.agent.state.ThreadState`), so it is checkpointed with the conversation
and survives restarts. After a run's visible turn completes, :class:`GoalLoop` asks a
non-thinking evaluator model to judge the *visible* conversation against the objective
and return a typed :class:`GoalVerdict`:

- ``blocker="none"``: the goal is met and cleared;
- ``goal_not_met_yet``: the run goes on with a hidden continuation message, at most
  ``max_continuations`` times (0–8) per run;
- ``needs_user_input``, ``external_dependency``, ``out_of_scope``: the loop stands down.

Every evaluation that does not clear the goal is stored in ``goal.last_evaluation``; one
that stops the loop also records a ``stand_down_reason`` (:data:`STAND_DOWN_REASONS`).
Each evaluation is a ``custom`` event ``{"type": "goal_evaluation", ...}`` in the run's
stream and journal.
"""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from pydantic import BaseModel, ConfigDict, Field, field_validator

from deerflow_nb.agent.middlewares.input_sanitization import sanitize_text
from deerflow_nb.agent.reducers import CLEAR
from deerflow_nb.runtime.events import StreamEvent
from deerflow_nb.runtime.serialize import message_text

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

    from deerflow_nb.context import RunContext
    from deerflow_nb.runtime.engine import Runtime
    from deerflow_nb.runtime.streaming import StreamConverter

__all__ = ["BLOCKERS", "GOAL_EVENT", "MAX_CONTINUATIONS", "STAND_DOWN_REASONS", "Goal", "GoalEvaluation",
           "GoalLoop", "GoalResponse", "Goals", "GoalSetRequest", "GoalVerdict", "goal_of", "goal_update", "new_goal"]

logger = logging.getLogger(__name__)

#: The hard maximum of hidden continuations in one run.
MAX_CONTINUATIONS = 8
#: The evaluator's verdicts: ``none`` (met), ``goal_not_met_yet`` (continue), the rest stand down.
BLOCKERS = ("none", "goal_not_met_yet", "needs_user_input", "external_dependency", "out_of_scope")
#: Why a goal loop stopped before the goal was met (``last_evaluation.stand_down_reason``).
STAND_DOWN_REASONS = ("needs_user_input", "external_dependency", "out_of_scope", "max_continuations",
                      "no_progress", "awaiting_input", "thread_changed", "evaluation_failed")
#: ``custom`` event type of one evaluation.
GOAL_EVENT = "goal_evaluation"
#: Continuations in a row that added no new visible assistant output before the loop stops.
NO_PROGRESS_LIMIT = 2
_EVIDENCE_MESSAGES = 20
_EVIDENCE_CHARS = 12_000
_THINK = re.compile(r"<think>.*?</think>", re.S | re.I)


def _now() -> str:
    return datetime.now(UTC).isoformat()


class GoalSetRequest(BaseModel):
    """Body of ``PUT /threads/{id}/goal`` (``thread.set_goal`` validates the same model)."""

    model_config = ConfigDict(extra="forbid")

    objective: str = Field(min_length=1, max_length=4000, description="What the agent must achieve.")
    max_continuations: int = Field(default=MAX_CONTINUATIONS, ge=0, le=MAX_CONTINUATIONS,
                                   description="Hidden continuations allowed per run (0-8).")

    @field_validator("objective")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        value = value.strip()
        if not value:
            raise ValueError("must not be blank")
        return value


class GoalEvaluation(BaseModel):
    """The latest evaluation that did not clear the goal."""

    blocker: str
    reason: str = ""
    evidence: str = ""
    #: Set when this evaluation stopped the loop (one of :data:`STAND_DOWN_REASONS`).
    stand_down_reason: str | None = None
    run_id: str | None = None
    evaluated_at: str


class Goal(BaseModel):
    """A thread's active goal."""

    objective: str
    max_continuations: int
    #: Hidden continuations used by the latest run that evaluated the goal.
    continuations: int = 0
    created_at: str
    updated_at: str
    last_evaluation: GoalEvaluation | None = None


class GoalResponse(BaseModel):
    """``{"goal": {...}}`` or ``{"goal": null}``: the answer of every ``/threads/{id}/goal`` route."""

    goal: Goal | None


class GoalVerdict(BaseModel):
    """What the evaluator model answers (as JSON)."""

    blocker: Literal["none", "goal_not_met_yet", "needs_user_input", "external_dependency", "out_of_scope"]
    reason: str = ""
    evidence: str = ""


def new_goal(objective: str, max_continuations: int = MAX_CONTINUATIONS) -> dict[str, Any]:
    """A fresh goal record (``objective`` already validated, see :class:`GoalSetRequest`)."""
    now = _now()
    return Goal(objective=objective, max_continuations=max_continuations, created_at=now,
                updated_at=now).model_dump()


def goal_of(values: dict[str, Any]) -> dict[str, Any] | None:
    """The active goal in thread state values (``None``: no goal, or a cleared one)."""
    goal = values.get("goal")
    return goal if isinstance(goal, dict) and goal.get("objective") else None


def goal_update(goal: dict[str, Any] | None) -> dict[str, Any]:
    """The state update that stores ``goal`` (``None``: clears it)."""
    return {"goal": CLEAR if goal is None else goal}


# -- the evaluator -----------------------------------------------------------------------------
_EVALUATOR_PROMPT = """You are the goal evaluator of a data-science assistant. You do not do the work; \
you judge whether it is done.

Read the objective and the visible conversation (user messages and assistant replies). Judge only \
from what the conversation shows: claims count only when the assistant reports concrete results. \
Answer with one JSON object and nothing else:
{"blocker": "...", "reason": "...", "evidence": "..."}

blocker is one of:
- "none": the objective is fully achieved;
- "goal_not_met_yet": more work by the assistant alone can achieve it;
- "needs_user_input": it cannot go on without an answer or decision from the user;
- "external_dependency": something outside the assistant's reach blocks it (access, data, a service);
- "out_of_scope": it cannot be achieved with the assistant's tools at all.
reason: one sentence. evidence: a short summary of what the conversation shows."""


def _visible(messages: list[BaseMessage]) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for message in messages:
        kwargs = message.additional_kwargs or {}
        if isinstance(message, HumanMessage) and not kwargs.get("hide_from_ui") and not kwargs.get(
                "deerflow_internal"):
            role = "user"
        elif isinstance(message, AIMessage):
            role = "assistant"
        else:
            continue
        text = message_text(message).strip()
        if text:
            out.append((role, text[:2000]))
    return out[-_EVIDENCE_MESSAGES:]


def latest_evidence(messages: list[BaseMessage]) -> str:
    """The latest visible assistant text (what the no-progress breaker compares)."""
    for role, text in reversed(_visible(messages)):
        if role == "assistant":
            return text
    return ""


def evaluator_messages(objective: str, messages: list[BaseMessage]) -> list[BaseMessage]:
    """The evaluator's prompt for ``objective`` over the visible part of ``messages``."""
    transcript = "\n\n".join(f"[{role}]\n{text}" for role, text in _visible(messages))[-_EVIDENCE_CHARS:]
    return [SystemMessage(content=_EVALUATOR_PROMPT),
            HumanMessage(content=f"Objective:\n{objective}\n\nConversation:\n{transcript or '(empty)'}")]


async def evaluate(model: BaseChatModel, objective: str, messages: list[BaseMessage]) -> GoalVerdict:
    """Ask ``model`` for a :class:`GoalVerdict` (raises when it fails or answers no valid verdict)."""
    from langchain_core.output_parsers import PydanticOutputParser

    reply = await model.ainvoke(evaluator_messages(objective, messages))
    text = _THINK.sub("", message_text(reply)).strip()
    return PydanticOutputParser(pydantic_object=GoalVerdict).parse(text)


def continuation_message(goal: dict[str, Any], verdict: GoalVerdict, number: int) -> HumanMessage:
    """The hidden message that makes the agent go on toward ``goal``."""
    objective = sanitize_text(goal["objective"])
    reason = sanitize_text(verdict.reason) if verdict.reason else "the objective is not achieved yet"
    text = (f"[Goal continuation {number} of {goal['max_continuations']}] Keep working toward the goal: "
            f"{objective}\nNot done yet because: {reason}\nContinue from where you stopped; do not repeat "
            "finished work, and say clearly what you completed.")
    return HumanMessage(content=text, id=str(uuid.uuid4()),
                        additional_kwargs={"deerflow_internal": True, "hide_from_ui": True,
                                           "goal_continuation": number})


class GoalLoop:
    """The goal check after each pass of one run (see :func:`~deerflow_nb.runtime.worker.execute_run`).

    Called with the run's stream converter once the graph has finished a pass; answers the
    events to yield and the next pass's input (``None``: the run ends). A run without a
    goal costs one dictionary lookup. The evaluator model is created on first use, once
    per run.
    """

    def __init__(self, graph: Any, context: RunContext, evaluator: Callable[[], BaseChatModel]) -> None:
        self.graph = graph
        self.context = context
        self._evaluator = evaluator
        self._model: BaseChatModel | None = None
        self.continuations = 0
        self._strikes = 0
        self._evidence: str | None = None

    @property
    def _config(self) -> dict[str, Any]:
        return {"configurable": {"thread_id": self.context.thread_id}}

    async def _head(self) -> str | None:
        saved = await self.graph.checkpointer.aget_tuple(self._config)
        return saved.config["configurable"].get("checkpoint_id") if saved is not None else None

    async def _write(self, goal: dict[str, Any] | None) -> None:
        from deerflow_nb.runtime.worker import marker_graph

        await marker_graph(self.graph.checkpointer).aupdate_state(self._config, goal_update(goal), as_node="model")

    async def __call__(self, converter: StreamConverter) -> tuple[list[StreamEvent], HumanMessage | None]:
        """Evaluate the goal after a pass: ``(events, next input or None)``."""
        state = converter.final_state
        goal = goal_of(state)
        if goal is None:
            return [], None
        messages: list[BaseMessage] = list(state.get("messages", []))
        evidence = latest_evidence(messages)
        if self.continuations:  # the no-progress breaker: did the last continuation add visible output?
            self._strikes = self._strikes + 1 if evidence == self._evidence else 0
        self._evidence = evidence
        flush = getattr(self.graph.checkpointer, "aflush", None)
        if flush is not None:
            await flush()  # the end-of-turn checkpoint is durable before anything is judged
        last = messages[-1] if messages else None
        if not isinstance(last, AIMessage) or last.tool_calls or last.additional_kwargs.get("deerflow_interrupted"):
            verdict = GoalVerdict(blocker="needs_user_input", reason="the assistant is waiting for an answer")
            return await self._stand_down(goal, verdict, "awaiting_input"), None
        head = await self._head()
        try:
            if self._model is None:
                self._model = self._evaluator()
            verdict = await evaluate(self._model, goal["objective"], messages)
        except Exception as exc:  # a broken evaluator stops the loop; the visible turn stands
            logger.warning("goal evaluation of run %s failed: %s", self.context.run_id, exc)
            verdict = GoalVerdict(blocker="goal_not_met_yet", reason=f"evaluation failed: {type(exc).__name__}: "
                                  f"{str(exc)[:300]}")
            return await self._stand_down(goal, verdict, "evaluation_failed"), None
        if await self._head() != head:
            return [self._event(goal, verdict, "stand_down", "thread_changed")], None
        if verdict.blocker == "none":
            await self._write(None)
            return [self._event(goal, verdict, "met", None)], None
        if verdict.blocker != "goal_not_met_yet":
            return await self._stand_down(goal, verdict, verdict.blocker), None
        if self.continuations >= int(goal.get("max_continuations", MAX_CONTINUATIONS)):
            return await self._stand_down(goal, verdict, "max_continuations"), None
        if self._strikes >= NO_PROGRESS_LIMIT:
            return await self._stand_down(goal, verdict, "no_progress"), None
        self.continuations += 1
        await self._write(self._evaluated(goal, verdict, None))
        message = continuation_message(goal, verdict, self.continuations)
        message.additional_kwargs["run_id"] = self.context.run_id
        return [self._event(goal, verdict, "continue", None)], message

    def _evaluated(self, goal: dict[str, Any], verdict: GoalVerdict, stand_down: str | None) -> dict[str, Any]:
        now = _now()
        evaluation = GoalEvaluation(blocker=verdict.blocker, reason=verdict.reason, evidence=verdict.evidence,
                                    stand_down_reason=stand_down, run_id=self.context.run_id, evaluated_at=now)
        return {**goal, "continuations": self.continuations, "updated_at": now,
                "last_evaluation": evaluation.model_dump()}

    async def _stand_down(self, goal: dict[str, Any], verdict: GoalVerdict, reason: str) -> list[StreamEvent]:
        await self._write(self._evaluated(goal, verdict, reason))
        return [self._event(goal, verdict, "stand_down", reason)]

    def _event(self, goal: dict[str, Any], verdict: GoalVerdict, decision: str,
               stand_down: str | None) -> StreamEvent:
        return StreamEvent("custom", {
            "type": GOAL_EVENT, "decision": decision, "objective": goal["objective"], "blocker": verdict.blocker,
            "reason": verdict.reason, "evidence": verdict.evidence, "stand_down_reason": stand_down,
            "continuations": self.continuations, "max_continuations": goal.get("max_continuations"),
            "run_id": self.context.run_id})


class Goals:
    """Read, set and clear threads' goals (:attr:`Runtime.goals`; the routes and both backends use it).

    Every answer is a :class:`GoalResponse` dict. Setting or clearing is refused with
    :class:`~deerflow_nb.errors.ThreadBusyError` while the thread has a run (the run
    writes its own goal state), and a bad objective or cap with a
    :class:`~deerflow_nb.errors.UsageError` naming the field, before anything is stored.
    """

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime

    async def get(self, thread_id: str, user_id: str) -> dict[str, Any]:
        """``{"goal": ...}`` of the thread (``None``: no active goal)."""
        values = await self.runtime.get_state(thread_id, user_id)
        return GoalResponse.model_validate({"goal": goal_of(values)}).model_dump()

    async def set(self, thread_id: str, user_id: str, objective: Any, max_continuations: Any) -> dict[str, Any]:
        """Replace the thread's goal (its continuation count starts again)."""
        from deerflow_nb.runtime.gateway import validated

        request = validated(GoalSetRequest, {"objective": objective, "max_continuations": max_continuations})
        goal = new_goal(request.objective, request.max_continuations)
        await self._write(thread_id, user_id, goal)
        return GoalResponse.model_validate({"goal": goal}).model_dump()

    async def clear(self, thread_id: str, user_id: str) -> dict[str, Any]:
        """Clear the thread's goal (nothing is written when it has none)."""
        if goal_of(await self.runtime.get_state(thread_id, user_id)) is not None:
            await self._write(thread_id, user_id, None)
        return {"goal": None}

    async def _write(self, thread_id: str, user_id: str, goal: dict[str, Any] | None) -> None:
        from deerflow_nb.errors import ThreadBusyError
        from deerflow_nb.runtime.worker import marker_graph

        store = await self.runtime.store()
        await store.get_thread(thread_id, user_id)
        if self.runtime.runs.active_run(thread_id) is not None:
            raise ThreadBusyError(f"thread {thread_id!r} has a run in progress; change its goal when the run ends")
        store.threads.take_fresh(thread_id)  # it gets a checkpoint now: its first run must read it
        config: Any = {"configurable": {"thread_id": thread_id}}
        await marker_graph(store.checkpointer).aupdate_state(config, goal_update(goal), as_node="model")
        flush = getattr(store.checkpointer, "aflush", None)
        if flush is not None:
            await flush()
        await store.touch(thread_id)
