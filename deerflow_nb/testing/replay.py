"""``ReplayChatModel``: answer with the messages of a JSONL recording, in order.

Record once against a real provider with
:class:`~deerflow_nb.testing.RecordingChatModel`, then replay offline::

    models:
      - name: replay
        use: deerflow_nb.testing:ReplayChatModel
        path: tests/data/quickstart.jsonl
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Literal

from langchain_core.messages import AIMessage, BaseMessage
from pydantic import Field, PrivateAttr, field_validator

from deerflow_nb.testing.base import DeterministicChatModel, echo_text
from deerflow_nb.testing.recording import load_recording

__all__ = ["ReplayChatModel"]

__test__ = False


class ReplayChatModel(DeterministicChatModel):
    """Replays a recording made by :class:`RecordingChatModel`, one answer per call.

    The file is read on the first call (off the event loop when async). Each
    answer gets a fresh message id; content, tool calls (with their ids), usage
    and response metadata are as recorded. When the recording is used up the
    model raises, or answers ``Echo: <last human text>`` with
    ``on_exhausted="echo"``. Streaming, ``calls``, ``latency`` and ``error_at``
    work as in :class:`ScriptedChatModel`.
    """

    path: str = Field(description="The JSONL recording; relative paths are resolved against the cwd.")
    model_name: str = "replay"
    on_exhausted: Literal["error", "echo"] = "error"

    _messages: list[AIMessage] | None = PrivateAttr(default=None)

    @field_validator("path")
    @classmethod
    def _check_path(cls, value: str) -> str:
        resolved = Path(value).expanduser().resolve()
        if not resolved.is_file():
            raise ValueError(f"recording not found: {resolved}")
        return str(resolved)

    @property
    def _llm_type(self) -> str:
        return "replay-chat-model"

    def _load(self) -> list[AIMessage]:
        with self._state.lock:
            if self._messages is None:
                self._messages = load_recording(self.path)
            return self._messages

    async def _aprepare(self) -> None:
        if self._messages is None:
            await asyncio.to_thread(self._load)

    def _next_response(self, messages: list[BaseMessage]) -> AIMessage:
        recorded = self._load()
        index = self._state.cursor
        if index >= len(recorded):
            if self.on_exhausted == "echo":
                return AIMessage(content=echo_text(messages))
            raise RuntimeError(
                f"ReplayChatModel: all {len(recorded)} recorded answers of {self.path} are used up "
                f"(call {len(self._state.calls)}); re-record it or set on_exhausted='echo'"
            )
        self._state.cursor += 1
        return recorded[index].model_copy(deep=True)
