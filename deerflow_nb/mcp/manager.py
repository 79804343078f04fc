"""``agent.mcp``: the MCP configuration, the cached tools and the sessions behind them.

Tools are discovered once and reused while the resolved ``extensions_config.json``
keeps the same path and content (a SHA-256 signature, so same-second edits and
restored backups are noticed too). Editing the file, or calling :meth:`McpManager.update`,
rebuilds the agent with the new tools and closes the sessions of the old config.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import hashlib
import json
import logging
import threading
from collections.abc import Callable, Coroutine, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from deerflow_nb.agent.plugins import AgentPlugin
from deerflow_nb.config.extensions import (
    ExtensionsConfig,
    McpServerConfig,
    load_extensions_config,
    resolve_extensions_path,
    save_extensions_config,
)
from deerflow_nb.config.loader import format_loc
from deerflow_nb.errors import ConfigError, UsageError
from deerflow_nb.mcp.schemas import McpConfigResponse, McpToolInfo, McpToolsResponse
from deerflow_nb.mcp.sessions import McpSessionPool
from deerflow_nb.mcp.tools import McpToolSet, discover_tools

if TYPE_CHECKING:
    from langchain_core.tools import BaseTool

    from deerflow_nb.agent import AgentOptions
    from deerflow_nb.config import AppConfig
    from deerflow_nb.context import RunContext

__all__ = ["McpManager", "McpPlugin", "config_signature"]

logger = logging.getLogger(__name__)
Signature = tuple[str, str] | None


def config_signature(path: Path | None) -> Signature:
    """``(resolved path, sha256 of the content)``, or ``None`` without a file."""
    if path is None:
        return None
    try:
        return str(path), hashlib.sha256(path.read_bytes()).hexdigest()
    except FileNotFoundError:
        return None


def _run_fresh(coro: Coroutine[Any, Any, Any]) -> Any:
    # Discovery only uses short-lived sessions, so any loop will do: a private one in a
    # helper thread works whether or not the caller's thread is running a loop.
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="deerflow-mcp") as pool:
        return pool.submit(asyncio.run, coro).result()


class McpManager:
    """MCP servers of one client: config access, tool cache and session pool.

    Args:
        probe_dir: working directory of stdio servers while their tools are listed.
        invalidate: called after the config changed (drops the compiled agent graphs).
        run: runs a coroutine on the client's loop from sync code (``BackgroundLoop.run``).
    """

    def __init__(self, probe_dir: Path, invalidate: Callable[[], None] = lambda: None,
                 run: Callable[..., Any] | None = None, path: str | Path | None = None) -> None:
        self.probe_dir = probe_dir
        self._invalidate = invalidate
        self._run = run
        self._explicit = Path(path) if path is not None else None
        self.pool = McpSessionPool()
        self._lock = threading.Lock()
        self._loaded: Signature | bool = False  # False: never loaded
        self._toolset = McpToolSet()

    # -- config file ---------------------------------------------------------------------
    def path(self) -> Path | None:
        """The extensions file in use (``None`` when there is none yet)."""
        try:
            return resolve_extensions_path(self._explicit)
        except FileNotFoundError:
            return None

    def signature(self) -> Signature:
        """The signature of the current file (changes when its path or content changes)."""
        return config_signature(self.path())

    def _raw(self) -> dict[str, Any]:
        path = self.path()
        if path is None:
            return {}
        try:
            raw = json.loads(path.read_text(encoding="utf-8") or "{}")
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{path}: invalid JSON: {exc}", path=str(path)) from exc
        if not isinstance(raw, dict):
            raise ConfigError(f"{path}: the top level must be an object", path=str(path))
        return raw

    def get_mcp_config(self) -> dict[str, Any]:
        """``{"mcp_servers": {...}}`` as ``GET /mcp/config`` returns it (``$VAR`` values unresolved)."""
        servers = _validate_servers(self._raw().get("mcpServers") or {}, "mcpServers")
        return McpConfigResponse(mcp_servers=servers).model_dump(mode="json")

    def config(self) -> dict[str, dict[str, Any]]:
        """The configured servers by name."""
        return self.get_mcp_config()["mcp_servers"]

    def _write(self, servers: Mapping[str, Any]) -> dict[str, Any]:
        validated = _validate_servers(servers, "mcp_servers")
        raw = self._raw()
        raw["mcpServers"] = {n: s.model_dump(exclude_none=True) for n, s in validated.items()}
        target = self.path() or self._explicit or Path.cwd() / "extensions_config.json"
        # Built from the unresolved file, so $VAR references are written back as they were.
        save_extensions_config(ExtensionsConfig.model_validate(raw), target)
        self._invalidate()
        return self.get_mcp_config()

    async def aupdate_mcp_config(self, servers: Mapping[str, Any]) -> dict[str, Any]:
        """Async twin of :meth:`update_mcp_config`."""
        result = await asyncio.to_thread(self._write, servers)
        await self.pool.close()
        return result

    def update_mcp_config(self, servers: Mapping[str, Any]) -> dict[str, Any]:
        """Replace all servers, write the file atomically, rebuild the agent; returns the new config."""
        if self._run is None:
            return self._write(servers)
        return self._run(self.aupdate_mcp_config(servers), method="mcp.update")

    def update(self, servers: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
        """Replace all servers (see :meth:`update_mcp_config`); returns the servers by name."""
        return self.update_mcp_config(servers)["mcp_servers"]

    # -- tools ---------------------------------------------------------------------------
    def load_tools(self, reserved: tuple[str, ...] = ()) -> list[BaseTool]:
        """The tools of the enabled servers, discovered again only when the file changed."""
        with self._lock:
            signature = self.signature()
            if self._loaded is False or signature != self._loaded:
                self._loaded = signature
                try:
                    config = load_extensions_config(self.path()) if signature else ExtensionsConfig()
                except ConfigError as exc:  # a broken file must not break every run: no MCP tools
                    logger.warning("MCP tools unavailable: %s", exc)
                    self._toolset = McpToolSet(errors={"extensions_config": str(exc)})
                    return []
                generation = signature[1][:12] if signature else ""
                self._toolset = (_run_fresh(discover_tools(config, self.pool, self.probe_dir, reserved,
                                                           generation)) if config.mcp_servers else McpToolSet())
            return list(self._toolset.tools)

    def tools(self) -> list[dict[str, Any]]:
        """``[{"name", "server", "description"}]`` of the loaded tools."""
        return self.list_tools()["tools"]

    def list_tools(self) -> dict[str, Any]:
        """``{"tools": [...], "errors": {server: reason}}`` as ``GET /mcp/tools`` returns it."""
        tools = self.load_tools()
        infos = [McpToolInfo(name=t.name, server=str((t.metadata or {}).get("mcp_server", "")),
                             description=t.description) for t in tools]
        return McpToolsResponse(tools=infos, errors=dict(self._toolset.errors)).model_dump(mode="json")

    @property
    def errors(self) -> dict[str, str]:
        """Servers that failed at the last discovery, with the reason."""
        return dict(self._toolset.errors)

    def reload(self) -> None:
        """Forget the cached tools; the next run discovers them again."""
        with self._lock:
            self._loaded = False
        self._invalidate()

    async def close_stale(self) -> None:
        """Close sessions opened under an older config."""
        current = self._loaded[1][:12] if isinstance(self._loaded, tuple) else ""
        await self.pool.close(lambda key: key[-1] != current)

    async def aclose(self) -> None:
        """Close every session (stops stdio server processes)."""
        await self.pool.close()


def _validate_servers(servers: Any, where: str) -> dict[str, McpServerConfig]:
    if not isinstance(servers, Mapping):
        raise UsageError(f"{where} must be a mapping of server name -> server config")
    out: dict[str, McpServerConfig] = {}
    for name, server in servers.items():
        if not isinstance(name, str) or not name.strip():
            raise UsageError(f"{where}: server names must be non-empty strings, got {name!r}")
        try:
            out[name] = server if isinstance(server, McpServerConfig) else McpServerConfig.model_validate(server)
        except ValidationError as exc:
            error = exc.errors()[0]
            key = f"{where}.{name}" + (f".{format_loc(error['loc'])}" if error["loc"] else "")
            raise ConfigError(f"invalid MCP server config at {key}: {error['msg']}", key=key) from exc
    return out


class McpPlugin(AgentPlugin):
    """Adds the MCP tools to the lead agent (and, through the tool list, to subagents)."""

    def __init__(self, manager: McpManager) -> None:
        self.manager = manager

    def cache_key(self) -> Any:
        """The config signature: a changed file rebuilds the agent with the new tools."""
        return self.manager.signature()

    def tools(self, config: AppConfig, options: AgentOptions) -> list[BaseTool]:
        """The MCP tools (discovered on first use and after config changes)."""
        return self.manager.load_tools()

    async def prepare_run(self, context: RunContext) -> None:
        """Close sessions left over from an older config."""
        await self.manager.close_stale()

    async def aclose(self) -> None:
        """Stop the MCP server processes."""
        await self.manager.aclose()
