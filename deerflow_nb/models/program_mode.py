"""Program mode: a small model writes the ``python`` tool's program as a fenced block, not as JSON.

Small models write correct short pandas far more often than they fill in a tool's JSON arguments
(a program squeezed into one JSON string loses its newlines and quotes). When the only tool bound
to a call is a *code tool* (one string argument, ``code``, such as the ``python`` tool), the
embedded model does not list tools or constrain the reply with a grammar; instead:

- with ``tool_choice`` naming the code tool, the reply is *prefilled* with ````` ```python ````` and
  the request's ``code_prefix`` (the data-loading lines the agent already knows), and stops at the
  closing fence, so the model writes only the rest of the program;
- otherwise the model may answer in text, and a ````` ```python ````` block in its reply becomes
  the call.

:func:`program_request` prepares the request and :func:`program_message` turns the reply into
an ``AIMessage`` with the tool call (the text before the block, if any, stays its content).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

__all__ = ["CODE_PREFIX_KWARG", "PROGRAM_MAX_TOKENS", "ProgramRequest", "ProgramStream", "as_text_turns", "code_tools",
           "program_message", "program_request", "split_program"]

#: The request option carrying the program's first lines (a ``model_settings`` key of the agent).
CODE_PREFIX_KWARG = "code_prefix"
#: The most tokens a prefilled program may take: a short analysis program is far below it, and a model that
#: repeats itself stops here (a cut-off program fails and is written again) instead of at ``max_tokens``.
PROGRAM_MAX_TOKENS = 700
_OPEN = "```python\n"
_FENCE_START = re.compile(r"```[ \t]*(?:python|py|python3)?[ \t]*\n", re.IGNORECASE)


def code_tools(tools: Sequence[Mapping[str, Any]]) -> frozenset[str]:
    """Names of the bound OpenAI-format tools whose only parameter is the string ``code``."""
    names: set[str] = set()
    for tool in tools:
        function = tool.get("function", tool) if isinstance(tool, Mapping) else None
        if not isinstance(function, Mapping):
            continue
        params = function.get("parameters") or {}
        props = params.get("properties") or {}
        if set(props) == {"code"} and (props["code"] or {}).get("type") == "string":
            names.add(str(function.get("name")))
    return frozenset(names)


@dataclass(frozen=True)
class ProgramRequest:
    """A prepared program-mode call: the messages and options to send, and how to read the reply."""

    messages: list[BaseMessage]
    kwargs: dict[str, Any]
    tool: str
    prefill: str  # the text the reply was prefilled with ("" when the model may answer in text)

    def stop(self, stop: list[str] | None) -> list[str] | None:
        """The stop sequences of the call: the caller's, and the closing fence of a prefilled program."""
        if not self.prefill:
            return stop
        return [*(stop or []), "```"]

    @property
    def forced(self) -> bool:
        """Whether the reply must be a program."""
        return bool(self.prefill)


def _chosen(tool_choice: Any) -> str | None:
    if isinstance(tool_choice, Mapping):
        function = tool_choice.get("function")
        if isinstance(function, Mapping) and isinstance(function.get("name"), str):
            return str(function["name"])
    return None


def _only_code(message: AIMessage, tools: frozenset[str]) -> bool:
    return all(call["name"] in tools for call in message.tool_calls)


def as_text_turns(messages: Sequence[BaseMessage], tools: frozenset[str]) -> list[BaseMessage]:
    """The conversation with its programs as fenced blocks and their results as user turns.

    The model then sees earlier programs written the way it is asked to write the next one, not as
    tool-call JSON (which a small model would start to imitate).
    """
    out: list[BaseMessage] = []
    calls: set[str] = set()
    for message in messages:
        if isinstance(message, AIMessage) and message.tool_calls and _only_code(message, tools):
            text = message.text.strip()
            blocks = [f"{_OPEN}{str(c['args'].get('code', '')).rstrip()}\n```" for c in message.tool_calls]
            calls.update(str(c.get("id")) for c in message.tool_calls)
            out.append(AIMessage(content="\n\n".join([*([text] if text else []), *blocks]), id=message.id))
        elif isinstance(message, ToolMessage) and message.tool_call_id in calls:
            out.append(HumanMessage(content=f"Output of the program:\n{message.text}"))
        else:
            out.append(message)
    return out


def program_request(messages: list[BaseMessage], kwargs: dict[str, Any], tools: frozenset[str],
                    drop: Sequence[str]) -> ProgramRequest:
    """The request for a program-mode call (``tools``: the bound code tools; ``drop``: option keys to remove)."""
    messages = as_text_turns(messages, tools)
    prefix = str(kwargs.get(CODE_PREFIX_KWARG) or "")
    choice = kwargs.get("tool_choice")
    tool = _chosen(choice) if _chosen(choice) in tools else None
    forced = tool is not None or choice in ("required", "any")
    tool = tool or sorted(tools)[0]
    request = {k: v for k, v in kwargs.items() if k not in drop and k != CODE_PREFIX_KWARG}
    if not forced:
        return ProgramRequest(list(messages), request, tool, "")
    prefill = _OPEN + (prefix.rstrip("\n") + "\n" if prefix.strip() else "")
    request["max_tokens"] = min(int(request.get("max_tokens") or PROGRAM_MAX_TOKENS), PROGRAM_MAX_TOKENS)
    return ProgramRequest([*messages, AIMessage(content=prefill)], request, tool, prefill)


