"""MCP tools for the agent: discovery, LangChain wrappers and result conversion.

Discovery opens a short-lived session per enabled server and lists its tools; the
wrappers created from that list call the server through the per-thread session pool
(:mod:`deerflow_nb.mcp.sessions`), so each call runs in the calling thread's workspace.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langchain_core.tools import BaseTool, StructuredTool, ToolException

from deerflow_nb.config.extensions import ExtensionsConfig, McpServerConfig
from deerflow_nb.config.paths import VIRTUAL_USER_DATA
from deerflow_nb.context import RunContext
from deerflow_nb.mcp.connections import connection_for, is_stdio
from deerflow_nb.mcp.sessions import McpSessionPool, SessionKey, open_session

if TYPE_CHECKING:  # the mcp package is optional and slow to import: load it on first use
    from mcp import types as mcp_types

__all__ = ["RESERVED_NAMES", "McpToolSet", "convert_result", "describe_error", "discover_tools", "make_mcp_tool",
           "oauth_for"]

logger = logging.getLogger(__name__)

_DISCOVERY_TIMEOUT = 60.0
#: Names a server's tools may not take: the built-ins keep theirs.
RESERVED_NAMES = frozenset({"bash", "ls", "glob", "grep", "read_file", "write_file", "str_replace",
                            "present_files", "ask_clarification", "view_image", "task", "tool_search"})


@dataclass
class McpToolSet:
    """What discovery found: the tools, and the servers that failed (with the reason)."""

    tools: list[BaseTool] = field(default_factory=list)
    errors: dict[str, str] = field(default_factory=dict)


def describe_error(exc: BaseException) -> str:
    """``Type: message`` of the first real failure inside (possibly nested) exception groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, TimeoutError) and not str(exc):
        return "TimeoutError: the server did not answer in time"
    return f"{type(exc).__name__}: {exc}"


def _run_context() -> RunContext | None:
    try:
        from langgraph.runtime import get_runtime

        context = get_runtime().context
    except Exception:  # called outside a graph run
        return None
    return context if isinstance(context, RunContext) else None


def _user_data(ctx: RunContext | None) -> Path | None:
    if ctx is None or ctx.paths is None or not ctx.thread_id:
        return None
    return ctx.paths.user_data_dir(ctx.user_id, ctx.thread_id)


def _to_virtual(text: str, user_data: Path | None) -> str:
    """Host paths inside the thread's user-data tree become ``/mnt/user-data/...``."""
    if user_data is None:
        return text
    host = str(user_data)
    return text.replace("file://" + host, "file://" + VIRTUAL_USER_DATA).replace(host, VIRTUAL_USER_DATA)


def convert_result(result: mcp_types.CallToolResult, user_data: Path | None = None) -> str:
    """The model-facing text of a tool result; raises :class:`ToolException` for ``isError``."""
    from mcp import types as mcp_types

    parts: list[str] = []
    for block in result.content:
        if isinstance(block, mcp_types.TextContent):
            parts.append(block.text)
        elif isinstance(block, mcp_types.ImageContent | mcp_types.AudioContent):
            parts.append(f"[{block.type} content: {block.mimeType}]")
        elif isinstance(block, mcp_types.ResourceLink):
            parts.append(f"[resource: {block.uri}]")
        elif isinstance(block, mcp_types.EmbeddedResource):
            resource = block.resource
            text = getattr(resource, "text", None)
            parts.append(text if isinstance(text, str) else f"[resource: {resource.uri}]")
    if not parts and result.structuredContent is not None:
        parts.append(json.dumps(result.structuredContent, ensure_ascii=False, default=str))
    text = _to_virtual("\n".join(parts), user_data)
    if result.isError:
        raise ToolException(text or "the MCP tool reported an error")
    return text


