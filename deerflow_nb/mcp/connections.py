"""Turn ``mcpServers`` entries into ``langchain-mcp-adapters`` connection dicts.

stdio servers run with the thread's workspace as working directory (and their
temporary files under ``workspace/.mcp/tmp``) unless the entry sets ``cwd`` or the
temp variables itself, so files a server writes land where the agent can see them.
SSE and HTTP servers are remote: no filesystem preparation.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from deerflow_nb.config.extensions import McpServerConfig
from deerflow_nb.errors import ConfigError

__all__ = ["TEMP_VARS", "connection_for", "is_stdio", "mcp_tmp_dir"]

TEMP_VARS = ("TMPDIR", "TMP", "TEMP")


def is_stdio(server: McpServerConfig) -> bool:
    """Whether the server is a local subprocess (per-thread sessions) rather than a remote one."""
    return server.type == "stdio"


def mcp_tmp_dir(workspace: Path) -> Path:
    """Where a stdio server's temporary files go inside a thread workspace."""
    return workspace / ".mcp" / "tmp"


def connection_for(name: str, server: McpServerConfig, *, workspace: Path | None = None,
                   auth: Any = None) -> dict[str, Any]:
    """The connection dict for ``server``; ``workspace`` is the thread workspace (stdio only).

    ``auth`` (SSE / HTTP): an ``httpx.Auth`` for the server's HTTP client, e.g. its
    :class:`~deerflow_nb.mcp.oauth.McpOAuth`.

    Raises:
        ConfigError: a required field is missing; the key names the server and field.
    """
    if server.type == "stdio":
        if not server.command:
            raise ConfigError(f"mcpServers.{name}.command is required for a stdio server",
                              key=f"mcpServers.{name}.command")
        env = dict(server.env)
        cwd: str | None = server.cwd
        if workspace is not None:
            if cwd is None:
                cwd = str(workspace)
            if not any(var in env for var in TEMP_VARS):
                tmp = mcp_tmp_dir(workspace)
                tmp.mkdir(parents=True, exist_ok=True)
                env.update({var: str(tmp) for var in TEMP_VARS})
        if cwd is not None:
            cwd = os.path.expanduser(cwd)
        # An empty env still gets the MCP SDK's safe default variables (PATH, HOME, ...);
        # the notebook's own secrets are never passed through.
        return {"transport": "stdio", "command": server.command, "args": list(server.args),
                "env": env or None, "cwd": cwd}
    if not server.url:
        raise ConfigError(f"mcpServers.{name}.url is required for a {server.type} server",
                          key=f"mcpServers.{name}.url")
    transport = "sse" if server.type == "sse" else "streamable_http"
    connection: dict[str, Any] = {"transport": transport, "url": server.url}
    if server.headers:
        connection["headers"] = dict(server.headers)
    if auth is not None:
        connection["auth"] = auth
    return connection
