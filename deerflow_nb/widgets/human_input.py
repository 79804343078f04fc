"""``HumanInputCard``: one ``ask_clarification`` request as a form card.

The card validates in the browser and again here (the same rules as
:func:`deerflow_nb.agent.human_input.validate_form_answer`), then hands the
answer on. Inside a :class:`~deerflow_nb.widgets.ChatWidget` the same card is
rendered inline and the run continues in that chat.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any

from langchain_core.messages import HumanMessage
from traitlets import Bool, Dict, Unicode

from deerflow_nb.agent.human_input import format_request_text
from deerflow_nb.errors import UsageError
from deerflow_nb.widgets._base import WIDGET_CSS, DeerFlowWidget, load_esm, spawn
from deerflow_nb.widgets._transcript import skip_message

__all__ = ["HumanInputCard", "response_message"]


def response_message(request: Mapping[str, Any], answer: Any) -> HumanMessage:
    """The hidden message answering ``request``: exactly what ``thread.respond(answer)`` sends.

    Raises :class:`~deerflow_nb.errors.UsageError` naming the field for an invalid answer.
    """
    from deerflow_nb.agent.human_input import build_response_message

    return build_response_message(request, answer)


def answered_in(messages: list[Any], tool_call_id: str) -> str | None:
    """The answer text if ``messages`` hold a response to ``tool_call_id``, else ``None``."""
    from deerflow_nb.widgets._transcript import message_dict

    for raw in messages:
        data = message_dict(raw)
        response = (data.get("additional_kwargs") or {}).get("human_input_response")
        if isinstance(response, dict) and response.get("tool_call_id") == tool_call_id:
            return str(response.get("text") or response.get("option") or data.get("content") or "")
    return None


class HumanInputCard(DeerFlowWidget):
    """A form card for one human-input request.

    Args:
        request: the ``human_input`` payload (``thread.pending_input``, ``HumanInputRequired.request``).
        on_submit: called with the validated answer (a string, or a dict of form values).
        answered: show the card as already answered, with ``answer_text``.

    Use :meth:`for_thread` to answer a thread's open request with ``thread.respond``.
    """

    _esm = load_esm("_common.js", "human_input.js")
    _css = WIDGET_CSS

    request = Dict().tag(sync=True)
    answered = Bool(False).tag(sync=True)
    answer_text = Unicode("").tag(sync=True)
    error = Unicode("").tag(sync=True)
    busy = Bool(False).tag(sync=True)
    closed = Unicode("", help="why the card no longer takes an answer (answered elsewhere)").tag(sync=True)

    def __init__(self, request: Mapping[str, Any], *, on_submit: Callable[[Any], Any] | None = None,
                 answered: bool = False, answer_text: str = "") -> None:
        if not isinstance(request, Mapping) or not request.get("tool_call_id"):
            raise UsageError("request must be a human_input payload with a tool_call_id "
                             "(thread.pending_input or HumanInputRequired.request)")
        super().__init__(request=dict(request), answered=answered, answer_text=answer_text)
        self.on_submit = on_submit
        self.on_skip: Callable[[], Any] | None = None
        self.thread: Any = None  # set by for_thread: the card then closes when answered from code
        self.result: Any = None
        self.on_msg(self._on_front_end_msg)

    @classmethod
    def for_thread(cls, thread: Any, request: Mapping[str, Any] | None = None) -> HumanInputCard:
        """A card for the thread's open request (or ``request``); submitting runs ``thread.arespond``.

        A request already answered in the thread's messages is shown as answered.
        """
        request = request if request is not None else thread.pending_input
        if request is None:
            raise UsageError(f"thread {thread.id!r} has no pending human-input request")
        previous = answered_in(list(thread.state.get("messages") or []), str(request["tool_call_id"]))
        card = cls(request, answered=previous is not None, answer_text=previous or "")

        async def continue_run(answer: Any) -> None:
            card.busy = True
            try:
                card.result = await thread.arespond(answer)
            except Exception as exc:  # show run failures on the card
                card.error = str(exc)
            finally:
                card.busy = False

        async def skip_run() -> None:
            card.busy = True
            try:
                run = await thread.astart(skip_message(card.request))
                card.result = await run.await_result()
            except Exception as exc:  # show run failures on the card
                card.error = str(exc)
            finally:
                card.busy = False

        card.on_submit = lambda answer: spawn(continue_run(answer))
        card.on_skip = lambda: spawn(skip_run())
        card.thread = thread
        return card

    def _summary(self) -> str:
        state = "answered" if self.answered else "open"
        return f"<HumanInputCard {self.request.get('mode', '?')} {state}: {self.request.get('question', '')!r}>"

    def _text(self) -> str:
        text = format_request_text(self.request)
        return text + (f"\n(answered: {self.answer_text})" if self.answered else "\n(waiting for an answer)")

    def submit(self, answer: Any) -> Any:
        """Validate ``answer`` and hand it to ``on_submit``; invalid answers raise and show on the card."""
        if self.answered:
            raise UsageError("this question has already been answered")
        try:
            message = response_message(self.request, answer)
        except UsageError as exc:
            self.error = str(exc)
            raise
        self.error = ""
        self.answered = True
        self.answer_text = str(message.content)
        return self.on_submit(answer) if self.on_submit is not None else None

    def skip(self) -> Any:
        """Skip the question (the agent proceeds on stated assumptions); needs a card from :meth:`for_thread`."""
        if self.answered or self.closed:
            raise UsageError("this question has already been answered")
        if self.on_skip is None:
            raise UsageError("this card cannot skip: create it with HumanInputCard.for_thread(thread)")
        self.answered, self.answer_text, self.error = True, "(skipped)", ""
        return self.on_skip()

    async def _check_answered_elsewhere(self) -> None:
        thread = self.thread
        if thread is None or self.answered or self.closed or self.busy:
            return
        try:
            pending = await asyncio.to_thread(lambda: thread.pending_input)
        except Exception:  # a failed check changes nothing
            return
        if pending is None or pending.get("tool_call_id") != self.request.get("tool_call_id"):
            messages = await asyncio.to_thread(lambda: list(thread.state.get("messages") or []))
            previous = answered_in(messages, str(self.request.get("tool_call_id")))
            if previous is not None:
                self.answered, self.answer_text = True, previous
            else:
                self.closed = "This question is no longer open (answered or cancelled elsewhere)."

    def _on_front_end_msg(self, _widget: Any, content: Any, _buffers: Any) -> None:
        if not isinstance(content, dict):
            return
        kind = content.get("kind")
        if kind == "ping":  # the front end checks that a kernel is behind it; also a chance to re-check
            self.send({"kind": "pong"})
            spawn(self._check_answered_elsewhere())
        elif kind == "respond":
            try:
                self.submit(content.get("answer"))
            except UsageError:
                pass  # already shown on the card
        elif kind == "skip":
            try:
                self.skip()
            except UsageError as exc:
                self.error = str(exc)
