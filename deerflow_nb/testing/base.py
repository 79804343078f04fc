"""The machinery shared by the deterministic chat models: call log, ids, usage and streaming.

A subclass only says which :class:`AIMessage` answers the next call
(:meth:`DeterministicChatModel._next_response`); this base records the call,
fills in ids, token usage and response metadata, and streams the answer the way
a real provider does (text word by word, one ``tool_call_chunks`` chunk per tool
call, and a last chunk carrying usage).
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
import uuid
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, HumanMessage
from langchain_core.messages.tool import tool_call_chunk
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import Field, PrivateAttr

from deerflow_nb.utils.memo import PrefixMap

__all__ = ["DeterministicChatModel", "count_words", "echo_text", "split_words", "stream_chunks"]

__test__ = False

# Leading whitespace, then each word with the whitespace after it: joining the pieces gives the text back.
_WORD = re.compile(r"^\s+|\S+\s*")


def split_words(text: str) -> list[str]:
    """Split ``text`` into word tokens that concatenate back to exactly ``text``."""
    return _WORD.findall(text)


def count_words(text: str) -> int:
    """A rough token count: whitespace-separated words."""
    return len(text.split())


def _message_words(message: BaseMessage) -> int:
    words = count_words(message.text)
    for call in getattr(message, "tool_calls", None) or []:
        words += count_words(f"{call['name']} {json.dumps(call['args'])}")
    return words


def echo_text(messages: Sequence[BaseMessage]) -> str:
    """``Echo: <last human text>``, the answer of an exhausted script."""
    last = next((m.text for m in reversed(messages) if isinstance(m, HumanMessage)), "")
    return f"Echo: {last}"


def stream_chunks(message: AIMessage) -> list[AIMessageChunk]:
    """The chunks a provider would stream for ``message``; their sum equals it.

    All chunks share ``message.id``. Text comes word by word, each tool call as
    one ``tool_call_chunks`` entry with its full JSON arguments, and the last
    chunk carries usage, response metadata and ``chunk_position="last"``.
    """
    empty: Any = "" if isinstance(message.content, str) else []
    chunks: list[AIMessageChunk] = []
    if isinstance(message.content, str):
        chunks.extend(AIMessageChunk(content=word, id=message.id) for word in split_words(message.content))
    elif message.content:
        chunks.append(AIMessageChunk(content=message.content, id=message.id))
    for index, call in enumerate(message.tool_calls):
        piece = tool_call_chunk(name=call["name"], args=json.dumps(call["args"]), id=call["id"], index=index)
        chunks.append(AIMessageChunk(content=empty, id=message.id, tool_call_chunks=[piece]))
    # Metadata only on the last chunk: merging chunks concatenates string values.
    chunks.append(
        AIMessageChunk(
            content=empty,
            id=message.id,
            usage_metadata=message.usage_metadata,
            response_metadata=dict(message.response_metadata),
            additional_kwargs=dict(message.additional_kwargs),
            chunk_position="last",
        )
    )
    return chunks


class _CallState:
    """Cursor, call log and counters, shared by every copy and binding of one model."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.cursor = 0
        self.calls: list[list[BaseMessage]] = []
        self.tool_call_counter = 0
        # word counts by message object: a long thread's prompt is the same objects call after call, so a
        # call counts only its new messages (one map for the prompts, one for the tokenizer's lists)
        self.prompt_words: PrefixMap[BaseMessage, int] = PrefixMap(_message_words)
        self.counted_words: PrefixMap[BaseMessage, int] = PrefixMap(_message_words)

    def __deepcopy__(self, memo: dict[int, Any]) -> _CallState:
        # Copies of a model keep following the same script (and locks cannot be copied).
        return self


class DeterministicChatModel(BaseChatModel):
    """Base of the scripted and replay models: no network, same answers every run.

    ``calls`` records the input messages of every call. The state behind it (and
    the script cursor) is shared by copies and by ``bind_tools`` bindings, so an
    agent that binds tools still advances the one script.
    """

    model_name: str = Field(default="scripted", description="Reported as response_metadata.model_name.")
    latency: float = Field(default=0.0, ge=0, description="Seconds slept per call and per streamed chunk.")
    error_at: int | None = Field(default=None, ge=1, description="Raise on this (1-based) call.")
    error_message: str = "scripted model failure"

    _state: _CallState = PrivateAttr(default_factory=_CallState)

    @property
    def calls(self) -> list[list[BaseMessage]]:
        """The input messages of every call so far, oldest first."""
        return self._state.calls

    @property
    def _llm_type(self) -> str:
        return "deterministic-chat-model"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model_name": self.model_name}

    def bind_tools(
        self, tools: Sequence[Any], *, tool_choice: Any = None, **kwargs: Any
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Bind tool schemas; the answers still come from the script (tools are not called here)."""
        if tool_choice is not None:
            kwargs["tool_choice"] = tool_choice
        return self.bind(tools=[convert_to_openai_tool(tool) for tool in tools], **kwargs)

    # -- subclass hooks -------------------------------------------------------------------------

    def _next_response(self, messages: list[BaseMessage]) -> AIMessage:
        """The answer to the current call; called under the state lock."""
        raise NotImplementedError

    async def _aprepare(self) -> None:
        """Do blocking setup (file reads) off the event loop before an async call."""

    def get_num_tokens_from_messages(self, messages: list[BaseMessage], tools: Sequence[Any] | None = None) -> int:
        """The model's "tokenizer": words, as in its ``usage_metadata`` (counted once per message object)."""
        return sum(self._state.counted_words(messages))

    # -- shared machinery -----------------------------------------------------------------------

    def _respond(self, messages: list[BaseMessage]) -> AIMessage:
        with self._state.lock:
            self._state.calls.append(list(messages))
            number = len(self._state.calls)
            if self.error_at is not None and number == self.error_at:
                # The failed call does not consume a scripted answer.
                raise RuntimeError(f"{self.error_message} (call {number})")
            message = self._next_response(messages)
            return self._finalize(message, messages)

    def _finalize(self, message: AIMessage, messages: list[BaseMessage]) -> AIMessage:
        calls = []
        for call in message.tool_calls:
            if not call.get("id"):
                self._state.tool_call_counter += 1
                call = {**call, "id": f"call_{self._state.tool_call_counter}"}
            calls.append(call)
        output_tokens = _message_words(message.model_copy(update={"tool_calls": calls}))
        input_tokens = sum(self._state.prompt_words(messages))
        usage = message.usage_metadata or {
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "total_tokens": input_tokens + output_tokens,
        }
        metadata = {
            "finish_reason": "tool_calls" if calls else "stop",
            "model_name": self.model_name,
            **message.response_metadata,
        }
        return message.model_copy(
            update={
                "id": message.id or f"run-scripted-{uuid.uuid4().hex}",
                "tool_calls": calls,
                "usage_metadata": usage,
                "response_metadata": metadata,
            },
            deep=True,
        )

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        message = self._respond(messages)
        if self.latency:
            time.sleep(self.latency)
        return ChatResult(generations=[ChatGeneration(message=message)])

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        await self._aprepare()
        message = self._respond(messages)
        if self.latency:
            await asyncio.sleep(self.latency)
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        # The base class reports each chunk to the callbacks (on_llm_new_token); we only yield.
        for chunk in stream_chunks(self._respond(messages)):
            if self.latency:
                time.sleep(self.latency)
            yield ChatGenerationChunk(message=chunk)

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        await self._aprepare()
        for chunk in stream_chunks(self._respond(messages)):
            if self.latency:
                await asyncio.sleep(self.latency)
            yield ChatGenerationChunk(message=chunk)
