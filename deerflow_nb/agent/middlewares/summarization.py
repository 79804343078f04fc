"""Summarize old history when the context grows long; the summary lives in ``summary_text``."""

from __future__ import annotations

import logging
from typing import Any

from langchain.agents.middleware import ModelRequest, ModelResponse
from langchain.agents.middleware.types import ModelCallResult
from langchain_core.language_models import BaseChatModel, BaseLanguageModel
from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage, ToolMessage

from deerflow_nb.agent.middlewares._base import ModelCallMiddleware, with_update
from deerflow_nb.config.schema import SummarizationConfig
from deerflow_nb.utils.memo import PrefixMap

__all__ = ["SummarizationMiddleware", "TokenCounter", "estimate_tokens", "split_for_summary", "summarize",
           "summary_prompt"]

logger = logging.getLogger(__name__)


def estimate_tokens(messages: list[Any]) -> int:
    """Rough token count (4 characters a token); nothing is downloaded."""
    return sum(len(str(m.content)) for m in messages) // 4 + 4 * len(messages)


class TokenCounter:
    """Tokens of a conversation: the model's own tokenizer where it has one, else :func:`estimate_tokens`.

    A model "has one" when its class overrides LangChain's ``get_num_tokens_from_messages``
    (OpenAI-compatible models with tiktoken, Anthropic, the scripted test models); the generic
    default would fetch a GPT-2 tokenizer, so it is never used. Each message is counted once
    (by object: a thread's history comes back as the same objects), so the trigger check of a
    long thread costs what its new messages cost. A tokenizer that fails falls back to the
    estimate for good.
    """

    def __init__(self, model: BaseChatModel | None) -> None:
        own = getattr(type(model), "get_num_tokens_from_messages", None) if model is not None else None
        self._tokenizer = model if own is not None and own is not BaseLanguageModel.get_num_tokens_from_messages \
            and own is not BaseChatModel.get_num_tokens_from_messages else None
        self._counts: PrefixMap[Any, int] = PrefixMap(self._count)

    @property
    def uses_tokenizer(self) -> bool:
        """Whether counts come from the model's tokenizer (not the estimate)."""
        return self._tokenizer is not None

    def _count(self, message: Any) -> int:
        if self._tokenizer is not None:
            try:
                return int(self._tokenizer.get_num_tokens_from_messages([message]))
            except Exception as exc:  # no tokenizer at hand after all (e.g. offline): estimate from now on
                logger.info("token counting with %s failed (%s); estimating instead", type(self._tokenizer).__name__,
                            exc)
                self._tokenizer = None
        return estimate_tokens([message])

    def __call__(self, messages: list[Any]) -> int:
        """The conversation's token count."""
        return sum(self._counts(messages))


def split_for_summary(messages: list[Any], keep: int) -> tuple[list[Any], list[Any]]:
    """Split into (old, kept) without separating tool results from their AI call."""
    if len(messages) <= keep:
        return [], list(messages)
    cut = len(messages) - keep
    while cut > 0 and isinstance(messages[cut], ToolMessage):
        cut -= 1
    return list(messages[:cut]), list(messages[cut:])


def _summary_block(text: str) -> HumanMessage:
    return HumanMessage(content=f"<summary>\nSummary of the earlier conversation:\n{text}\n</summary>",
                        additional_kwargs={"deerflow_internal": True, "hide_from_ui": True})


def summary_prompt(previous: str | None, old: list[Any]) -> str:
    """The request that asks a model to summarize ``old`` (after an earlier summary ``previous``)."""
    lines = [f"{type(m).__name__.replace('Message', '')}: {m.content}" for m in old
             if isinstance(m, (HumanMessage, AIMessage, ToolMessage))]
    head = f"Previous summary:\n{previous}\n\n" if previous else ""
    return (f"{head}Summarize this conversation so far in a few short paragraphs, keeping facts, decisions, "
            f"file paths and open tasks:\n\n" + "\n".join(lines)[-40_000:])


async def summarize(model: BaseChatModel, previous: str | None, old: list[Any]) -> str:
    """The new ``summary_text``: ``model``'s summary of ``old`` after ``previous`` (what compaction also uses)."""
    reply = await model.ainvoke(summary_prompt(previous, old))
    return str(reply.content).strip()


class SummarizationMiddleware(ModelCallMiddleware):
    """Replaces old messages by a summary when ``trigger_tokens``/``trigger_messages`` is exceeded.

    Tokens are counted with the model's tokenizer where it has one (:class:`TokenCounter`).
    """

    def __init__(self, config: SummarizationConfig, model: BaseChatModel | None = None) -> None:
        super().__init__()
        self.config = config
        self.model = model
        self._counters: dict[int, tuple[Any, TokenCounter]] = {}

    def _counter(self, model: BaseChatModel) -> TokenCounter:
        hit = self._counters.get(id(model))
        if hit is None or hit[0] is not model:
            if len(self._counters) > 16:
                self._counters.clear()
            hit = self._counters[id(model)] = (model, TokenCounter(model))
        return hit[1]

    def _triggered(self, messages: list[Any], model: BaseChatModel | None = None) -> bool:
        if self.config.trigger_messages and len(messages) > self.config.trigger_messages:
            return True
        counter = self._counter(model) if model is not None else TokenCounter(None)
        return counter(messages) > self.config.trigger_tokens

    def _prompt(self, previous: str | None, old: list[Any]) -> str:
        return summary_prompt(previous, old)

    def _apply(self, request: ModelRequest, summary: str, old: list[Any], kept: list[Any]) -> tuple[ModelRequest, dict]:
        update = {"summary_text": summary, "messages": [RemoveMessage(id=m.id) for m in old if m.id]}
        return request.override(messages=[_summary_block(summary), *kept]), update

    def _model(self, request: ModelRequest) -> BaseChatModel:
        if self.model is not None:
            return self.model
        if self.config.model_name:
            from deerflow_nb.models import create_chat_model

            return create_chat_model(self.config.model_name)
        return request.model

    def wrap_model_call(self, request: ModelRequest, handler: Any) -> ModelCallResult:
        """Summarize if needed, then call the model on the compacted request."""
        summary: str | None = request.state.get("summary_text")  # type: ignore[assignment]
        messages = list(request.messages)
        update = None
        if self._triggered(messages, request.model):
            old, kept = split_for_summary(messages, self.config.keep_messages)
            if old:
                text = str(self._model(request).invoke(self._prompt(summary, old)).content)
                request, update = self._apply(request, text, old, kept)
        elif summary:
            request = request.override(messages=[_summary_block(summary), *messages])
        response: ModelResponse = handler(request)
        return with_update(response, update)

    async def awrap_model_call(self, request: ModelRequest, handler: Any) -> ModelCallResult:
        """Async twin of :meth:`wrap_model_call`."""
        summary: str | None = request.state.get("summary_text")  # type: ignore[assignment]
        messages = list(request.messages)
        update = None
        if self._triggered(messages, request.model):
            old, kept = split_for_summary(messages, self.config.keep_messages)
            if old:
                text = await summarize(self._model(request), summary, old)
                request, update = self._apply(request, text, old, kept)
        elif summary:
            request = request.override(messages=[_summary_block(summary), *messages])
        response: ModelResponse = await handler(request)
        return with_update(response, update)
