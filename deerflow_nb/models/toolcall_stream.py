"""Apply the tolerant tool-call parser to a stream of LangChain message chunks.

:class:`ChunkFilter` sits between the OpenAI client's chunks and the caller: text
goes through :class:`~.toolcall_parser.ToolCallStreamParser` (raw tool-call JSON is
held back and removed), native tool-call chunks from the server pass unchanged, and
the final chunk carries the recovered calls as ``tool_call_chunks`` so that
aggregating the stream gives the same message as ``invoke``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGenerationChunk

from deerflow_nb.models.toolcall_parser import ToolCallStreamParser

__all__ = ["TOOL_KWARGS", "ChunkFilter", "only_repeats", "tool_names_from_kwargs"]

TOOL_KWARGS = ("tools", "tool_choice", "parallel_tool_calls")  # dropped for a tool-free retry


def tool_names_from_kwargs(kwargs: Mapping[str, Any]) -> frozenset[str]:
    """Names of the tools bound to this call (OpenAI-format ``tools`` from ``bind_tools``)."""
    names: set[str] = set()
    for tool in kwargs.get("tools") or ():
        if isinstance(tool, Mapping):
            function = tool.get("function", tool)
            name = function.get("name") if isinstance(function, Mapping) else None
            if isinstance(name, str):
                names.add(name)
    return frozenset(names)


def _call_key(call: Mapping[str, Any]) -> tuple[str, str]:
    return str(call.get("name")), json.dumps(call.get("args") or {}, sort_keys=True, default=str)


def only_repeats(calls: Sequence[Mapping[str, Any]], messages: Sequence[BaseMessage]) -> bool:
    """Whether every call in ``calls`` repeats one already answered since the last human message.

    Small models often answer a tool result by calling the same tool again; such a
    reply is retried without tools so the model has to answer in text.
    """
    if not calls:
        return False
    answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    done: set[tuple[str, str]] = set()
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            break
        if isinstance(message, AIMessage):
            done.update(_call_key(c) for c in message.tool_calls if c.get("id") in answered)
    return all(_call_key(call) in done for call in calls)


def _text_of(message: AIMessageChunk) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(
        block if isinstance(block, str) else str(block.get("text", ""))
        for block in content
        if isinstance(block, str) or block.get("type") == "text"
    )


class ChunkFilter:
    """Turn the inner model's chunks into filtered ones; call :meth:`finish` once at the end."""

    def __init__(
        self, tool_names: frozenset[str], *, message_id: str | None = None, keep_metadata: bool = True,
        first_only: bool = False,
    ) -> None:
        self._parser = ToolCallStreamParser(tool_names, first_only=first_only) if tool_names else None
        self._next_index = 0  # first index free for recovered calls, after any native ones
        self._message_id = message_id
        # A retry continues a message whose metadata was already sent; string fields such as
        # finish_reason would be concatenated ("stopstop") when the chunks are added up.
        self._keep_metadata = keep_metadata
        self.shown_text = False  # whether any visible text has been sent
        self.native_calls = False  # whether the server sent its own tool-call chunks

    @property
    def recovered_calls(self) -> list[dict[str, Any]]:
        """Tool calls recovered from the text so far (complete after :meth:`finish`)."""
        return self._parser.tool_calls if self._parser is not None else []

    @property
    def message_id(self) -> str | None:
        """The id given to every chunk of this message."""
        return self._message_id

    def process(self, chunk: ChatGenerationChunk) -> ChatGenerationChunk | None:
        """The filtered version of ``chunk``, or ``None`` when nothing in it is worth sending yet."""
        message = chunk.message
        if not isinstance(message, AIMessageChunk):
            return chunk
        self._message_id = self._message_id or message.id
        text = _text_of(message)
        shown = self._parser.feed(text) if self._parser is not None else text
        native = list(message.tool_call_chunks)
        self.shown_text = self.shown_text or bool(shown.strip())
        self.native_calls = self.native_calls or bool(native)
        for call in native:
            index = call.get("index")
            if index is not None:
                self._next_index = max(self._next_index, int(index) + 1)
        info = chunk.generation_info if self._keep_metadata else None
        if not (shown or native or message.usage_metadata or info):
            return None
        out = AIMessageChunk(
            content=shown,
            tool_call_chunks=native,
            usage_metadata=message.usage_metadata,
            response_metadata=message.response_metadata if self._keep_metadata else {},
            additional_kwargs=message.additional_kwargs,
            id=self._message_id,
        )  # chunk_position is dropped: only last_chunk() ends the message
        return ChatGenerationChunk(message=out, generation_info=info)

    def finish(self) -> str:
        """Flush the parser at end of stream; return the held-back text."""
        return self._parser.finish() if self._parser is not None else ""

    def last_chunk(self, tail: str, *, with_calls: bool = True) -> ChatGenerationChunk:
        """The final chunk: ``tail`` plus (unless ``with_calls`` is false) the recovered tool calls."""
        chunks: list[Any] = []
        if with_calls and self._parser is not None:
            for offset, call in enumerate(self._parser.tool_calls):
                chunks.append(
                    {
                        "name": call["name"],
                        "args": json.dumps(call["args"]),
                        "id": call["id"],
                        "index": self._next_index + offset,
                        "type": "tool_call_chunk",
                    }
                )
        message = AIMessageChunk(content=tail, tool_call_chunks=chunks, chunk_position="last", id=self._message_id)
        return ChatGenerationChunk(message=message)
