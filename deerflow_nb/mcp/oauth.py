"""OAuth tokens for SSE / HTTP MCP servers, as an ``httpx.Auth`` of the server's HTTP client.

``mcpServers.<name>.oauth`` names a token endpoint and a grant (``client_credentials`` or
``refresh_token``). :class:`McpOAuth` fetches a token before the first request, sends it
as ``Authorization: <token_type> <access_token>``, fetches a new one
``refresh_skew_seconds`` before the old one expires, and when the server still answers
401 it fetches a new token and retries that request once. A refresh token returned by the
endpoint replaces the configured one (in memory), so rotating refresh tokens keep working.

One instance serves discovery and every session of one server config; it works from any
event loop (its lock is per loop).
"""

from __future__ import annotations

import asyncio
import logging
import time
import weakref
from collections.abc import AsyncGenerator, Callable
from typing import Any

import httpx

from deerflow_nb.config.extensions import McpOAuthConfig

__all__ = ["McpOAuth", "OAuthTokenError"]

logger = logging.getLogger(__name__)

_TOKEN_TIMEOUT = 30.0


class OAuthTokenError(RuntimeError):
    """The token endpoint refused or answered something that is not a token."""


class McpOAuth(httpx.Auth):
    """Bearer tokens from ``config.token_url`` for the requests of one MCP server."""

    requires_request_body = True  # read before the flow, so a request can be sent again after a 401

    def __init__(self, server_name: str, config: McpOAuthConfig, *,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.server_name = server_name
        self.config = config
        self._clock = clock
        self._refresh_token = config.refresh_token
        self._header: str | None = None
        self._expires_at: float | None = None
        #: Tokens fetched so far (a new token each time).
        self.fetches = 0
        self._locks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = weakref.WeakKeyDictionary()

    def _lock(self) -> asyncio.Lock:
        loop = asyncio.get_running_loop()
        lock = self._locks.get(loop)
        if lock is None:
            lock = self._locks[loop] = asyncio.Lock()
        return lock

    def _fresh(self) -> bool:
        if self._header is None:
            return False
        return self._expires_at is None or self._clock() < self._expires_at - self.config.refresh_skew_seconds

    def _form(self) -> dict[str, str]:
        config = self.config
        form: dict[str, str] = {"grant_type": config.grant_type}
        optional = {"client_id": config.client_id, "client_secret": config.client_secret, "scope": config.scope,
                    "audience": config.audience}
        if config.grant_type == "refresh_token":
            optional["refresh_token"] = self._refresh_token
        form.update({k: v for k, v in optional.items() if v})
        form.update(config.extra_token_params)
        return form

    async def _fetch(self) -> None:
        config = self.config
        where = f"MCP server {self.server_name!r}: token endpoint {config.token_url}"
        try:
            async with httpx.AsyncClient(timeout=_TOKEN_TIMEOUT) as client:
                response = await client.post(config.token_url, data=self._form(),
                                             headers={"Accept": "application/json"})
        except httpx.HTTPError as exc:
            raise OAuthTokenError(f"{where} unreachable: {type(exc).__name__}: {exc}") from exc
        if response.status_code >= 400:
            raise OAuthTokenError(f"{where} answered {response.status_code}: {response.text[:200]}")
        try:
            body: Any = response.json()
        except ValueError as exc:
            raise OAuthTokenError(f"{where} did not answer JSON") from exc
        token = body.get(config.token_field) if isinstance(body, dict) else None
        if not isinstance(token, str) or not token:
            raise OAuthTokenError(f"{where} answered without a {config.token_field!r} string")
        token_type = body.get(config.token_type_field) or config.default_token_type
        if not isinstance(token_type, str):
            token_type = config.default_token_type
        # "bearer" as some providers spell it is still a Bearer token
        token_type = "Bearer" if token_type.lower() == "bearer" else token_type
        expires_in = body.get(config.expires_in_field)
        now = self._clock()
        self._expires_at = now + float(expires_in) if isinstance(expires_in, int | float) else None
        rotated = body.get("refresh_token")
        if isinstance(rotated, str) and rotated:
            self._refresh_token = rotated
        self._header = f"{token_type} {token}"
        self.fetches += 1
        logger.info("MCP server %r: OAuth token fetched (%s)", self.server_name, config.grant_type)

    async def authorization(self, *, renew: bool = False, stale: str | None = None) -> str:
        """The ``Authorization`` value; fetched when missing, about to expire, or ``renew`` (after a 401).

        ``stale`` is the header that got the 401: when another request already replaced it, that
        newer token is used instead of fetching again.
        """
        async with self._lock():
            if renew and self._header == stale:
                self._header = None
            if not self._fresh():
                await self._fetch()
            assert self._header is not None
            return self._header

    async def async_auth_flow(self, request: httpx.Request) -> AsyncGenerator[httpx.Request, httpx.Response]:
        """Send the token; after a 401, fetch a new one and retry once."""
        header = await self.authorization()
        request.headers["Authorization"] = header
        response = yield request
        if response.status_code == 401:
            request.headers["Authorization"] = await self.authorization(renew=True, stale=header)
            yield request

    def sync_auth_flow(self, request: httpx.Request) -> Any:
        """Not supported: MCP clients are asynchronous."""
        raise RuntimeError("McpOAuth works with httpx.AsyncClient only")
