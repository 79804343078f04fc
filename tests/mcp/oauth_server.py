"""A streamable-HTTP MCP server behind OAuth on 127.0.0.1, with its own token endpoint.

``POST /token`` issues short tokens (``tok-1``, ``tok-2``, ...) for ``client_credentials``
(client ``deerflow`` / secret ``s3cret``) or ``refresh_token`` (the current refresh token;
each answer rotates it: ``rt-1`` -> ``rt-2`` ...). ``/mcp`` (the MCP endpoint) and
``/ping`` answer 401 without a live token. The test reads the counters and can revoke
every token to force a 401. Runs uvicorn in a background thread.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import uvicorn
from mcp.server.fastmcp import FastMCP
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse

__test__ = False

CLIENT_ID, CLIENT_SECRET = "deerflow", "s3cret"


class OAuthMcpServer:
    """The server and what it saw: ``issued`` tokens by grant, ``unauthorized`` answers, ``seen`` headers."""

    def __init__(self, expires_in: int = 3600) -> None:
        self.expires_in = expires_in
        self.lock = threading.Lock()
        self.live: set[str] = set()
        self.issued: list[str] = []  # grant type of every token issued
        self.refresh_tokens_used: list[str] = []
        self.current_refresh = "rt-1"
        self.unauthorized = 0
        self.seen: list[str] = []
        mcp = FastMCP("deerflow-oauth", host="127.0.0.1")

        @mcp.tool()
        def add(a: int, b: int) -> str:
            """Add two integers."""
            return str(a + b)

        app = mcp.streamable_http_app()
        app.add_route("/token", self._token, methods=["POST"])
        app.add_route("/token-broken", lambda request: JSONResponse({"nope": 1}), methods=["POST"])
        app.add_route("/ping", lambda request: PlainTextResponse("pong"), methods=["GET"])
        self.app = _RequireToken(app, self)
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def _token(self, request: Request) -> JSONResponse:
        form = await request.form()
        grant = form.get("grant_type")
        with self.lock:
            if grant == "client_credentials":
                if form.get("client_id") != CLIENT_ID or form.get("client_secret") != CLIENT_SECRET:
                    return JSONResponse({"error": "invalid_client"}, status_code=401)
                body: dict[str, Any] = {}
            elif grant == "refresh_token":
                used = str(form.get("refresh_token"))
                self.refresh_tokens_used.append(used)
                if used != self.current_refresh:
                    return JSONResponse({"error": "invalid_grant"}, status_code=400)
                self.current_refresh = f"rt-{int(used.split('-')[1]) + 1}"
                body = {"refresh_token": self.current_refresh}
            else:
                return JSONResponse({"error": "unsupported_grant_type"}, status_code=400)
            self.issued.append(str(grant))
            token = f"tok-{len(self.issued)}"
            self.live.add(token)
        return JSONResponse({"access_token": token, "token_type": "bearer", "expires_in": self.expires_in, **body})

    def revoke_all(self) -> None:
        """Every token issued so far stops working (the next request gets 401)."""
        with self.lock:
            self.live.clear()

    def __enter__(self) -> OAuthMcpServer:
        config = uvicorn.Config(self.app, host="127.0.0.1", port=0, log_level="warning", lifespan="on")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, daemon=True, name="oauth-mcp-server")
        self._thread.start()
        deadline = time.monotonic() + 60
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the OAuth MCP test server did not start")
            time.sleep(0.05)
        self.port = self._server.servers[0].sockets[0].getsockname()[1]
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._server is not None and self._thread is not None
        self._server.should_exit = True
        self._thread.join(30)


class _RequireToken:
    """ASGI middleware: ``/mcp`` and ``/ping`` need ``Authorization: Bearer <live token>``."""

    def __init__(self, app: Any, server: OAuthMcpServer) -> None:
        self.app, self.server = app, server

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and not scope["path"].startswith("/token"):
            header = dict(scope["headers"]).get(b"authorization", b"").decode()
            with self.server.lock:
                self.server.seen.append(header)
                ok = header.startswith("Bearer ") and header[len("Bearer "):] in self.server.live
                if not ok:
                    self.server.unauthorized += 1
            if not ok:
                await PlainTextResponse("unauthorized", status_code=401)(scope, receive, send)
                return
        await self.app(scope, receive, send)
