"""``extensions_config.json``: MCP servers and skill enabled states.

Path order: explicit path > ``DEER_FLOW_EXTENSIONS_CONFIG_PATH`` >
``./extensions_config.json`` > ``../extensions_config.json``. The file is optional
only in search mode; an explicit path or the environment variable naming a missing
file raises :class:`FileNotFoundError`.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from deerflow_nb.config.loader import format_loc, resolve_env_values
from deerflow_nb.errors import ConfigError
from deerflow_nb.utils.files import atomic_write_text

__all__ = [
    "EXTENSIONS_PATH_ENV",
    "ExtensionsConfig",
    "McpOAuthConfig",
    "McpRoutingConfig",
    "McpServerConfig",
    "McpToolOverride",
    "SkillStateConfig",
    "load_extensions_config",
    "resolve_extensions_path",
    "save_extensions_config",
]

EXTENSIONS_PATH_ENV = "DEER_FLOW_EXTENSIONS_CONFIG_PATH"
logger = logging.getLogger(__name__)


class McpRoutingConfig(BaseModel):
    """Soft routing hints: when a request mentions a keyword, prefer this server's (or tool's) tools.

    ``mode: prefer`` adds a ``<mcp_routing_hints>`` prompt section; with ``tool_search.enabled`` the
    matching deferred tools are also promoted (bound) before the model call. It never disables tools.
    """

    model_config = ConfigDict(extra="forbid")

    mode: Literal["off", "prefer"] = "off"
    priority: int = Field(default=0, description="Higher first among matching tools; clamped to 0..100.")
    keywords: list[str] = Field(default_factory=list, description="Words or phrases of requests this tool fits "
                                "(case-insensitive substring match on the user's message).")

    @field_validator("priority")
    @classmethod
    def _clamp_priority(cls, value: int) -> int:
        if not 0 <= value <= 100:
            logger.warning("MCP routing priority %s clamped to 0..100", value)
        return min(max(value, 0), 100)

    @field_validator("keywords")
    @classmethod
    def _strip_keywords(cls, value: list[str]) -> list[str]:
        return [keyword.strip() for keyword in value if keyword.strip()]


class McpToolOverride(BaseModel):
    """Per-tool settings of one server, keyed by the tool's MCP name."""

    model_config = ConfigDict(extra="allow")

    routing: McpRoutingConfig | None = None


class McpOAuthConfig(BaseModel):
    """OAuth for an SSE / HTTP server: a token from ``token_url``, sent as ``Authorization``, refreshed.

    The token is fetched before the first request, fetched again ``refresh_skew_seconds`` before it
    expires, and once more when the server answers 401 (then the request is retried once).
    """

    model_config = ConfigDict(extra="allow")

    enabled: bool = True
    token_url: str = Field(min_length=1, description="The OAuth token endpoint.")
    grant_type: Literal["client_credentials", "refresh_token"] = "client_credentials"
    client_id: str | None = None
    client_secret: str | None = None
    refresh_token: str | None = Field(default=None, description="For grant_type refresh_token; a rotated "
                                      "refresh token in a response replaces it (in memory).")
    scope: str | None = None
    audience: str | None = None
    token_field: str = "access_token"
    token_type_field: str = "token_type"
    expires_in_field: str = "expires_in"
    default_token_type: str = "Bearer"
    refresh_skew_seconds: float = Field(default=60, ge=0)
    extra_token_params: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _grant_needs(self) -> McpOAuthConfig:
        if self.grant_type == "refresh_token" and not self.refresh_token:
            raise ValueError("refresh_token is required for grant_type refresh_token")
        return self


class McpServerConfig(BaseModel):
    """One MCP server (stdio, SSE or streamable HTTP)."""

    model_config = ConfigDict(extra="allow")

    enabled: bool = True
    type: Literal["stdio", "sse", "http", "streamable_http"] = "stdio"
    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    oauth: McpOAuthConfig | None = Field(default=None, description="OAuth token flow (SSE / HTTP servers).")
    description: str | None = None
    tool_call_timeout: float | None = None
    routing: McpRoutingConfig | None = Field(default=None, description="Routing hints for all of its tools.")
    tools: dict[str, McpToolOverride] | None = Field(default=None, description="Per-tool overrides by MCP name.")

    def effective_routing(self, tool_name: str) -> McpRoutingConfig:
        """The server's routing with the fields the tool's override sets on top."""
        merged = (self.routing or McpRoutingConfig()).model_dump()
        override = (self.tools or {}).get(tool_name)
        if override is not None and override.routing is not None:
            merged.update(override.routing.model_dump(exclude_unset=True))
        return McpRoutingConfig.model_validate(merged)


class SkillStateConfig(BaseModel):
    """Whether one skill is enabled."""

    model_config = ConfigDict(extra="allow")

    enabled: bool = True


class ExtensionsConfig(BaseModel):
    """The whole ``extensions_config.json``."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    mcp_servers: dict[str, McpServerConfig] = Field(default_factory=dict, alias="mcpServers")
    skills: dict[str, SkillStateConfig] = Field(default_factory=dict)
    middlewares: list[str] = Field(default_factory=list)

    def to_file_dict(self) -> dict[str, Any]:
        """The JSON document as it is written to disk (``mcpServers`` spelling)."""
        return self.model_dump(by_alias=True, exclude_none=True)


def resolve_extensions_path(path: str | os.PathLike[str] | None = None) -> Path | None:
    """Return the extensions file, ``None`` when search mode finds nothing."""
    if path is not None:
        explicit = Path(path).expanduser()
        if not explicit.is_file():
            raise FileNotFoundError(f"extensions config not found: {explicit}")
        return explicit.resolve()
    env = os.environ.get(EXTENSIONS_PATH_ENV)
    if env:
        from_env = Path(env).expanduser()
        if not from_env.is_file():
            raise FileNotFoundError(f"extensions config named by {EXTENSIONS_PATH_ENV} not found: {from_env}")
        return from_env.resolve()
    for candidate in (Path.cwd() / "extensions_config.json", Path.cwd().parent / "extensions_config.json"):
        if candidate.is_file():
            return candidate.resolve()
    return None


def load_extensions_config(path: str | os.PathLike[str] | None = None) -> ExtensionsConfig:
    """Load and validate the extensions file; an absent optional file gives an empty config.

    ``$VAR`` values are resolved from the environment.
    """
    resolved = resolve_extensions_path(path)
    if resolved is None:
        return ExtensionsConfig()
    source = str(resolved)
    try:
        raw = json.loads(resolved.read_text(encoding="utf-8") or "{}")
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{source}: invalid JSON: {exc}", path=source) from exc
    if not isinstance(raw, dict):
        raise ConfigError(f"{source}: the top level must be an object", path=source)
    raw = resolve_env_values(raw, source=source)
    try:
        return ExtensionsConfig.model_validate(raw)
    except ValidationError as exc:
        key = format_loc(exc.errors()[0]["loc"])
        raise ConfigError(f"{source}: invalid extensions config at {key}: {exc.errors()[0]['msg']}",
                          key=key, path=source) from exc


def save_extensions_config(config: ExtensionsConfig, path: str | os.PathLike[str]) -> Path:
    """Write ``config`` atomically (temporary file + rename) and return the path."""
    target = Path(path)
    atomic_write_text(target, json.dumps(config.to_file_dict(), indent=2, sort_keys=True) + "\n")
    return target
