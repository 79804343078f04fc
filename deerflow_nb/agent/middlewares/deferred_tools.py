"""Deferred MCP tools per model call: routing promotes, the filter hides what is not promoted.

See :mod:`deerflow_nb.tools.tool_search`. Both work in ``wrap_model_call`` (no graph
node): :class:`McpRoutingMiddleware` adds the routing matches of the user's latest
message to the request's ``promoted`` state and records them with the model response;
:class:`DeferredToolFilterMiddleware`, inside it, removes every deferred tool that is not
promoted from the request's tools and refuses calls to them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain.agents.middleware.types import ModelCallResult
from langchain_core.messages import HumanMessage

from deerflow_nb.agent.middlewares._base import ToolCallGate, tool_error, with_update
from deerflow_nb.agent.reducers import merge_promoted
from deerflow_nb.tools.tool_search import TOOL_SEARCH_NAME

__all__ = ["DeferredToolFilterMiddleware", "McpRoutingMiddleware", "promoted_names"]


def promoted_names(state: Mapping[str, Any] | None, catalog_hash: str, limit: int | None = None) -> frozenset[str]:
    """The names promoted under ``catalog_hash`` in ``state`` (none under another hash).

    ``limit``: only the most recently promoted ones.
    """
    record = (state or {}).get("promoted")
    if not isinstance(record, Mapping) or record.get("catalog_hash") != catalog_hash:
        return frozenset()
    names = [str(n) for n in record.get("names") or []]
    return frozenset(names[-limit:] if limit else names)


def _text(message: HumanMessage) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return " ".join(b.get("text", "") if isinstance(b, dict) else str(b) for b in content)


def _latest_user_text(state: Mapping[str, Any] | None) -> str:
    for message in reversed(list((state or {}).get("messages") or [])):
        if isinstance(message, HumanMessage) and not message.additional_kwargs.get("hide_from_ui"):
            return _text(message)
    return ""


class McpRoutingMiddleware(AgentMiddleware):
    """Promote deferred tools whose routing keywords occur in the user's latest message.

    At most ``top_k`` tools, highest ``priority`` first (then by name). It only makes
    schemas visible; it never calls a tool.
    """

    def __init__(self, routing_index: Mapping[str, tuple[int, tuple[str, ...]]], catalog_hash: str,
                 top_k: int) -> None:
        super().__init__()
        self.routing_index = {name: (priority, tuple(k.casefold() for k in keywords))
                              for name, (priority, keywords) in routing_index.items() if keywords}
        self.catalog_hash = catalog_hash
        self.top_k = min(max(int(top_k), 1), 5)

    def matches(self, state: Mapping[str, Any] | None) -> list[str]:
        """The tools routing promotes for ``state``, best first."""
        text = _latest_user_text(state).casefold()
        if not text:
            return []
        found = sorted((-priority, name) for name, (priority, keywords) in self.routing_index.items()
                       if any(k in text for k in keywords))
        return [name for _, name in found[: self.top_k]]

    def _prepare(self, request: ModelRequest) -> tuple[ModelRequest, dict[str, Any] | None]:
        new = [n for n in self.matches(request.state) if n not in promoted_names(request.state, self.catalog_hash)]
        if not new:
            return request, None
        update = {"catalog_hash": self.catalog_hash, "names": new}
        current: Any = request.state.get("promoted")
        state: Any = {**request.state, "promoted": merge_promoted(current, update)}
        return request.override(state=state), {"promoted": update}

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
                        ) -> ModelCallResult:
        """Add the routing matches to the request's promotions (and to the state)."""
        request, update = self._prepare(request)
        return with_update(handler(request), update)

    async def awrap_model_call(self, request: ModelRequest,
                               handler: Callable[[ModelRequest], Awaitable[ModelResponse]]) -> ModelCallResult:
        """Async twin of :meth:`wrap_model_call`."""
        request, update = self._prepare(request)
        return with_update(await handler(request), update)


class DeferredToolFilterMiddleware(ToolCallGate, AgentMiddleware):
    """Bind only non-deferred and promoted tools; refuse calls to deferred tools not promoted.

    At most ``max_active`` promoted tools are bound, the most recently promoted; an older one
    is refused like an unloaded one (``tool_search`` brings it back).
    """

    def __init__(self, deferred_names: frozenset[str], catalog_hash: str, max_active: int | None = None) -> None:
        super().__init__()
        self.deferred_names = frozenset(deferred_names)
        self.catalog_hash = catalog_hash
        self.max_active = max_active

    def _active(self, state: Mapping[str, Any] | None) -> frozenset[str]:
        return promoted_names(state, self.catalog_hash, self.max_active)

    def _filter(self, request: ModelRequest) -> ModelRequest:
        from deerflow_nb.tools.tool_search import tool_name_of

        hidden = self.deferred_names - self._active(request.state)
        if not hidden:
            return request
        return request.override(tools=[t for t in request.tools if tool_name_of(t) not in hidden])

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
                        ) -> ModelCallResult:
        """Hide the schemas of deferred tools that are not promoted."""
        return handler(self._filter(request))

    async def awrap_model_call(self, request: ModelRequest,
                               handler: Callable[[ModelRequest], Awaitable[ModelResponse]]) -> ModelCallResult:
        """Async twin of :meth:`wrap_model_call`."""
        return await handler(self._filter(request))

    def _refusal(self, request: Any) -> Any:
        name = request.tool_call["name"]
        if name not in self.deferred_names or name in self._active(getattr(request, "state", None)):
            return None
        return tool_error(request, f"Error: {name} is a deferred tool and its schema is not loaded. Call "
                          f'{TOOL_SEARCH_NAME} with query "select:{name}" first, then call {name}.',
                          error_type="tool_not_loaded", recoverable_by_model=True,
                          recommended_next_action=f"call {TOOL_SEARCH_NAME}")
