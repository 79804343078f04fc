"""Deferred MCP tools: ``tool_search`` binds a tool's schema only once the model looks for it.

With ``tool_search.enabled`` a large MCP server no longer puts every tool schema into
every model call. The agent is built with all its tools (so any of them can run), but
the MCP ones are *deferred*: the system prompt lists their names in
``<available-deferred-tools>``, the model request carries only the ``tool_search`` tool
and the tools promoted so far, and a call to a deferred tool that was not promoted is
refused with a hint to search first.

A promotion is recorded in the thread state (``promoted``: ``{"catalog_hash", "names"}``),
so it holds for the following model calls of the run and of later runs on the thread,
until the MCP tool set changes (another catalog hash drops the old names). Two things
promote: ``tool_search`` itself, and MCP routing (``routing.mode: prefer`` with keywords
in ``extensions_config.json``), which binds up to ``tool_search.auto_promote_top_k`` of
the matching tools before the model call when the user's latest message mentions one of
their keywords.

Search ranks tool names and descriptions with SQLite FTS5 (BM25, Porter stemming, the
same engine as memory search), falling back to counting matched words where SQLite has
no FTS5. Query forms, as in DeerFlow: ``select:a,b`` (these exact names), ``+slack send``
(``slack`` must be in the name; ranked by the rest) and plain keywords.
"""

from __future__ import annotations

import hashlib
import html
import json
import re
import sqlite3
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any

from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool, InjectedToolCallId, StructuredTool
from langchain_core.utils.function_calling import convert_to_openai_function
from langgraph.types import Command
from pydantic import BaseModel, Field

from deerflow_nb.memory.index import query_terms
from deerflow_nb.tools.meta import normalize_tool_result

if TYPE_CHECKING:
    from langchain.agents.middleware import AgentMiddleware

    from deerflow_nb.config.schema import ToolSearchConfig

__all__ = [
    "ROUTING_METADATA_KEY",
    "TOOL_SEARCH_NAME",
    "DeferredToolSetup",
    "ToolCatalog",
    "assemble_deferred_tools",
    "deferred_tools_prompt_section",
    "is_mcp_tool",
    "mcp_routing_hints_prompt_section",
    "routing_of",
    "tool_name_of",
    "tool_search_tool",
]

TOOL_SEARCH_NAME = "tool_search"
#: ``BaseTool.metadata`` key of an MCP tool's effective routing (server routing + tool override).
ROUTING_METADATA_KEY = "deerflow_mcp_routing"

_CAMEL_RE = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_SPLIT_RE = re.compile(r"[^0-9A-Za-z]+")


def is_mcp_tool(tool: Any) -> bool:
    """Whether ``tool`` came from an MCP server (those are the ones deferred)."""
    return isinstance(tool, BaseTool) and (tool.metadata or {}).get("deerflow_source") == "mcp"


def routing_of(tool: BaseTool) -> dict[str, Any] | None:
    """The tool's effective MCP routing (``mode``, ``priority``, ``keywords``), if any."""
    routing = (tool.metadata or {}).get(ROUTING_METADATA_KEY)
    return routing if isinstance(routing, dict) else None


def _name_words(name: str) -> str:
    return " ".join(w for w in _SPLIT_RE.split(_CAMEL_RE.sub(" ", name)) if w)


def tool_name_of(tool: Any) -> str:
    """The name of a tool, whether a ``BaseTool`` or an OpenAI-format schema dict."""
    if isinstance(tool, BaseTool):
        return tool.name
    if isinstance(tool, dict):
        function = tool.get("function")
        return str(function.get("name") if isinstance(function, dict) else tool.get("name", ""))
    return str(getattr(tool, "name", ""))


