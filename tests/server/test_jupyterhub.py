"""A real JupyterHub on loopback (dummy authenticator, local-process spawner) with two users.

Each user's single-user server serves the extension; both share one DeerFlow home
(one SQLite database), and neither user can read the other's threads.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from .conftest import write_config
from .e2e import REPO, free_port

ADMIN_TOKEN = "hub-admin-" + os.urandom(8).hex()
MSG = {"messages": [{"role": "user", "content": "hello"}]}


def _hub_config(root: Path, port: int, singleuser_dir: Path) -> str:
    bindir = Path(sys.executable).parent
    env = {"JUPYTER_CONFIG_DIR": str(singleuser_dir), "JUPYTER_CONFIG_PATH": str(singleuser_dir),
           "DEER_FLOW_HOME": str(root / "deerflow-home"), "PYTHONPATH": str(REPO)}
    return f"""
c.JupyterHub.ip = "127.0.0.1"
c.JupyterHub.port = {port}
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = {free_port()}
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{free_port()}"
c.JupyterHub.db_url = "sqlite:///{root / 'hub.sqlite'}"
c.JupyterHub.cookie_secret_file = "{root / 'cookie_secret'}"
c.JupyterHub.pid_file = "{root / 'hub.pid'}"
c.JupyterHub.cleanup_servers = True
c.JupyterHub.authenticator_class = "dummy"
c.JupyterHub.spawner_class = "simple"
c.SimpleLocalProcessSpawner.home_dir_template = "{root}/homes/{{username}}"
c.Spawner.cmd = ["{bindir / 'jupyterhub-singleuser'}"]
c.Spawner.environment = {json.dumps(env)}
c.Spawner.start_timeout = 180
c.Spawner.http_timeout = 180
c.Spawner.default_url = "/tree"
c.Authenticator.admin_users = {{"carol"}}
c.JupyterHub.services = [{{"name": "tester", "api_token": "{ADMIN_TOKEN}"}}]
c.JupyterHub.load_roles = [{{"name": "tester", "services": ["tester"],
    "scopes": ["admin:users", "admin:servers", "tokens", "access:servers", "read:users"]}}]
"""


@pytest.fixture
def hub(tmp_path):
    if shutil.which("configurable-http-proxy") is None:
        pytest.skip("JupyterHub test skipped: configurable-http-proxy is not installed "
                    "(npm install -g configurable-http-proxy; see .ci/server-setup.sh)")
    singleuser = tmp_path / "singleuser-config"
    singleuser.mkdir()
    config = write_config(tmp_path / "config.yaml", ["hi from the hub"] * 10)
    (singleuser / "jupyter_server_config.json").write_text(json.dumps({
        "ServerApp": {"jpserver_extensions": {"jupyter_ext": True}, "allow_root": True},
        "DeerFlowExtension": {"config_path": str(config)}}))
    port = free_port()
    (tmp_path / "jupyterhub_config.py").write_text(_hub_config(tmp_path, port, singleuser))
    log = (tmp_path / "hub.log").open("wb")
    proc = subprocess.Popen([sys.executable, "-m", "jupyterhub", "-f", str(tmp_path / "jupyterhub_config.py")],
                            cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        _wait(lambda: httpx.get(f"{base}/hub/api/", timeout=2).status_code == 200, proc, tmp_path, 120)
        yield base, tmp_path
    finally:
        proc.terminate()
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def _wait(check, proc, root, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError("jupyterhub exited:\n" + (root / "hub.log").read_text()[-4000:])
        try:
            if check():
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise AssertionError("timed out:\n" + (root / "hub.log").read_text()[-4000:])


def _start_user(base: str, name: str) -> str:
    admin = {"Authorization": f"token {ADMIN_TOKEN}"}
    created = httpx.post(f"{base}/hub/api/users/{name}", headers=admin, timeout=30)
    if created.status_code != 409:  # admin_users exist from the start
        created.raise_for_status()
    httpx.post(f"{base}/hub/api/users/{name}/server", headers=admin, timeout=60).raise_for_status()
    token = httpx.post(f"{base}/hub/api/users/{name}/tokens", headers=admin, json={"note": "test"},
                       timeout=30).json()["token"]
    return token


def test_two_hub_users_get_isolated_deerflow_servers(hub):
    base, root = hub
    tokens = {name: _start_user(base, name) for name in ("alice", "bob")}

    def api(user: str, path: str) -> str:
        return f"{base}/user/{user}/deerflow/api{path}"

    def headers(user: str) -> dict[str, str]:
        return {"Authorization": f"token {tokens[user]}"}

    for user in tokens:
        _wait(lambda u=user: httpx.get(api(u, "/health"), headers=headers(u), timeout=5).status_code == 200,
              None, root, 200)
        assert httpx.get(api(user, "/health"), headers=headers(user)).json()["user_id"] == user

    thread = httpx.post(api("alice", "/threads"), headers=headers("alice"), json={}).json()
    tid = thread["thread_id"]
    state = httpx.post(api("alice", f"/threads/{tid}/runs/wait"), headers=headers("alice"),
                       json={"assistant_id": "lead_agent", "input": MSG}, timeout=120).json()
    assert state["messages"][-1]["content"] == "hi from the hub"

    # bob's own server shares the database but not alice's data
    assert httpx.get(api("bob", f"/threads/{tid}"), headers=headers("bob")).status_code == 404
    assert httpx.post(api("bob", "/threads/search"), headers=headers("bob"), json={}).json() == []
    # and the hub keeps bob out of alice's server altogether
    assert httpx.get(api("alice", f"/threads/{tid}"), headers=headers("bob")).status_code in {403, 404}
    assert (root / "deerflow-home/users/alice/threads" / tid).is_dir()


def test_server_wide_routes_need_a_hub_admin(hub):
    """PUT /mcp/config and POST /mcp/reload: a Hub admin may, a plain Hub user gets 403 and nothing changes;
    per-user routes (a skill's enabled state) stay open to everyone."""
    base, root = hub
    tokens = {name: _start_user(base, name) for name in ("carol", "bob")}  # carol is a Hub admin

    def call(user: str, method: str, path: str, **kwargs) -> httpx.Response:
        return httpx.request(method, f"{base}/user/{user}/deerflow/api{path}",
                             headers={"Authorization": f"token {tokens[user]}"}, timeout=60, **kwargs)

    for user in tokens:
        _wait(lambda u=user: call(u, "GET", "/health").status_code == 200, None, root, 200)
    servers = {"notes": {"type": "stdio", "command": "/nonexistent/mcp", "enabled": False}}
    refused = call("bob", "PUT", "/mcp/config", json={"mcp_servers": servers})
    assert refused.status_code == 403
    body = refused.json()
    assert body["error_type"] == "AdminRequiredError"
    assert "only an admin may do it" in body["message"] and "'bob' is not a JupyterHub admin" in body["message"]
    assert call("bob", "GET", "/mcp/config").json()["mcp_servers"] == {}
    assert call("bob", "POST", "/mcp/reload", json={}).status_code == 403

    assert call("carol", "PUT", "/mcp/config", json={"mcp_servers": servers}).status_code == 200
    assert call("carol", "GET", "/mcp/config").json()["mcp_servers"]["notes"]["enabled"] is False
    assert call("carol", "POST", "/mcp/reload", json={}).json() == {"success": True}

    skill = call("bob", "GET", "/skills").json()["skills"][0]["name"]  # per user: no admin needed
    assert call("bob", "PUT", f"/skills/{skill}", json={"enabled": False}).json()["enabled"] is False