def make_mcp_tool(server_name: str, server: McpServerConfig, spec: mcp_types.Tool, pool: McpSessionPool,
                  *, name: str | None = None, generation: str = "", auth: Any = None) -> BaseTool:
    """A LangChain tool calling ``spec`` on ``server_name`` in the current run's thread.

    Session keys end with ``generation`` (the config signature) so sessions of an older
    config can be told apart and closed. ``auth``: the server's ``httpx.Auth`` (OAuth), if any.
    """
    tool_name = name or spec.name

    async def call(**arguments: Any) -> str:
        ctx = _run_context()
        user_data = _user_data(ctx)
        if is_stdio(server):
            workspace = user_data / "workspace" if user_data is not None else None
            user, thread = (ctx.user_id, ctx.thread_id or "") if ctx else ("", "")
            key: SessionKey = ("stdio", user, thread, server_name, generation)
        else:
            workspace, key = None, ("remote", server_name, generation)

        def connection() -> dict[str, Any]:
            if workspace is not None:
                workspace.mkdir(parents=True, exist_ok=True)
            return connection_for(server_name, server, workspace=workspace, auth=auth)

        result = await pool.call_tool(key, connection, spec.name, arguments, timeout=server.tool_call_timeout)
        return convert_result(result, user_data)

    return StructuredTool(
        name=tool_name,
        description=spec.description or f"{spec.name} (MCP server {server_name})",
        args_schema=dict(spec.inputSchema or {"type": "object", "properties": {}}),
        coroutine=call,
        handle_tool_error=False,  # ToolErrorHandlingMiddleware turns it into an error result
        metadata={"deerflow_source": "mcp", "mcp_server": server_name, "mcp_tool": spec.name,
                  # routing as configured for the original MCP name, whatever the tool is called here
                  "deerflow_mcp_routing": server.effective_routing(spec.name).model_dump()},
    )


def oauth_for(name: str, server: McpServerConfig, state_dir: Path | None = None) -> Any:
    """The server's :class:`~deerflow_nb.mcp.oauth.McpOAuth`, or ``None`` (no OAuth, disabled, or stdio).

    ``state_dir`` keeps rotated refresh tokens across restarts.
    """
    if server.oauth is None or not server.oauth.enabled or is_stdio(server):
        return None
    from deerflow_nb.mcp.oauth import McpOAuth

    return McpOAuth(name, server.oauth, state_dir=state_dir)


async def _list_tools(name: str, server: McpServerConfig, probe_dir: Path, auth: Any = None
                      ) -> list[mcp_types.Tool]:
    connection = connection_for(name, server, auth=auth)
    if connection["transport"] == "stdio" and connection.get("cwd") is None:
        probe_dir.mkdir(parents=True, exist_ok=True)
        connection["cwd"] = str(probe_dir)
    found: list[mcp_types.Tool] = []
    async with open_session(connection) as session:
        await session.initialize()
        cursor: str | None = None
        while True:
            page = await session.list_tools(cursor=cursor)
            found += page.tools
            cursor = page.nextCursor
            if not cursor:
                return found


async def discover_tools(config: ExtensionsConfig, pool: McpSessionPool, probe_dir: Path,
                         reserved: Iterable[str] = (), generation: str = "") -> McpToolSet:
    """List the tools of every enabled server; a failing server is reported, not fatal.

    A tool whose name is taken (a built-in, or another server's tool) is renamed
    ``{server}_{name}``.
    """
    servers = {n: s for n, s in config.mcp_servers.items() if s.enabled}
    names = list(servers)
    if names and importlib.util.find_spec("langchain_mcp_adapters") is None:
        reason = "MCP support is not installed: pip install 'deerflow-nb[mcp]'"
        logger.warning(reason)
        return McpToolSet(errors=dict.fromkeys(names, reason))
    # one token holder per server for discovery and all its sessions under this config
    auths = {n: oauth_for(n, servers[n], probe_dir / "oauth") for n in names}
    results = await asyncio.gather(
        *(asyncio.wait_for(_list_tools(n, servers[n], probe_dir, auths[n]), _DISCOVERY_TIMEOUT) for n in names),
        return_exceptions=True,
    )
    found = McpToolSet()
    taken = set(RESERVED_NAMES) | set(reserved)
    for server_name, listed in zip(names, results, strict=True):
        if isinstance(listed, BaseException):
            message = describe_error(listed)
            logger.warning("MCP server %r is unavailable: %s", server_name, message)
            found.errors[server_name] = message
            continue
        for spec in listed:
            tool_name = spec.name if spec.name not in taken else f"{server_name}_{spec.name}"
            if tool_name in taken:
                logger.warning("MCP tool %r of server %r skipped: the name is taken", spec.name, server_name)
                continue
            taken.add(tool_name)
            found.tools.append(make_mcp_tool(server_name, servers[server_name], spec, pool, name=tool_name,
                                             generation=generation, auth=auths[server_name]))
    return found