def split_program(text: str, prefill: str = "") -> tuple[str, str | None]:
    """``(text before the program, program)`` of a reply; the program is ``None`` when there is none.

    A prefilled reply is the prefill plus what the model wrote (servers differ in whether they echo
    the prefill back; both are accepted). Otherwise the first fenced Python (or unlabelled) block
    is the program.
    """
    if prefill:
        body = text[len(prefill):] if text.startswith(prefill) else text
        body = body.split("```", 1)[0]
        code = prefill[len(_OPEN):] + body
        return "", code.strip("\n") + "\n"
    match = _FENCE_START.search(text)
    if match is None:
        return text, None
    rest = text[match.end():]
    code = rest.split("```", 1)[0]
    if not code.strip():
        return text, None
    return text[:match.start()].rstrip(), code.strip("\n") + "\n"


def program_message(message: AIMessage, request: ProgramRequest) -> AIMessage:
    """``message`` (the model's reply) with its program turned into a call of ``request.tool``."""
    text = message.content if isinstance(message.content, str) else message.text
    before, code = split_program(text, request.prefill)
    if code is None:
        return message
    call = {"name": request.tool, "args": {"code": code}, "id": "call_" + uuid.uuid4().hex[:24], "type": "tool_call"}
    return message.model_copy(update={"content": before, "tool_calls": [call], "invalid_tool_calls": []})


class ProgramStream:
    """Filter a program-mode reply's chunks: text before a program streams, the program is held back.

    Feed every chunk of the inner model to :meth:`feed` (it answers the chunk to pass on, or ``None``)
    and send :meth:`finish`'s chunk last: it carries the rest of the text, or the program as a
    ``tool_call_chunk``, and the usage of the whole reply.
    """

    def __init__(self, request: ProgramRequest) -> None:
        self.request = request
        self.text = ""
        self._shown = 0  # characters of ``text`` passed on
        self._usage: Any = None
        self._metadata: dict[str, Any] = {}
        self.message_id: str | None = None

    def _showable(self) -> int:
        """How much of the text may be shown now: nothing once a fence has begun (or may be beginning)."""
        if self.request.forced:
            return 0
        fence = self.text.find("```")
        if fence >= 0:
            return fence
        tail = len(self.text) - len(self.text.rstrip("`"))  # "`" or "``" may start a fence
        return len(self.text) - tail

    @property
    def degenerate(self) -> bool:
        """Whether the model has started repeating itself: the last six lines of the program all came before.

        A small model sometimes writes the same few lines over and over until its token limit; stopping
        there saves most of that time (the cut-off program fails and is written again).
        """
        lines = [line.strip() for line in self.text.splitlines() if line.strip()]
        if len(lines) < 12:
            return False
        earlier = set(lines[:-6])
        return all(line in earlier for line in lines[-6:])

    def feed(self, chunk: Any) -> Any:
        """The chunk to pass on for ``chunk`` (a ``ChatGenerationChunk``), or ``None``."""
        from langchain_core.messages import AIMessageChunk
        from langchain_core.outputs import ChatGenerationChunk

        message = chunk.message
        self.message_id = self.message_id or message.id
        if message.usage_metadata:
            self._usage = message.usage_metadata
        if message.response_metadata:
            self._metadata.update(message.response_metadata)
        content = message.content if isinstance(message.content, str) else message.text
        self.text += content
        limit = self._showable()
        if limit <= self._shown:
            return None
        piece = self.text[self._shown:limit]
        self._shown = limit
        return ChatGenerationChunk(message=AIMessageChunk(content=piece, id=self.message_id))

    def result(self) -> Any:
        """The whole reply as a ``ChatResult`` (for ``invoke``): the program as the call, the usage of the reply."""
        from langchain_core.messages import message_chunk_to_message
        from langchain_core.outputs import ChatGeneration, ChatResult

        last = self.finish().message
        before, code = split_program(self.text, self.request.prefill)
        message = message_chunk_to_message(last.model_copy(update={"content": self.text if code is None else before}))
        return ChatResult(generations=[ChatGeneration(message=message)])

    def finish(self) -> Any:
        """The last chunk (see the class docstring)."""
        import json

        from langchain_core.messages import AIMessageChunk
        from langchain_core.messages.tool import tool_call_chunk
        from langchain_core.outputs import ChatGenerationChunk

        before, code = split_program(self.text, self.request.prefill)
        if code is None:
            tail, calls = self.text[self._shown:], []
        else:
            tail = before[self._shown:] if len(before) > self._shown else ""
            calls = [tool_call_chunk(name=self.request.tool, args=json.dumps({"code": code}), index=0,
                                     id="call_" + uuid.uuid4().hex[:24])]
        message = AIMessageChunk(content=tail, tool_call_chunks=calls, usage_metadata=self._usage,
                                 response_metadata=self._metadata, chunk_position="last", id=self.message_id)
        return ChatGenerationChunk(message=message)
