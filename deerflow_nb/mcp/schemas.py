"""Response models of the MCP routes; the client's dict methods are built from them."""

from __future__ import annotations

from pydantic import BaseModel, Field

from deerflow_nb.config.extensions import McpServerConfig

__all__ = ["McpConfigResponse", "McpConfigUpdateRequest", "McpReloadResponse", "McpToolInfo", "McpToolsResponse"]


class McpConfigResponse(BaseModel):
    """``GET /mcp/config`` and ``PUT /mcp/config``: the configured servers, ``$VAR`` values unresolved."""

    mcp_servers: dict[str, McpServerConfig] = Field(default_factory=dict)


class McpConfigUpdateRequest(BaseModel):
    """``PUT /mcp/config`` body: the complete new set of servers (it replaces the old one)."""

    mcp_servers: dict[str, McpServerConfig]


class McpToolInfo(BaseModel):
    """One tool the agent can call."""

    name: str
    server: str
    description: str = ""


class McpToolsResponse(BaseModel):
    """``GET /mcp/tools``: the loaded tools and the servers that failed to start."""

    tools: list[McpToolInfo] = Field(default_factory=list)
    errors: dict[str, str] = Field(default_factory=dict)


class McpReloadResponse(BaseModel):
    """``POST /mcp/reload``: the discovered tools were forgotten (the next run or listing discovers them)."""

    success: bool
