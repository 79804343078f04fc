"""MCP servers from ``extensions_config.json``: tools for the agent, per-thread sessions, config API."""

from deerflow_nb.mcp.connections import connection_for
from deerflow_nb.mcp.manager import McpManager, McpPlugin, config_signature
from deerflow_nb.mcp.schemas import McpConfigResponse, McpConfigUpdateRequest, McpToolInfo, McpToolsResponse
from deerflow_nb.mcp.sessions import McpSessionPool
from deerflow_nb.mcp.tools import McpToolSet, convert_result, discover_tools, make_mcp_tool

__all__ = [
    "McpConfigResponse",
    "McpConfigUpdateRequest",
    "McpManager",
    "McpPlugin",
    "McpSessionPool",
    "McpToolInfo",
    "McpToolSet",
    "McpToolsResponse",
    "config_signature",
    "connection_for",
    "convert_result",
    "discover_tools",
    "make_mcp_tool",
]
