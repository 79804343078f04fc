"""Plumbing shared by the built-in tools: sandbox lookup, results and async twins.

Tools receive a ``runtime: ToolRuntime`` (hidden from the model's schema) whose
``context`` is a :class:`~deerflow_nb.context.RunContext` (a plain mapping with the
same keys also works). Called as a tool call (``runtime.tool_call_id`` set) a tool
returns a :class:`ToolMessage` stamped with ``deerflow_tool_meta``; called directly it
returns the text.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, get_type_hints

from langchain.tools import ToolRuntime
from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool, StructuredTool

from deerflow_nb.errors import SandboxError
from deerflow_nb.sandbox.base import Sandbox, SandboxProvider
from deerflow_nb.tools.meta import TOOL_META_KEY, classify_exception, normalize_tool_result

__all__ = [
    "EXPECTED_ERRORS",
    "HONOURS_PRECONDITIONS",
    "Reply",
    "Runtime",
    "ToolOutput",
    "clear_precondition",
    "context_value",
    "error_reply",
    "file_sha256",
    "get_sandbox",
    "honours_preconditions",
    "get_secrets",
    "make_tool",
    "reply",
    "sandbox_call",
    "set_precondition",
]

#: Failures a tool reports to the model as an error result instead of raising:
#: missing files, path escapes (PermissionError), timeouts and bad arguments.
EXPECTED_ERRORS: tuple[type[BaseException], ...] = (OSError, ValueError)

#: What a tool returns: a stamped ToolMessage (tool call) or plain text (direct call).
ToolOutput = ToolMessage | str
#: The annotation of a tool's injected ``runtime`` parameter. Parametrised with ``Any``
#: so the schema LangChain infers does not warn when serialising a RunContext.
Runtime = ToolRuntime[Any, Any]


def context_value(runtime: ToolRuntime | None, name: str, default: Any = None) -> Any:
    """A field of ``runtime.context`` (a RunContext or a mapping), or ``default``."""
    context = getattr(runtime, "context", None)
    if context is None:
        return default
    if isinstance(context, Mapping):
        return context.get(name, default)
    return getattr(context, name, default)


def get_sandbox(runtime: ToolRuntime | None) -> Sandbox:
    """Acquire the sandbox of the run's ``(user_id, thread_id)`` from its provider.

    The thread id comes from the context, else from ``config["configurable"]["thread_id"]``.

    Raises:
        SandboxError: the run context carries no ``sandbox_provider``.
    """
    provider = context_value(runtime, "sandbox_provider")
    if not isinstance(provider, SandboxProvider):
        raise SandboxError(
            "no sandbox provider in the run context: run the tool inside a DeerFlow agent, or pass "
            "context=RunContext(sandbox_provider=..., thread_id=...) when invoking the graph"
        )
    thread_id = context_value(runtime, "thread_id")
    if thread_id is None:
        config = getattr(runtime, "config", None) or {}
        thread_id = (config.get("configurable") or {}).get("thread_id")
    user_id = context_value(runtime, "user_id") or "default"
    return provider.acquire(thread_id, user_id=user_id)


def get_secrets(runtime: ToolRuntime | None) -> dict[str, str]:
    """Request-scoped secrets to inject into commands (``context.secrets``)."""
    secrets = context_value(runtime, "secrets") or {}
    return {str(k): str(v) for k, v in dict(secrets).items()}


def file_sha256(sandbox: Sandbox, path: str) -> str | None:
    """Hex SHA-256 of a file's full content, or ``None`` if it does not exist (or is a folder)."""
    try:
        data = sandbox.read_bytes(path)
    except (FileNotFoundError, IsADirectoryError):
        return None
    return hashlib.sha256(data).hexdigest()


@dataclass
class Reply:
    """What a tool body produced: the text plus optional meta and message extras.

    ``meta`` adds fields to ``deerflow_tool_meta`` (e.g. a command's ``exit_code``).
    """

    content: str
    status: Literal["success", "error"] = "success"
    error_type: str | None = None
    additional_kwargs: dict[str, Any] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)


def reply(
    runtime: ToolRuntime | None, name: str, result: Reply | str, *, source: str = "builtin"
) -> ToolOutput:
    """Wrap a body's result as a stamped ToolMessage (tool call) or plain text (direct call)."""
    if isinstance(result, str):
        result = Reply(result)
    call_id = getattr(runtime, "tool_call_id", None)
    if not call_id:
        return result.content
    message = ToolMessage(
        content=result.content,
        tool_call_id=call_id,
        name=name,
        additional_kwargs=dict(result.additional_kwargs),
    )
    message = normalize_tool_result(message, status=result.status, error_type=result.error_type, source=source)
    if result.meta:
        message.additional_kwargs[TOOL_META_KEY].update(result.meta)
    return message


def error_reply(
    runtime: ToolRuntime | None, name: str, exc: BaseException, sandbox: Sandbox | None = None
) -> ToolOutput:
    """An ``Error: ...`` result classified by :func:`classify_exception`."""
    text = str(exc) or type(exc).__name__
    postprocess = getattr(sandbox, "postprocess_output", None)
    if callable(postprocess):  # keep host paths of OS errors out of the model's view
        text = postprocess(text)
    meta = classify_exception(exc)
    return reply(runtime, name, Reply(f"Error: {text}", status="error", error_type=meta["error_type"]))