class ToolCatalog:
    """The deferred tools of one agent build, searchable by name and description."""

    def __init__(self, tools: Sequence[BaseTool]) -> None:
        self.tools = tuple(sorted(tools, key=lambda t: t.name))
        self.by_name = {t.name: t for t in self.tools}
        self.names = frozenset(self.by_name)
        canonical = [{"name": t.name, "schema": convert_to_openai_function(t)} for t in self.tools]
        blob = json.dumps(canonical, sort_keys=True, ensure_ascii=False, default=str)
        #: Scopes promotions: another set of tools (or schemas) is another catalog.
        self.hash = hashlib.sha256(blob.encode()).hexdigest()[:16]
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(":memory:", check_same_thread=False)
        try:
            self._conn.execute("CREATE VIRTUAL TABLE tools USING fts5(name UNINDEXED, words, description, "
                               "tokenize='porter unicode61 remove_diacritics 2')")
            self._conn.executemany("INSERT INTO tools(name, words, description) VALUES (?, ?, ?)",
                                   [(t.name, _name_words(t.name), t.description or "") for t in self.tools])
            self.fts = True
        except sqlite3.OperationalError:  # SQLite built without FTS5
            self.fts = False

    def _ranked(self, terms: list[str], candidates: Iterable[BaseTool] | None = None) -> list[BaseTool]:
        """Tools matching any of ``terms``, best first (name words weigh four times the description)."""
        pool = list(self.tools if candidates is None else candidates)
        if not terms or not pool:
            return []
        allowed = {t.name for t in pool}
        if self.fts:
            match = " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)
            try:
                with self._lock:
                    rows = self._conn.execute(
                        "SELECT name FROM tools WHERE tools MATCH ? ORDER BY bm25(tools, 0.0, 4.0, 1.0), name",
                        (match,)).fetchall()
                found = [self.by_name[name] for (name,) in rows if name in allowed]
                if found:
                    return found
            except sqlite3.OperationalError:
                pass
        scored = []
        for tool in pool:
            words, description = _name_words(tool.name).casefold(), (tool.description or "").casefold()
            score = sum(2 * (term in words) + (term in description) for term in terms)
            if score:
                scored.append((-score, tool.name, tool))
        return [tool for *_, tool in sorted(scored, key=lambda item: (item[0], item[1]))]

    def search(self, query: str, limit: int = 5) -> list[BaseTool]:
        """The tools a ``tool_search`` query names or finds, at most ``limit``."""
        query = query.strip()
        if query.startswith("select:"):
            wanted = [n.strip() for n in query[len("select:"):].split(",") if n.strip()]
            return [self.by_name[n] for n in dict.fromkeys(wanted) if n in self.by_name][:limit]
        if query.startswith("+"):
            required, _, rest = query[1:].strip().partition(" ")
            if not required:
                return []
            needle = required.casefold()
            candidates = [t for t in self.tools if needle in t.name.casefold()]
            ranked = self._ranked(query_terms(rest), candidates) if rest.strip() else []
            return (ranked + [t for t in candidates if t not in ranked])[:limit]
        exact = self.by_name.get(query)
        ranked = self._ranked(query_terms(query))
        if exact is not None:
            ranked = [exact, *(t for t in ranked if t is not exact)]
        return ranked[:limit]

    def close(self) -> None:
        """Release the index."""
        with self._lock:
            self._conn.close()


class _ToolSearchArgs(BaseModel):
    """Arguments of ``tool_search`` (the call id is injected, not shown to the model)."""

    query: str = Field(min_length=1, max_length=500, description='Keywords ("create issue"), "select:name1,name2" '
                       'for exact names, or "+word more words" to require word in the tool name.')
    tool_call_id: Annotated[str | None, InjectedToolCallId] = None


_DESCRIPTION = (
    "Load the full schemas of deferred tools so you can call them. The tools listed in "
    "<available-deferred-tools> exist but cannot be called until this tool returns their schema; "
    "afterwards they are callable. Query forms: \"select:name1,name2\" loads those exact tools; "
    "\"github issue\" searches names and descriptions and returns the best matches; "
    "\"+slack send\" requires \"slack\" in the tool name and ranks by the remaining words."
)


def tool_search_tool(catalog: ToolCatalog, max_results: int = 5) -> BaseTool:
    """The ``tool_search`` tool over ``catalog``; its result promotes what it found."""

    def search(query: str, tool_call_id: Annotated[str | None, InjectedToolCallId] = None) -> Command | str:
        matched = catalog.search(query, max_results)
        if matched:
            content = json.dumps([convert_to_openai_function(t) for t in matched], indent=2, ensure_ascii=False)
        else:
            content = (f"No deferred tool matches {query!r}. Try other keywords, or select: with a name from "
                       "<available-deferred-tools>.")
        if not tool_call_id:  # called directly, not by the model
            return content
        message = normalize_tool_result(ToolMessage(content=content, tool_call_id=tool_call_id,
                                                    name=TOOL_SEARCH_NAME))
        update: dict[str, Any] = {"messages": [message]}
        if matched:
            update["promoted"] = {"catalog_hash": catalog.hash, "names": [t.name for t in matched]}
        return Command(update=update)

    async def asearch(query: str, tool_call_id: Annotated[str | None, InjectedToolCallId] = None) -> Command | str:
        return search(query, tool_call_id)  # an in-memory index: microseconds, no I/O

    return StructuredTool.from_function(func=search, coroutine=asearch, name=TOOL_SEARCH_NAME,
                                        description=_DESCRIPTION, args_schema=_ToolSearchArgs,
                                        metadata={"deerflow_source": "builtin"})


