"""Record a real chat model's answers to JSONL, for replay in tests and notebooks.

One line per answer: ``{"content", "tool_calls", "usage_metadata",
"response_metadata", "additional_kwargs"}``. Message ids are not stored (a replay
mints fresh ones so replayed turns never overwrite each other in a thread);
tool-call ids are.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, message_chunk_to_message
from langchain_core.messages.tool import tool_call
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable, RunnableBinding
from pydantic import Field, PrivateAttr, field_validator

from deerflow_nb.utils.files import atomic_write_text

__all__ = ["RecordingChatModel", "load_recording", "message_to_record", "record_to_message"]

__test__ = False


def message_to_record(message: AIMessage) -> dict[str, Any]:
    """The JSON-ready record of one answer."""
    return {
        "content": message.content,
        "tool_calls": [{"name": c["name"], "args": c["args"], "id": c.get("id")} for c in message.tool_calls],
        "usage_metadata": dict(message.usage_metadata) if message.usage_metadata else None,
        "response_metadata": dict(message.response_metadata),
        "additional_kwargs": dict(message.additional_kwargs),
    }


def record_to_message(record: Any, *, where: str = "record") -> AIMessage:
    """Rebuild an :class:`AIMessage` from :func:`message_to_record` output; ``where`` names it in errors."""
    if not isinstance(record, dict):
        raise ValueError(f"{where}: expected a JSON object, got {type(record).__name__}")
    try:
        calls = [
            tool_call(name=c["name"], args=c.get("args") or {}, id=c.get("id"))
            for c in record.get("tool_calls") or []
        ]
        return AIMessage(
            content=record.get("content", ""),
            tool_calls=calls,
            usage_metadata=record.get("usage_metadata"),
            response_metadata=record.get("response_metadata") or {},
            additional_kwargs=record.get("additional_kwargs") or {},
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"{where}: not a recorded message ({exc})") from exc


def load_recording(path: str | os.PathLike[str]) -> list[AIMessage]:
    """Read every answer of a JSONL recording; blank lines are skipped."""
    source = Path(path)
    messages = []
    for number, line in enumerate(source.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{source}:{number}"
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{where}: invalid JSON ({exc.msg})") from exc
        messages.append(record_to_message(record, where=where))
    return messages


def _absolute(path: str) -> str:
    """Resolve a relative path against the current directory once, at construction."""
    return str(Path(path).expanduser().resolve())


class RecordingChatModel(BaseChatModel):
    """Delegates to ``inner`` and appends each of its answers to the JSONL file ``path``.

    Tool binding, streaming and async calls are passed through. The first answer
    starts a new recording unless ``append=True``; the file is rewritten
    atomically after every answer, so it is never half-written.
    """

    inner: BaseChatModel
    path: str = Field(description="The JSONL file to write; relative paths are resolved against the cwd.")
    append: bool = False

    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)
    _lines: list[str] | None = PrivateAttr(default=None)

    @field_validator("path")
    @classmethod
    def _resolve_path(cls, value: str) -> str:
        return _absolute(value)

    @property
    def _llm_type(self) -> str:
        return f"recording-{self.inner._llm_type}"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Runnable[LanguageModelInput, AIMessage]:
        """Bind tools the way ``inner`` does, keeping the calls on this recorder."""
        bound = self.inner.bind_tools(tools, **kwargs)
        if not isinstance(bound, RunnableBinding) or bound.bound is not self.inner:
            raise TypeError(
                f"cannot record {type(self.inner).__name__}: its bind_tools does not return a binding"
            )
        return self.bind(**bound.kwargs)

    def _record(self, message: AIMessage) -> None:
        line = json.dumps(message_to_record(message), ensure_ascii=False, default=str) + "\n"
        with self._lock:
            if self._lines is None:
                existing = Path(self.path)
                self._lines = (
                    existing.read_text(encoding="utf-8").splitlines(keepends=True)
                    if (self.append and existing.is_file())
                    else []
                )
            self._lines.append(line)
            atomic_write_text(self.path, "".join(self._lines))

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        # Call the inner model's hook directly: invoking it would open a second, nested
        # model run and streaming handlers would see every token twice.
        result = self.inner._generate(messages, stop=stop, run_manager=run_manager, **kwargs)
        self._record_result(result)
        return result

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        result = await self.inner._agenerate(messages, stop=stop, run_manager=run_manager, **kwargs)
        await asyncio.to_thread(self._record_result, result)
        return result

    def _record_result(self, result: ChatResult) -> None:
        message = result.generations[0].message
        if isinstance(message, AIMessage):
            self._record(message)

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        if type(self.inner)._stream is BaseChatModel._stream:
            result = self._generate(messages, stop=stop, run_manager=run_manager, **kwargs)
            yield _as_chunk(result.generations[0])
            return
        merged: AIMessageChunk | None = None
        for chunk in self.inner._stream(messages, stop=stop, run_manager=run_manager, **kwargs):
            merged = _merge(merged, chunk)
            yield chunk
        if merged is not None:
            self._record(_to_message(merged))

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        inner_type = type(self.inner)
        if inner_type._astream is BaseChatModel._astream and inner_type._stream is BaseChatModel._stream:
            result = await self._agenerate(messages, stop=stop, run_manager=run_manager, **kwargs)
            yield _as_chunk(result.generations[0])
            return
        merged: AIMessageChunk | None = None
        async for chunk in self.inner._astream(messages, stop=stop, run_manager=run_manager, **kwargs):
            merged = _merge(merged, chunk)
            yield chunk
        if merged is not None:
            await asyncio.to_thread(self._record, _to_message(merged))


def _merge(merged: AIMessageChunk | None, chunk: ChatGenerationChunk) -> AIMessageChunk | None:
    if not isinstance(chunk.message, AIMessageChunk):
        return merged
    return chunk.message if merged is None else merged + chunk.message


def _to_message(chunk: AIMessageChunk) -> AIMessage:
    message = message_chunk_to_message(chunk)
    if not isinstance(message, AIMessage):  # pragma: no cover - an AIMessageChunk always converts
        raise TypeError(f"expected an AIMessage, got {type(message).__name__}")
    return message


def _as_chunk(generation: ChatGeneration) -> ChatGenerationChunk:
    message = generation.message
    chunk = AIMessageChunk(
        content=message.content,
        id=message.id,
        tool_call_chunks=[
            {
                "name": c["name"],
                "args": json.dumps(c["args"]),
                "id": c.get("id"),
                "index": i,
                "type": "tool_call_chunk",
            }
            for i, c in enumerate(getattr(message, "tool_calls", []) or [])
        ],
        usage_metadata=getattr(message, "usage_metadata", None),
        response_metadata=dict(message.response_metadata),
        additional_kwargs=dict(message.additional_kwargs),
        chunk_position="last",
    )
    return ChatGenerationChunk(message=chunk)