def sandbox_call(
    name: str, runtime: ToolRuntime | None, body: Callable[[Sandbox], Reply | str]
) -> ToolOutput:
    """Run ``body`` with the run's sandbox, turning expected failures into error results."""
    sandbox = get_sandbox(runtime)
    try:
        result = body(sandbox)
    except EXPECTED_ERRORS as exc:
        return error_reply(runtime, name, exc, sandbox)
    return reply(runtime, name, result)


def make_tool(
    func: Callable[..., Any],
    *,
    name: str,
    description: str,
    args_schema: Any = None,
    return_direct: bool = False,
) -> BaseTool:
    """A StructuredTool running ``func`` synchronously or, when awaited, in a worker thread.

    The schema is inferred from ``func``'s signature (``runtime`` is hidden from the
    model) unless ``args_schema`` is given.
    """

    @functools.wraps(func)
    async def coroutine(**kwargs: Any) -> Any:
        # Sandbox work is blocking (processes, files): keep it off the event loop. A precondition
        # set by a middleware runs in the same worker call, right before the work.
        check = _take_precondition(kwargs.get("runtime"))
        if check is None:
            return await asyncio.to_thread(func, **kwargs)

        def guarded() -> Any:
            refusal = check()
            return refusal if refusal is not None else func(**kwargs)

        return await asyncio.to_thread(guarded)

    _resolve_annotations(coroutine, func)
    tool = StructuredTool.from_function(
        func=func,
        coroutine=coroutine,
        name=name,
        description=description,
        args_schema=args_schema,
        return_direct=return_direct,
        metadata={HONOURS_PRECONDITIONS: True},
    )
    _exclude_runtime_from_dump(tool)
    return tool


def _resolve_annotations(wrapper: Callable[..., Any], func: Callable[..., Any]) -> None:
    """Give ``wrapper`` ``func``'s annotations as evaluated objects, not strings.

    LangChain looks for a ``RunnableConfig`` parameter with ``get_type_hints`` on every tool
    call; string annotations (``from __future__ import annotations``) are parsed and evaluated
    each time, about 150 µs a call. ``functools.wraps`` shares ``func``'s dict, so ``wrapper``
    gets a new one and ``func`` (whose signature the schema comes from) is left as it is.
    Names that do not resolve leave the strings in place.
    """
    try:
        hints = get_type_hints(func, include_extras=True)
    except Exception:  # an annotation naming something not importable here: LangChain copes per call
        return
    wrapper.__annotations__ = hints


def _exclude_runtime_from_dump(tool: BaseTool) -> None:
    """Leave the injected ``runtime`` out of the args schema's ``model_dump``.

    LangChain validates a call's input with the schema and dumps the result; a dumped
    ``ToolRuntime`` serializes the whole thread state, every message, on every tool call
    (over 100 ms a call at a few thousand messages). LangChain passes injected arguments
    on from the raw input anyway, so nothing is lost.
    """
    schema = tool.args_schema
    fields = getattr(schema, "model_fields", None)
    if isinstance(schema, type) and fields and "runtime" in fields and not fields["runtime"].exclude:
        fields["runtime"].exclude = True
        schema.model_rebuild(force=True)  # type: ignore[union-attr]


#: ``BaseTool.metadata`` flag of tools that run :func:`set_precondition` checks.
HONOURS_PRECONDITIONS = "deerflow_preconditions"
_PRECONDITIONS_KEY = "deerflow.tool_preconditions"


def honours_preconditions(tool: Any) -> bool:
    """Whether ``tool`` runs preconditions set for its calls (the tools made by :func:`make_tool`)."""
    return bool(isinstance(tool, BaseTool) and (tool.metadata or {}).get(HONOURS_PRECONDITIONS))


def set_precondition(context: Any, tool_call_id: str, check: Callable[[], Any]) -> None:
    """Have the tool call ``tool_call_id`` run ``check()`` first, in its own worker thread.

    ``check`` returns ``None`` to let the call proceed, or the result to return instead
    (e.g. an error ``ToolMessage``). Middlewares use this to make a blocking check part of
    the tool's single hop off the event loop (and atomic with the work it guards).
    """
    context.extra.setdefault(_PRECONDITIONS_KEY, {})[tool_call_id] = check


def clear_precondition(context: Any, tool_call_id: str) -> Callable[[], Any] | None:
    """Remove a precondition (returns it if the tool did not take it)."""
    extra = getattr(context, "extra", None)
    pending = extra.get(_PRECONDITIONS_KEY) if isinstance(extra, dict) else None
    return pending.pop(tool_call_id, None) if pending else None


def _take_precondition(runtime: Any) -> Callable[[], Any] | None:
    call_id = getattr(runtime, "tool_call_id", None)
    if not call_id:
        return None
    return clear_precondition(getattr(runtime, "context", None), call_id)