@dataclass
class DeferredToolSetup:
    """What deferral adds to one agent build (empty when disabled or without MCP tools)."""

    catalog: ToolCatalog | None = None
    routing_index: dict[str, tuple[int, tuple[str, ...]]] = field(default_factory=dict)
    top_k: int = 3
    max_prompt_names: int = 50
    max_active_tools: int = 20

    @property
    def deferred_names(self) -> frozenset[str]:
        """Names hidden from the model until promoted."""
        return self.catalog.names if self.catalog is not None else frozenset()

    def prompt_section(self) -> str | None:
        """``<available-deferred-tools>``, or ``None`` without deferred tools."""
        if self.catalog is None:
            return None
        return deferred_tools_prompt_section(self.catalog.names, self.max_prompt_names)

    def middlewares(self) -> list[AgentMiddleware]:
        """Routing (auto-promotion) then the deferred-schema filter; none without deferred tools."""
        if self.catalog is None:
            return []
        from deerflow_nb.agent.middlewares.deferred_tools import DeferredToolFilterMiddleware, McpRoutingMiddleware

        chain: list[AgentMiddleware] = []
        if self.routing_index:
            chain.append(McpRoutingMiddleware(self.routing_index, self.catalog.hash, self.top_k))
        chain.append(DeferredToolFilterMiddleware(self.catalog.names, self.catalog.hash, self.max_active_tools))
        return chain


def _routing_index(tools: Iterable[BaseTool]) -> dict[str, tuple[int, tuple[str, ...]]]:
    index: dict[str, tuple[int, tuple[str, ...]]] = {}
    for tool in tools:
        routing = routing_of(tool)
        if routing is None or routing.get("mode") != "prefer":
            continue
        keywords = tuple(str(k).strip() for k in routing.get("keywords") or [] if str(k).strip())
        if keywords:
            index[tool.name] = (int(routing.get("priority") or 0), keywords)
    return index


def assemble_deferred_tools(tools: Sequence[BaseTool], config: ToolSearchConfig
                            ) -> tuple[list[BaseTool], DeferredToolSetup]:
    """The tools to build the agent with (``tool_search`` added) and the deferral setup.

    Every tool stays in the agent (a promoted tool must be able to run); which ones the
    model sees is decided per model call by the setup's middlewares.
    """
    deferred = [t for t in tools if is_mcp_tool(t)]
    if not config.enabled or not deferred:
        return list(tools), DeferredToolSetup()
    catalog = ToolCatalog(deferred)
    setup = DeferredToolSetup(catalog=catalog, routing_index=_routing_index(deferred),
                              top_k=config.auto_promote_top_k, max_prompt_names=config.max_prompt_names,
                              max_active_tools=config.max_active_tools)
    kept = [t for t in tools if t.name != TOOL_SEARCH_NAME]
    return [*kept, tool_search_tool(catalog, config.max_search_results)], setup


def deferred_tools_prompt_section(names: Iterable[str], limit: int = 50) -> str:
    """The system-prompt block naming the deferred tools (at most ``limit`` names)."""
    ordered = sorted(names)
    shown = "\n".join(html.escape(n, quote=False) for n in ordered[:limit])
    more = len(ordered) - limit
    tail = f"\n... and {more} more: find them with tool_search" if more > 0 else ""
    return ("<available-deferred-tools>\nThese tools exist but their schemas are not loaded: call tool_search "
            f"to load one before calling it.\n{shown}{tail}\n</available-deferred-tools>")


def _keyword_list(keywords: Sequence[str]) -> str:
    return keywords[0] if len(keywords) == 1 else f"{', '.join(keywords[:-1])}, or {keywords[-1]}"


def mcp_routing_hints_prompt_section(tools: Iterable[BaseTool], deferred_names: frozenset[str] = frozenset(),
                                     limit: int = 50) -> str | None:
    """``<mcp_routing_hints>`` for MCP tools with ``routing.mode: prefer`` and keywords, else ``None``.

    A hint for a deferred tool tells the model to load it with ``tool_search`` first.
    """
    hints = sorted(((-priority, name, keywords) for name, (priority, keywords) in _routing_index(tools).items()))
    if not hints:
        return None
    lines = ["<mcp_routing_hints>"]
    for _, name, keywords in hints[:limit]:
        escaped = html.escape(name, quote=False)
        lines.append(f"When the user's request involves "
                     f"{_keyword_list([html.escape(k, quote=False) for k in keywords])}:")
        lines.append(f"  use `tool_search` to load `{escaped}`, then prefer that MCP tool." if name in deferred_names
                     else f"  prefer the `{escaped}` tool.")
    lines.append("</mcp_routing_hints>")
    return "\n".join(lines)
