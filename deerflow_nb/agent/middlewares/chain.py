"""Run many middlewares' wrapping hooks as one LangChain middleware.

LangChain wraps every middleware hook in a LangSmith ``traceable`` span; in async
runs each span costs two thread-pool hops and a task, whether or not tracing is on.
With twenty middlewares that dominated a turn. ``MiddlewareChain`` keeps one class
per concern (each testable on its own) but presents a single ``wrap_model_call`` and
a single ``wrap_tool_call`` to the agent, nesting the members in list order (the
first is outermost), exactly as ``create_agent`` would.

Innermost, the chain hands the model its tools as cached OpenAI-format schemas:
``create_agent`` binds the tools on every model call, and converting a tool's
pydantic schema costs ~60 µs (a turn with four model calls and nine tools spent
~2 ms on it). The schemas are what every provider's ``bind_tools`` derives from a
``BaseTool`` anyway; tools with provider-specific ``extras`` are passed unchanged.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain.agents.middleware.types import ExtendedModelResponse, ModelCallResult
from langchain_core.messages import AIMessage
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.types import Command

__all__ = ["MiddlewareChain", "ToolSchemaCache", "merge_updates"]


def _overrides(member: AgentMiddleware, name: str) -> bool:
    return getattr(type(member), name) is not getattr(AgentMiddleware, name)


def merge_updates(commands: Sequence[Command]) -> dict[str, Any]:
    """Merge state updates: ``messages`` lists concatenate, other keys: the outer (later) one wins."""
    merged: dict[str, Any] = {}
    for command in commands:
        for key, value in (command.update or {}).items():
            if key == "messages" and key in merged:
                merged[key] = [*merged[key], *value]
            else:
                merged[key] = value
    return merged


def _split(result: ModelCallResult, commands: list[Command]) -> ModelResponse:
    if isinstance(result, ExtendedModelResponse):
        if result.command is not None:
            commands.append(result.command)
        return result.model_response
    if isinstance(result, AIMessage):
        return ModelResponse(result=[result])
    return result


def _join(response: ModelResponse, commands: list[Command]) -> ModelCallResult:
    if not commands:
        return response
    return ExtendedModelResponse(model_response=response, command=Command(update=merge_updates(commands)))


class ToolSchemaCache:
    """OpenAI-format schemas of tools, converted once per tool object."""

    def __init__(self, max_size: int = 512) -> None:
        self._schemas: dict[int, tuple[BaseTool, dict[str, Any]]] = {}
        self._max_size = max_size

    def schema(self, tool: Any) -> Any:
        """The tool's schema (a fresh outer dict each time), or the tool itself when it cannot be cached."""
        if not isinstance(tool, BaseTool) or getattr(tool, "extras", None):
            return tool
        hit = self._schemas.get(id(tool))
        if hit is None or hit[0] is not tool:
            if len(self._schemas) >= self._max_size:
                self._schemas.clear()
            hit = (tool, convert_to_openai_tool(tool))
            self._schemas[id(tool)] = hit
        schema = hit[1]
        if schema.get("type") == "function" and isinstance(schema.get("function"), dict):
            return {**schema, "function": dict(schema["function"])}
        return dict(schema)

    def apply(self, request: ModelRequest) -> ModelRequest:
        """``request`` with its tools replaced by cached schemas."""
        if not request.tools:
            return request
        return request.override(tools=[self.schema(tool) for tool in request.tools])


class MiddlewareChain(AgentMiddleware):
    """One middleware standing for an ordered list of members (first = outermost)."""

    def __init__(self, members: Sequence[AgentMiddleware], name: str = "DeerFlowMiddlewareChain", *,
                 cache_tool_schemas: bool = True) -> None:
        super().__init__()
        self.members = list(members)
        self._name = name
        self._schemas = ToolSchemaCache() if cache_tool_schemas else None
        for member in self.members:
            for hook in ("before_agent", "before_model", "after_model", "after_agent"):
                if _overrides(member, hook) or _overrides(member, "a" + hook):
                    raise TypeError(f"{type(member).__name__}.{hook} cannot run inside a MiddlewareChain")
        self.tools = [tool for member in self.members for tool in getattr(member, "tools", []) or []]
        self._model = [m for m in self.members
                       if _overrides(m, "wrap_model_call") or _overrides(m, "awrap_model_call")]
        self._tool = [m for m in self.members if _overrides(m, "wrap_tool_call") or _overrides(m, "awrap_tool_call")]

    @property
    def name(self) -> str:
        """The name LangChain shows for this middleware."""
        return self._name

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
                        ) -> ModelCallResult:
        """Nest the members' model hooks around ``handler``."""
        commands: list[Command] = []

        def call(index: int, req: ModelRequest) -> ModelResponse:
            if index == len(self._model):
                return handler(self._schemas.apply(req) if self._schemas is not None else req)
            return _split(self._model[index].wrap_model_call(req, lambda r: call(index + 1, r)), commands)

        return _join(call(0, request), commands)

    # The async hooks are plain functions returning a coroutine, not ``async def``: LangSmith's
    # ``traceable`` (which LangChain wraps around every hook, traced or not) gives coroutine
    # functions an async wrapper that makes two thread-pool hops per call; a plain function gets
    # the inline wrapper. LangChain awaits what the hook returns either way.
    def awrap_model_call(  # type: ignore[override]
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> Awaitable[ModelCallResult]:
        """Async twin of :meth:`wrap_model_call` (returns an awaitable)."""
        return self._awrap_model_call(request, handler)

    async def _awrap_model_call(self, request: ModelRequest,
                                handler: Callable[[ModelRequest], Awaitable[ModelResponse]]) -> ModelCallResult:
        commands: list[Command] = []

        async def call(index: int, req: ModelRequest) -> ModelResponse:
            if index == len(self._model):
                return await handler(self._schemas.apply(req) if self._schemas is not None else req)
            return _split(await self._model[index].awrap_model_call(req, lambda r: call(index + 1, r)), commands)

        return _join(await call(0, request), commands)

    def wrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        """Nest the members' tool hooks around ``handler``."""

        def call(index: int, req: Any) -> Any:
            if index == len(self._tool):
                return handler(req)
            return self._tool[index].wrap_tool_call(req, lambda r: call(index + 1, r))

        return call(0, request)

    def awrap_tool_call(  # type: ignore[override]
        self, request: Any, handler: Callable[[Any], Awaitable[Any]]
    ) -> Awaitable[Any]:
        """Async twin of :meth:`wrap_tool_call` (returns an awaitable; see ``awrap_model_call``)."""
        return self._awrap_tool_call(request, handler)

    async def _awrap_tool_call(self, request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:

        async def call(index: int, req: Any) -> Any:
            if index == len(self._tool):
                return await handler(req)
            return await self._tool[index].awrap_tool_call(req, lambda r: call(index + 1, r))

        return await call(0, request)


# LangSmith's ``traceable`` wrapper, which LangChain puts around each hook, calls
# ``inspect.signature`` on the hook at every call, traced or not (~25 µs for a method); a
# precomputed ``__signature__`` makes that a lookup.
for _hook in ("wrap_model_call", "awrap_model_call", "wrap_tool_call", "awrap_tool_call"):
    _function = getattr(MiddlewareChain, _hook)
    _function.__signature__ = inspect.signature(_function)
del _hook, _function
