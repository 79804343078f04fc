"""OAuth tokens for SSE / HTTP MCP servers, as an ``httpx.Auth`` of the server's HTTP client.

``mcpServers.<name>.oauth`` names a token endpoint and a grant (``client_credentials`` or
``refresh_token``). :class:`McpOAuth` fetches a token before the first request, sends it
as ``Authorization: <token_type> <access_token>``, fetches a new one
``refresh_skew_seconds`` before the old one expires, and when the server still answers
401 it fetches a new token and retries that request once. A refresh token returned by the
endpoint replaces the configured one, so rotating refresh tokens keep working; with a
``state_dir`` it is also saved there (an owner-only file, written whole or not at all) and
used after a restart for as long as the configured ``refresh_token`` stays the one it replaced.

One instance serves discovery and every session of one server config; it works from any
event loop (its lock is per loop).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import time
import weakref
from collections.abc import AsyncGenerator, Callable
from pathlib import Path
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
                 clock: Callable[[], float] = time.monotonic, state_dir: Path | None = None) -> None:
        self.server_name = server_name
        self.config = config
        self._clock = clock
        self._refresh_token = config.refresh_token
        #: Where the rotated refresh token is kept across restarts (``None``: memory only).
        self.state_file = None if state_dir is None else state_dir / f"{self._key()}.json"
        self._loaded = state_dir is None
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

    def _key(self) -> str:
        ident = "\0".join([self.server_name, self.config.token_url, self.config.client_id or ""])
        return hashlib.sha256(ident.encode()).hexdigest()[:24]

    def _configured(self) -> str:
        return hashlib.sha256((self.config.refresh_token or "").encode()).hexdigest()

    def _load(self) -> None:
        """The saved rotated refresh token, if it replaced the refresh token configured now (off the loop)."""
        assert self.state_file is not None
        try:
            saved = json.loads(self.state_file.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return
        except (OSError, ValueError) as exc:
            logger.warning("MCP server %r: ignoring the saved OAuth state %s: %s", self.server_name,
                           self.state_file, exc)
            return
        if isinstance(saved, dict) and saved.get("configured") == self._configured() \
                and isinstance(saved.get("refresh_token"), str) and saved["refresh_token"]:
            self._refresh_token = saved["refresh_token"]

    def _save(self, refresh_token: str) -> None:
        """Write the rotated refresh token: owner-only, to a temporary name renamed into place."""
        assert self.state_file is not None
        self.state_file.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        tmp = self.state_file.with_name(f".{self.state_file.name}.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump({"server": self.server_name, "configured": self._configured(),
                           "refresh_token": refresh_token}, out)
            os.replace(tmp, self.state_file)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise

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
        if not self._loaded and config.grant_type == "refresh_token":
            await asyncio.to_thread(self._load)
        self._loaded = True
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
        if isinstance(rotated, str) and rotated and rotated != self._refresh_token:
            self._refresh_token = rotated
            if self.state_file is not None:
                try:
                    await asyncio.to_thread(self._save, rotated)
                except OSError as exc:  # the token works now; only a restart would miss it
                    logger.warning("MCP server %r: cannot save the rotated refresh token to %s: %s",
                                   self.server_name, self.state_file, exc)
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
