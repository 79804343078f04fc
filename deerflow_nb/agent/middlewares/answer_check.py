"""A final answer is checked before the run may end with it; one repair turn, then an honest error.

Every profile: an empty reply, a tool call written as text, the prompt's instructions echoed, a
plan in prose, placeholders, and (with ``grounding``) numbers that no tool result of the run
printed and the user did not write (:mod:`deerflow_nb.agent.answer_checks`). A failing answer
gets one more model turn with the reason as a hidden message; when that reply fails too, the run
raises :class:`~deerflow_nb.errors.AnswerError` with the problem's ``stop_reason`` and nothing is
stored as the answer. A reply that goes back to work (tool calls) is not an answer and passes, as
does a run paused for human input (``ask_clarification`` is a tool call).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain.agents.middleware.types import ModelCallResult
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from deerflow_nb.agent.answer_checks import AnswerProblem, check_answer
from deerflow_nb.agent.middlewares._base import context_of, last_ai
from deerflow_nb.agent.middlewares.input_sanitization import RESERVED_TAGS
from deerflow_nb.context import PRODUCED_OUTPUTS_KEY
from deerflow_nb.errors import AnswerError
from deerflow_nb.tools.present_files import presented_paths

__all__ = ["PROGRAM_ANSWER", "AnswerCheckMiddleware", "answer_sources"]

#: ``additional_kwargs["deerflow_answer"]`` of an answer made of a program's own output (grounded by construction).
PROGRAM_ANSWER = "program_output"


def answer_sources(messages: Sequence[BaseMessage]) -> list[str]:
    """What an answer's numbers may come from: the run's tool results and the user's messages.

    The run's tool results are those after the user's latest message; the user's messages are
    every visible human message of the thread (a follow-up may quote an earlier one).
    """
    sources: list[str] = []
    last_human = max((i for i, m in enumerate(messages) if isinstance(m, HumanMessage)
                      and not m.additional_kwargs.get("deerflow_internal")), default=-1)
    for index, message in enumerate(messages):
        if isinstance(message, HumanMessage) and not message.additional_kwargs.get("deerflow_internal"):
            sources.append(message.text)
        elif isinstance(message, ToolMessage) and index > last_human:
            sources.append(message.text)
    return sources


def _is_context(text: str) -> bool:
    """Whether an internal message is context the runtime added (``<summary>``, ``<memory>``...), not a hint."""
    head = text.lstrip()[:40].lower()
    return any(head.startswith(f"<{tag}") for tag in RESERVED_TAGS)


def _hint(text: str) -> HumanMessage:
    return HumanMessage(content=text, additional_kwargs={"deerflow_internal": True, "hide_from_ui": True})


class AnswerCheckMiddleware(AgentMiddleware):
    """Checks final answers (see the module docstring); ``grounding`` switches the numeric check on."""

    def __init__(self, *, grounding: bool = False) -> None:
        super().__init__()
        self.grounding = grounding

    @staticmethod
    def _is_answer(message: AIMessage | None) -> bool:
        return message is not None and not message.tool_calls and \
            message.additional_kwargs.get("deerflow_answer") != PROGRAM_ANSWER

    def _produced(self, request: ModelRequest, message: AIMessage | None) -> list[str]:
        """For a final answer, what the run has written under outputs so far (blocking: it reads the files)."""
        produce = context_of(request).extra.get(PRODUCED_OUTPUTS_KEY)
        return list(produce()) if callable(produce) and self._is_answer(message) else []

    def _problem(self, request: ModelRequest, message: AIMessage | None,
                 produced: Sequence[str] = ()) -> AnswerProblem | None:
        if message is None or not self._is_answer(message):  # (None: for the type checker)
            return None
        names = [str(getattr(t, "name", "")) for t in request.tools]
        system = request.system_message.text if isinstance(request.system_message, SystemMessage) else ""
        internal = [m.text for m in request.messages if isinstance(m, HumanMessage)
                    and m.additional_kwargs.get("deerflow_internal")]
        # the runtime's own hidden hints are instructions too (a model may answer with one); the context it
        # adds (a summary, memory) is material the answer may quote
        hints = [text for text in internal if not _is_context(text)]
        sources = answer_sources(request.messages) if self.grounding else None
        # what the model was shown (not the runtime's hints, which name the placeholders they reject)
        quoted = [m.text for m in request.messages if isinstance(m, ToolMessage) or (
            isinstance(m, HumanMessage) and not m.additional_kwargs.get("deerflow_internal"))]
        quoted += [text for text in internal if _is_context(text)]
        problem = check_answer(message.text, tool_names=names, instructions=[system, *hints] if system else hints,
                               sources=sources, quoted=quoted)
        return problem or _undelivered(request.messages, produced)

    def _retry_request(self, request: ModelRequest, problem: AnswerProblem) -> ModelRequest:
        return request.override(messages=[*request.messages, _hint(problem.repair)])

    def _fail(self, request: ModelRequest, problem: AnswerProblem) -> AnswerError:
        cause = f"no answer could be given: {problem.message}"
        return AnswerError(cause, run_id=context_of(request).run_id, stop_reason=problem.stop_reason, cause=cause)

    def wrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> ModelCallResult:
        """Call the model; repair a failing answer once, else raise :class:`AnswerError`."""
        response = handler(request)
        problem = self._problem(request, last_ai(response), self._produced(request, last_ai(response)))
        if problem is None:
            return response
        retry = handler(self._retry_request(request, problem))
        second = self._problem(request, last_ai(retry), self._produced(request, last_ai(retry)))
        if second is not None:
            raise self._fail(request, second)
        return retry

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> ModelCallResult:
        """Async twin of :meth:`wrap_model_call`."""
        response = await handler(request)
        problem = self._problem(request, last_ai(response), await self._aproduced(request, last_ai(response)))
        if problem is None:
            return response
        retry = await handler(self._retry_request(request, problem))
        second = self._problem(request, last_ai(retry), await self._aproduced(request, last_ai(retry)))
        if second is not None:
            raise self._fail(request, second)
        return retry

    async def _aproduced(self, request: ModelRequest, message: AIMessage | None) -> list[str]:
        """:meth:`_produced` off the event loop (only a final answer reads the files)."""
        return await asyncio.to_thread(self._produced, request, message) if self._is_answer(message) else []


def _undelivered(messages: Sequence[BaseMessage], produced: Sequence[str]) -> AnswerProblem | None:
    """``undelivered_outputs`` when the run wrote output files and this turn's tools presented none of them."""
    if not produced:
        return None
    last_human = max((i for i, m in enumerate(messages) if isinstance(m, HumanMessage)
                      and not m.additional_kwargs.get("deerflow_internal")), default=-1)
    shown = set(presented_paths(messages[last_human + 1:]))
    if shown & set(produced):
        return None
    paths = ", ".join(produced)
    return AnswerProblem("undelivered_outputs", f"the run wrote {paths} and did not present it",
                         f"You wrote {paths} under /mnt/user-data/outputs but did not show it to the user. Call "
                         f"present_files with the finished file(s) the user should see, then answer.")
