"""``ScriptedChatModel``: a chat model that answers from a list, for tests and examples.

In Python::

    model = ScriptedChatModel(responses=[
        {"content": "", "tool_calls": [{"name": "write_file", "args": {"path": "a.txt", "content": "hi"}}]},
        "Done: wrote a.txt",
    ])

or from ``config.yaml``::

    models:
      - name: scripted
        use: deerflow_nb.testing:ScriptedChatModel
        responses: ["Hello!", {content: "Bye", tool_calls: []}]
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.messages.tool import tool_call
from pydantic import Field, field_validator

from deerflow_nb.testing.base import DeterministicChatModel, echo_text

__all__ = ["ScriptedChatModel"]

__test__ = False

_DICT_KEYS = frozenset(
    {"content", "tool_calls", "usage_metadata", "response_metadata", "additional_kwargs", "id"}
)
_ERROR_KEYS = frozenset({"error", "retry_after", "message"})
_TOOL_CALL_KEYS = frozenset({"name", "args", "id"})


def _check_dict(entry: Mapping[str, Any], where: str) -> None:
    if "error" in entry:
        if unknown := sorted(set(entry) - _ERROR_KEYS):
            raise ValueError(f"{where}: unknown key(s) {unknown} for an error entry; allowed: {sorted(_ERROR_KEYS)}")
        from deerflow_nb.testing.provider_errors import PROVIDER_ERROR_KINDS

        if entry["error"] not in PROVIDER_ERROR_KINDS:
            raise ValueError(f"{where}.error must be one of {list(PROVIDER_ERROR_KINDS)}")
        return
    unknown = sorted(set(entry) - _DICT_KEYS)
    if unknown:
        raise ValueError(f"{where}: unknown key(s) {unknown}; allowed: {sorted(_DICT_KEYS)}")
    content = entry.get("content", "")
    if not isinstance(content, str | list):
        raise ValueError(f"{where}.content must be a string or a list of content blocks")
    calls = entry.get("tool_calls") or []
    if not isinstance(calls, list):
        raise ValueError(f"{where}.tool_calls must be a list")
    for i, call in enumerate(calls):
        at = f"{where}.tool_calls[{i}]"
        if not isinstance(call, Mapping):
            raise ValueError(f"{at} must be a mapping with 'name' and 'args'")
        if unknown := sorted(set(call) - _TOOL_CALL_KEYS):
            raise ValueError(f"{at}: unknown key(s) {unknown}; allowed: {sorted(_TOOL_CALL_KEYS)}")
        if not isinstance(call.get("name"), str) or not call["name"]:
            raise ValueError(f"{at}.name must be a non-empty string")
        if not isinstance(call.get("args", {}), Mapping):
            raise ValueError(f"{at}.args must be a mapping")


def _to_message(entry: Any, where: str) -> AIMessage:
    """Turn one scripted answer (str, dict or AIMessage) into an AIMessage."""
    if isinstance(entry, AIMessage):
        return entry.model_copy(deep=True)
    if isinstance(entry, str):
        return AIMessage(content=entry)
    if isinstance(entry, BaseException):
        raise entry.with_traceback(None)
    if isinstance(entry, Mapping):
        _check_dict(entry, where)
        if "error" in entry:
            from deerflow_nb.testing.provider_errors import provider_error

            raise provider_error(entry["error"], retry_after=entry.get("retry_after"), message=entry.get("message"))
        calls = [
            tool_call(name=c["name"], args=dict(c.get("args") or {}), id=c.get("id"))
            for c in entry.get("tool_calls") or []
        ]
        return AIMessage(
            content=entry.get("content", ""),
            tool_calls=calls,
            id=entry.get("id"),
            usage_metadata=entry.get("usage_metadata"),
            response_metadata=dict(entry.get("response_metadata") or {}),
            additional_kwargs=dict(entry.get("additional_kwargs") or {}),
        )
    raise ValueError(
        f"{where} must be a string, a mapping, an AIMessage or a callable, got {type(entry).__name__}"
    )


class ScriptedChatModel(DeterministicChatModel):
    """Answers each call with the next entry of ``responses``.

    An entry is a string (the final text), a mapping ``{"content": ..., "tool_calls":
    [{"name", "args", "id"?}]}`` (missing tool-call ids become ``call_<n>``), an
    :class:`AIMessage`, or a callable ``(messages) -> entry`` for answers that depend
    on the input. Once the script is exhausted every call answers
    ``Echo: <last human text>``.

    ``bind_tools`` returns a binding of this same model, so the cursor and
    :attr:`calls` are shared: an agent that binds tools advances the one script.
    An exception instance (e.g. from :func:`~deerflow_nb.testing.provider_error`) or a
    mapping ``{"error": kind, "retry_after": s}`` is raised by the call that reaches it.
    ``error_at=N`` makes the N-th call raise (without consuming an entry);
    ``latency`` sleeps per call and per streamed chunk (``asyncio.sleep`` when async).
    """

    responses: list[Any] = Field(default_factory=list, description="The scripted answers, in order.")

    @field_validator("responses")
    @classmethod
    def _check_responses(cls, responses: list[Any]) -> list[Any]:
        for i, entry in enumerate(responses):
            if isinstance(entry, Mapping) and "error" in entry:
                _check_dict(entry, f"responses[{i}]")
            elif not callable(entry) and not isinstance(entry, BaseException):
                _to_message(entry, f"responses[{i}]")  # fail at construction, naming the entry
        return responses

    @classmethod
    def from_replay(cls, path: str | os.PathLike[str], **kwargs: Any) -> ScriptedChatModel:
        """A scripted model whose responses are the messages of a JSONL recording."""
        from deerflow_nb.testing.recording import load_recording

        return cls(responses=list(load_recording(path)), **kwargs)

    @property
    def remaining(self) -> int:
        """How many scripted answers are left before the echo fallback."""
        return max(0, len(self.responses) - self._state.cursor)

    @property
    def _llm_type(self) -> str:
        return "scripted-chat-model"

    def _next_response(self, messages: list[BaseMessage]) -> AIMessage:
        index = self._state.cursor
        if index >= len(self.responses):
            return AIMessage(content=echo_text(messages))
        self._state.cursor += 1
        entry = self.responses[index]
        if callable(entry):
            entry = entry(messages)
        return _to_message(entry, f"responses[{index}]")
