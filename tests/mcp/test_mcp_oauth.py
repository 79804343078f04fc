"""MCP OAuth against a real streamable-HTTP MCP server and token endpoint on 127.0.0.1."""

from __future__ import annotations

import json

import httpx
import pytest
from langchain_core.messages import ToolMessage

from deerflow_nb.config.extensions import McpOAuthConfig, McpServerConfig
from deerflow_nb.errors import ConfigError
from deerflow_nb.mcp.oauth import McpOAuth, OAuthTokenError
from tests.client.conftest import two_backend_client
from tests.mcp.oauth_server import CLIENT_ID, OAuthMcpServer


def _call(tool: str, **args) -> dict:
    return {"content": "", "tool_calls": [{"name": tool, "args": args}]}


def _entry(server: OAuthMcpServer, **oauth) -> dict:
    return {"type": "http", "url": f"{server.url}/mcp", "oauth": {
        "token_url": f"{server.url}/token", "client_id": CLIENT_ID, "client_secret": "$MCP_CLIENT_SECRET", **oauth}}


@pytest.mark.parametrize("kind", ["embedded", "server"])
def test_agent_gets_a_token_reuses_it_and_refreshes_once_on_401(kind, tmp_path, monkeypatch):
    monkeypatch.setenv("MCP_CLIENT_SECRET", "s3cret")  # resolved from the environment, written unresolved
    monkeypatch.chdir(tmp_path)  # where both clients keep extensions_config.json
    responses = [_call("add", a=2, b=3), "five", _call("add", a=4, b=4), "eight"]
    config = {"config_version": 1, "title": {"enabled": False}, "memory": {"enabled": False},
              "models": [{"name": "s", "use": "deerflow_nb.testing:ScriptedChatModel", "responses": responses}]}
    with OAuthMcpServer() as server, two_backend_client(kind, tmp_path, config) as agent:
        agent.update_mcp_config({"secured": _entry(server)})
        assert [t["name"] for t in agent.mcp.tools()] == ["add"] and agent.mcp.errors == {}
        thread = agent.thread()
        assert thread.chat("2+3?") == "five"
        assert server.issued == ["client_credentials"] and server.unauthorized == 0  # one token, discovery + call

        server.revoke_all()  # the server now answers 401 to that token
        assert thread.chat("4+4?") == "eight"
        assert [m.content for m in thread.messages if isinstance(m, ToolMessage)] == ["5", "8"]
        assert server.issued == ["client_credentials"] * 2 and server.unauthorized >= 1  # one refresh, retried
        assert server.seen[-1] == "Bearer tok-2"
        assert agent.get_mcp_config()["mcp_servers"]["secured"]["oauth"]["client_secret"] == "$MCP_CLIENT_SECRET"


def test_a_refused_token_request_is_reported_without_the_secret(make_agent, monkeypatch):
    monkeypatch.setenv("MCP_CLIENT_SECRET", "wrong-secret")
    with OAuthMcpServer() as server:
        agent = make_agent(persistence="memory")
        agent.update_mcp_config({"secured": _entry(server)})
        assert agent.mcp.tools() == []
        error = agent.mcp.errors["secured"]
        assert "OAuthTokenError" in error and "answered 401" in error and "wrong-secret" not in error
        assert server.unauthorized == 0  # nothing was sent to the MCP endpoint without a token


@pytest.mark.asyncio
async def test_refresh_before_expiry_and_rotating_refresh_tokens():
    now = [1000.0]
    with OAuthMcpServer(expires_in=120) as server:
        auth = McpOAuth("secured", McpOAuthConfig(token_url=f"{server.url}/token", grant_type="refresh_token",
                                                  refresh_token="rt-1", refresh_skew_seconds=60),
                        clock=lambda: now[0])
        async with httpx.AsyncClient(auth=auth) as client:
            assert (await client.get(f"{server.url}/ping")).text == "pong"
            now[0] += 30  # 90 s left: more than the skew, the token is reused
            assert (await client.get(f"{server.url}/ping")).status_code == 200
            assert auth.fetches == 1
            now[0] += 31  # 59 s left: within the skew, a new token before the request is sent
            assert (await client.get(f"{server.url}/ping")).status_code == 200
        assert auth.fetches == 2 and server.unauthorized == 0
        assert server.refresh_tokens_used == ["rt-1", "rt-2"]  # the rotated refresh token was used
        assert server.seen == ["Bearer tok-1", "Bearer tok-1", "Bearer tok-2"]


@pytest.mark.asyncio
async def test_a_rotated_refresh_token_is_saved_and_used_after_a_restart(tmp_path):
    state = tmp_path / "mcp" / "oauth"
    with OAuthMcpServer() as server:
        config = McpOAuthConfig(token_url=f"{server.url}/token", grant_type="refresh_token", refresh_token="rt-1")
        first = McpOAuth("secured", config, state_dir=state)
        await first.authorization()  # rt-1 is spent: the endpoint answered rt-2
        [saved] = state.iterdir()
        assert saved == first.state_file and saved.stat().st_mode & 0o777 == 0o600
        assert "rt-2" in saved.read_text() and "rt-1" not in saved.read_text() and "tok-" not in saved.read_text()
        # a restart (a new holder, the same config): the saved token, not the spent configured one
        again = McpOAuth("secured", config, state_dir=state)
        assert (await again.authorization()) == "Bearer tok-2"
        assert server.refresh_tokens_used == ["rt-1", "rt-2"]
        # without a state dir a restart would send the spent token and be refused
        with pytest.raises(OAuthTokenError, match="answered 400"):
            await McpOAuth("secured", config).authorization()
        # a newly configured refresh token wins over what was saved for the old one
        fresh = McpOAuth("secured", config.model_copy(update={"refresh_token": "rt-9"}), state_dir=state)
        with pytest.raises(OAuthTokenError, match="answered 400"):
            await fresh.authorization()
        assert server.refresh_tokens_used[-1] == "rt-9"
        assert [p.name for p in state.iterdir()] == [saved.name]  # no temporary file left behind


@pytest.mark.asyncio
async def test_token_endpoint_answers_that_are_not_tokens_raise():
    with OAuthMcpServer() as server:
        auth = McpOAuth("s", McpOAuthConfig(token_url=f"{server.url}/token-broken"))
        with pytest.raises(OAuthTokenError, match="without a 'access_token' string"):
            await auth.authorization()
        unreachable = McpOAuth("s", McpOAuthConfig(token_url=f"{server.url}/token-missing"))
        with pytest.raises(OAuthTokenError, match="answered 404"):
            await unreachable.authorization()


def test_oauth_config_is_validated():
    with pytest.raises(ValueError, match="refresh_token is required"):
        McpOAuthConfig(token_url="http://t", grant_type="refresh_token")
    server = McpServerConfig.model_validate({"type": "sse", "url": "http://x", "oauth": {"token_url": "http://t"}})
    assert server.oauth is not None and server.oauth.refresh_skew_seconds == 60


def test_invalid_oauth_config_is_refused_naming_the_field(make_agent):
    agent = make_agent(persistence="memory")
    with pytest.raises(ConfigError, match=r"mcp_servers\.s\.oauth\.grant_type"):
        agent.update_mcp_config({"s": {"type": "http", "url": "http://x", "oauth": {
            "token_url": "http://t", "grant_type": "password"}}})
    assert json.loads(json.dumps(agent.get_mcp_config())) == {"mcp_servers": {}}
