"""``Thread``: one conversation, its state, its runs and its human-input requests."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from langchain_core.messages import BaseMessage, HumanMessage

from deerflow_nb.agent.human_input import summarize_form_answer, validate_form_answer
from deerflow_nb.agent.state import with_state_defaults
from deerflow_nb.client.mixins.thread_files import ThreadFilesMixin
from deerflow_nb.client.mixins.thread_ui import ThreadUiMixin
from deerflow_nb.client.run import Run
from deerflow_nb.errors import HumanInputRequired, UsageError
from deerflow_nb.runtime import StreamEvent, pending_input_of

if TYPE_CHECKING:
    from deerflow_nb.client.facade import DeerFlow

__all__ = ["Responses", "Thread", "build_response_message"]

#: Headless answers: a fixed answer, a mapping, or a callable ``request -> answer``.
Responses = str | Mapping[str, Any] | Callable[[dict[str, Any]], Any]
MAX_HEADLESS_ROUNDS = 10


def build_response_message(request: Mapping[str, Any], answer: Any) -> HumanMessage:
    """The hidden human message answering ``request`` (v1 response protocol).

    A form answer (a mapping of field values) is validated and sent as a readable
    text summary; a choice that matches an option is sent as ``option``.
    """
    if answer is None or (isinstance(answer, str) and not answer.strip()):
        raise UsageError("the answer must not be empty")
    response: dict[str, Any] = {"source": "ask_clarification", "tool_call_id": request.get("tool_call_id")}
    if request.get("mode") == "form":
        if not isinstance(answer, Mapping):
            raise UsageError("this request is a form: answer with a dict of field values, "
                             f"fields: {[f['name'] for f in request.get('fields', [])]}")
        try:
            values = validate_form_answer(request["fields"], answer)
        except ValueError as exc:
            raise UsageError(f"invalid form answer: {exc}") from None
        text = summarize_form_answer(request["fields"], values)
        response.update(response_kind="text", text=text)
    elif isinstance(answer, str) and answer.strip() in request.get("options", []):
        text = answer.strip()
        response.update(response_kind="option", option=text)
    else:
        text = str(answer).strip()
        response.update(response_kind="text", text=text)
    return HumanMessage(content=text, additional_kwargs={"hide_from_ui": True, "human_input_response": response})


def headless_answer(request: dict[str, Any], responses: Responses) -> Any:
    """Pick the answer for ``request`` from ``responses`` (``None`` when it has none)."""
    if callable(responses):
        return responses(request)
    if isinstance(responses, str):
        return responses
    if request.get("mode") == "form":
        names = {f["name"] for f in request.get("fields", [])}
        return {k: v for k, v in responses.items() if k in names}
    for key in (request.get("question"), request.get("clarification_type"), "*"):
        if isinstance(key, str) and key in responses:
            return responses[key]
    return None


class Thread(ThreadFilesMixin, ThreadUiMixin):
    """A conversation thread. Sync methods work inside a running kernel; ``a*`` twins are awaitable."""

    def __init__(self, client: DeerFlow, thread_id: str) -> None:
        self._client = client
        self.id = thread_id

    def __repr__(self) -> str:
        return f"<Thread {self.id}>"

    @property
    def _loop(self) -> Any:
        return self._client._loop

    @property
    def _engine(self) -> Any:
        return self._client._engine

    # -- runs ----------------------------------------------------------------------
    async def _astart(self, message: str | HumanMessage, options: Mapping[str, Any],
                      secrets: Mapping[str, str] | None, *, stream_tokens: bool = True) -> Run:
        opts = self._client._defaults.merged(**options)
        record = await self._engine.start_run(self.id, message, opts, dict(secrets or {}),
                                              stream_tokens=stream_tokens)
        return Run(record, self._engine.runs, self._loop)

    def start(self, message: str, *, secrets: Mapping[str, str] | None = None, **options: Any) -> Run:
        """Start a run in the background and return its :class:`Run` at once."""
        return self._loop.run(self._astart(message, options, secrets), method="Thread.start")

    async def astart(self, message: str, *, secrets: Mapping[str, str] | None = None, **options: Any) -> Run:
        """Async twin of :meth:`start`."""
        return await self._loop.arun(self._astart(message, options, secrets))

    def stream(self, message: str, *, secrets: Mapping[str, str] | None = None, **options: Any
               ) -> Iterator[StreamEvent]:
        """Run and yield :class:`StreamEvent`s as they happen."""
        run = self.start(message, secrets=secrets, **options)
        return run.events()

    async def astream(self, message: str, *, secrets: Mapping[str, str] | None = None, **options: Any
                      ) -> AsyncIterator[StreamEvent]:
        """Async twin of :meth:`stream`."""
        run = await self.astart(message, secrets=secrets, **options)
        async for event in run.aevents():
            yield event

    async def _achat(self, message: str | HumanMessage, responses: Responses | None,
                     options: Mapping[str, Any], secrets: Mapping[str, str] | None) -> str:
        run = await self._astart(message, options, secrets, stream_tokens=False)
        text = await run.await_result()
        for _ in range(MAX_HEADLESS_ROUNDS):
            request = run.pending_input
            if request is None:
                return text
            answer = headless_answer(request, responses) if responses is not None else None
            if answer is None:
                raise HumanInputRequired(request, thread_id=self.id)
            run = await self._astart(build_response_message(request, answer), options, secrets,
                                     stream_tokens=False)
            text = await run.await_result()
        raise UsageError(f"gave up after {MAX_HEADLESS_ROUNDS} rounds of human-input requests")

    def chat(self, message: str, *, responses: Responses | None = None,
             secrets: Mapping[str, str] | None = None, **options: Any) -> str:
        """Send ``message``, wait, return the final answer text.

        If the agent asks for human input, ``responses`` answers it headlessly;
        without it :class:`~deerflow_nb.errors.HumanInputRequired` is raised.
        Options: ``model_name``, ``thinking_enabled``, ``plan_mode``, ``subagent_enabled``,
        ``recursion_limit``.
        """
        return self._loop.run(self._achat(message, responses, options, secrets), method="Thread.chat")

    async def achat(self, message: str, *, responses: Responses | None = None,
                    secrets: Mapping[str, str] | None = None, **options: Any) -> str:
        """Async twin of :meth:`chat` (preferred inside notebooks)."""
        return await self._loop.arun(self._achat(message, responses, options, secrets))

    # -- human input ---------------------------------------------------------------
    async def _apending(self) -> dict[str, Any] | None:
        state = await self._engine.get_state(self.id)
        return pending_input_of(list(state.get("messages", [])))

    @property
    def pending_input(self) -> dict[str, Any] | None:
        """The open human-input request, or ``None``."""
        return self._loop.run(self._apending(), method="Thread.pending_input")

    async def apending_input(self) -> dict[str, Any] | None:
        """Async twin of :attr:`pending_input`."""
        return await self._loop.arun(self._apending())

    async def _arespond(self, answer: Any, responses: Responses | None, options: Mapping[str, Any]) -> str:
        request = await self._apending()
        if request is None:
            raise UsageError(f"thread {self.id!r} has no pending human-input request")
        return await self._achat(build_response_message(request, answer), responses, options, None)

    def respond(self, answer: Any, *, responses: Responses | None = None, **options: Any) -> str:
        """Answer the pending request (text, an option, or a dict for forms) and continue; returns the answer."""
        return self._loop.run(self._arespond(answer, responses, options), method="Thread.respond")

    async def arespond(self, answer: Any, *, responses: Responses | None = None, **options: Any) -> str:
        """Async twin of :meth:`respond`."""
        return await self._loop.arun(self._arespond(answer, responses, options))

    # -- state ---------------------------------------------------------------------
    @property
    def state(self) -> dict[str, Any]:
        """Current state values: messages, title, artifacts, todos, ..."""
        return with_state_defaults(self._loop.run(self._engine.get_state(self.id), method="Thread.state"))

    async def aget_state(self) -> dict[str, Any]:
        """Async twin of :attr:`state`."""
        return with_state_defaults(await self._loop.arun(self._engine.get_state(self.id)))

    @property
    def messages(self) -> list[BaseMessage]:
        """The thread's messages."""
        return list(self.state.get("messages", []))

    @property
    def title(self) -> str | None:
        """The generated title, once the first exchange is complete."""
        return self.state.get("title")

    def history(self, limit: int | None = None) -> list[dict[str, Any]]:
        """Checkpoints, newest first (``limit=0`` gives an empty list)."""
        return self._loop.run(self._engine.get_history(self.id, limit), method="Thread.history")

    async def ahistory(self, limit: int | None = None) -> list[dict[str, Any]]:
        """Async twin of :meth:`history`."""
        return await self._loop.arun(self._engine.get_history(self.id, limit))
